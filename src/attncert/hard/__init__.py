"""Hard attention (Hahn 2020, §5): restrictions, the exact layer collapse, SAT/MaxSAT
search for the Depth Reduction Lemma's restrictions, certificates and their
trusted checker.

From Python::

    >>> import attncert
    >>> model = attncert.zoo_model("ones_star")
    >>> cert = attncert.certify(model, n=12, language="ones_star")
    >>> attncert.check(cert, model).accepted
    True

From the command line: ``attncert certify [MODEL] --language parity --n 256 -o cert.json``
and ``attncert check cert.json MODEL``.
"""

from attncert.hard.certificate import Certificate, load_certificate
from attncert.hard.certify import CertificationFailed, Options, certify
from attncert.hard.checker import CheckReport, check
from attncert.hard.restriction import Restriction

__all__ = [
    "Certificate",
    "CertificationFailed",
    "CheckReport",
    "Options",
    "Restriction",
    "certify",
    "check",
    "load_certificate",
]
