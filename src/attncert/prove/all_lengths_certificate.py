"""The all-length certificate on the prover's side: its writer, and formulas as JSON trees
(the format, its values and its trusted reader are :mod:`attncert.certificates.all_lengths`).

Writing is untrusted: ``attncert check`` re-reads the file, :func:`certificate_from_dict`
re-parses every formula tree and compares it with ``formula_text``, and the kernel
(:mod:`attncert.kernel.all_lengths.checker`) re-derives every gadget and inequality from
what it reads — a wrong writer yields a file that is rejected, never a verdict about a file
nobody checked.

    >>> from attncert.logic.parser import parse
    >>> tree = formula_to_json(parse("Q_1 S #<[Q_0] >= 2"))
    >>> formula_from_json(tree) == parse("Q_1 S #<[Q_0] >= 2")
    True
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from attncert.certificates.all_lengths import (
    _BINARY,
    _NULLARY,
    _UNARY,
    FORMAT,
    VERSION,
    AllLengthsCertificate,
    formula_from_json,
)
from attncert.errors import SpecError
from attncert.io import write_atomic
from attncert.logic import syntax as s

__all__ = [
    "certificate_to_dict",
    "certificate_to_json",
    "formula_from_json",
    "formula_to_json",
    "save_certificate",
    "term_to_json",
]


def formula_to_json(f: s.Formula) -> list[Any]:
    """A formula as a JSON tree: ``["since", ["atom", "a"], ["atom", "b"]]``, counts as
    ``["left"|"right", F]``, comparisons as ``["compare", [[[k, T], ...], c], op, [...]]``."""
    for name, cls in _NULLARY.items():
        if type(f) is cls:
            return [name]
    if isinstance(f, s.Atom):
        return ["atom", f.symbol]
    for name, cls in _UNARY.items():
        if type(f) is cls:
            return [name, formula_to_json(f.arg)]
    for name, cls in _BINARY.items():
        if type(f) is cls:
            return [name, formula_to_json(f.left), formula_to_json(f.right)]
    if isinstance(f, s.PosPred):
        return ["pospred", f.pred]
    if isinstance(f, s.CountPred):
        return ["countpred", f.pred, term_to_json(f.term)]
    if isinstance(f, s.Compare):
        return ["compare", _lin_to_json(f.left), f.op.value, _lin_to_json(f.right)]
    raise SpecError(f"not a formula: {f!r}")


def term_to_json(t: s.CountTerm) -> list[Any]:
    """A count term #←[φ] / #→[φ] as ``["left"|"right", F]``."""
    return ["left" if isinstance(t, s.CountLeft) else "right", formula_to_json(t.arg)]


def _lin_to_json(lin: s.Linear) -> list[Any]:
    return [[[k, term_to_json(t)] for k, t in lin.terms], lin.const]


def certificate_to_dict(cert: AllLengthsCertificate) -> dict[str, Any]:
    """``cert`` as the JSON object :func:`attncert.certificates.all_lengths.certificate_from_dict`
    reads (``formula_text`` printed from the tree)."""
    model: dict[str, Any] = {"sha256": cert.model_sha256, "name": cert.model_name}
    if cert.model_source is not None:
        model["source"] = cert.model_source
    return {
        "format": FORMAT,
        "version": VERSION,
        "formula": cert.formula,
        "formula_text": cert.formula_text,
        "construction": cert.construction,
        "regime": cert.regime,
        "model": model,
        "coordinate": cert.coordinate,
        "N0": cert.n0,
        "gadgets": list(cert.gadgets),
        "inequalities": list(cert.inequalities),
        "bounded": cert.bounded,
        "trace": cert.trace,
    }


def certificate_to_json(cert: AllLengthsCertificate) -> str:
    """The certificate file's text."""
    return json.dumps(certificate_to_dict(cert), indent=1, ensure_ascii=False) + "\n"


def save_certificate(cert: AllLengthsCertificate, path: str | os.PathLike[str]) -> Path:
    """Write ``cert`` to ``path`` atomically; returns the path."""
    return write_atomic(Path(path), certificate_to_json(cert))
