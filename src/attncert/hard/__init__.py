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

Names are imported lazily, so that importing the trusted checker
(:mod:`attncert.hard.checker`) never loads the search code.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Certificate": "attncert.hard.certificate",
    "load_certificate": "attncert.hard.certificate",
    "save_certificate": "attncert.hard.certificate",
    "CertificationFailed": "attncert.hard.pipeline",
    "Options": "attncert.hard.pipeline",
    "certify": "attncert.hard.pipeline",
    "CheckReport": "attncert.hard.checker",
    "check": "attncert.hard.checker",
    "Restriction": "attncert.hard.restriction",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'attncert.hard' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
