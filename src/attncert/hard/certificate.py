"""The restriction certificate on the search side: its format re-exported from
:mod:`attncert.certificates.hard` (values and the trusted reader), and its writer.

Writing is untrusted: ``attncert check`` re-reads the file and the kernel re-derives every
claim from what it reads, so a wrong writer yields a file that is rejected (or a different
file that is checked as it is), never a verdict about a file nobody checked. The writer
keeps the version an older writer would have written when the newer fields are absent, so
that unchanged files stay byte-identical.

    >>> from attncert.hard.pipeline import certify
    >>> from attncert.model import zoo_model
    >>> cert = certify(zoo_model("anbn"), n=8, language="anbn")
    >>> certificate_from_dict(certificate_to_dict(cert)) == cert
    True
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
from attncert.io import write_atomic

__all__ = [
    "FORMAT",
    "VERSION",
    "VERSIONS",
    "Certificate",
    "FixedDependence",
    "Misclassified",
    "Witness",
    "certificate_from_dict",
    "certificate_to_dict",
    "certificate_to_json",
    "load_certificate",
    "resolve_model",
    "save_certificate",
]


def certificate_to_dict(cert: Certificate) -> dict[str, Any]:
    """``cert`` as the JSON object :func:`certificate_from_dict` reads (positions 1-based)."""
    mis = None
    if cert.misclassified is not None:
        m = cert.misclassified
        mis = {
            "strings": list(m.strings),
            "membership": list(m.membership),
            "decisions": list(m.decisions),
        }
    if cert.witness is not None or cert.fixed_dependence:
        version = VERSION
    else:  # what an older writer wrote: unchanged files stay byte-identical
        version = 2 if cert.model_source is not None else 1
    extra: dict[str, Any] = {}
    if cert.witness is not None:
        extra["witness"] = {
            "strings": list(cert.witness.strings),
            "decisions": list(cert.witness.decisions),
        }
    if cert.fixed_dependence:
        extra["fixed_dependence"] = [
            {"position": f.position + 1, "symbol": f.symbol, "decision": f.decision}
            for f in cert.fixed_dependence
        ]
    return {
        "format": FORMAT,
        "version": version,
        "model": {
            "sha256": cert.model_sha256,
            "name": cert.model_name,
            **({} if cert.model_source is None else {"source": cert.model_source}),
        },
        "n": cert.n,
        "alphabet": list(cert.alphabet),
        "language": cert.language,
        "max_deps": cert.max_deps,
        "free_symbols": list(cert.restrictions[0].symbols) if cert.restrictions else [],
        "restrictions": [str(r) for r in cert.restrictions],
        "dependency_sets": [[[u + 1 for u in s] for s in layer] for layer in cert.dependency_sets],
        **(
            {"stages": [{"stage1": str(a), "stage2": str(b)} for a, b in cert.stages]}
            if cert.stages
            else {}
        ),
        "output": {
            "position": cert.output_position,
            "dependency_set": [u + 1 for u in cert.output_dependency],
        },
        "misclassified": mis,
        **extra,
        "note": cert.note,
        "trace": cert.trace,
    }


def certificate_to_json(cert: Certificate) -> str:
    """The certificate file's text."""
    return json.dumps(certificate_to_dict(cert), indent=1) + "\n"


def save_certificate(cert: Certificate, path: str | os.PathLike[str]) -> Path:
    """Write ``cert`` to ``path`` atomically; returns the path."""
    return write_atomic(path, certificate_to_json(cert))
