"""The restriction-certificate format — moved to :mod:`attncert.certificates.hard` (the
formats the search writes and the kernel reads live below both); re-exported here."""

from attncert.certificates.hard import (
    FORMAT,
    VERSION,
    VERSIONS,
    Certificate,
    FixedDependence,
    Misclassified,
    Witness,
    certificate_from_dict,
    load_certificate,
)
from attncert.certificates.locate import resolve_model

__all__ = [
    "FORMAT",
    "VERSION",
    "VERSIONS",
    "Certificate",
    "FixedDependence",
    "Misclassified",
    "Witness",
    "certificate_from_dict",
    "load_certificate",
    "resolve_model",
]
