"""attncert — a proof companion for what transformers can and cannot compute.

See README.md. The public API is re-exported here lazily so that importing
``attncert`` stays cheap (no solver is imported until it is used).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Model": "attncert.model",
    "load_model": "attncert.model",
    "save_model": "attncert.model",
    "model_from_arrays": "attncert.model",
    "model_from_torch": "attncert.model",
    "model_to_arrays": "attncert.model",
    "model_from_dict": "attncert.model",
    "model_to_dict": "attncert.model",
    "forward": "attncert.model",
    "forward_exact": "attncert.model",
    "accepts": "attncert.model",
    "accepts_exact": "attncert.model",
    "forward_rigorous": "attncert.kernel.core.trace",
    "harden": "attncert.model",
    "zoo_model": "attncert.model",
    "zoo_names": "attncert.model",
    "random_model": "attncert.model",
    "language": "attncert.languages",
    "parse": "attncert.logic",
    "certify": "attncert.hard.pipeline",
    "check": "attncert.hard.checker",
    "save_certificate": "attncert.hard.certificate",
    "Certificate": "attncert.hard",
    "Restriction": "attncert.hard",
    "compile_formula": "attncert.compile",
    "prove_agreement": "attncert.prove",
    "verify": "attncert.soft.verify",
    "prove_all_lengths": "attncert.prove.all_lengths",
}
# sub-packages that are themselves the entry point (``attncert.sweep(...)`` is callable)
_MODULES = {"sweep": "attncert.sweep", "report": "attncert.report"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'attncert' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_MODULES])
