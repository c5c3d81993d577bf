"""The all-length agreement certificate: its format, as values, and its reader (trusted;
issue 23). The writer, with :func:`formula_to_json`, is
:mod:`attncert.prove.all_lengths_certificate`, on the prover's side.

A certificate says, for one model (by content hash) and one formula φ: the model's
designated coordinate equals [φ at i] at every position i of every string of every
length n ≥ 1 — for n ≥ ``N0`` by the trusted checker :mod:`attncert.kernel.all_lengths.checker`,
for n < ``N0`` by the bounded prover (:mod:`attncert.prove`, z3 per length), whose result
is recorded under ``bounded``.

Versioned JSON (``format: "attncert-all-lengths-certificate"``, ``version: 1``)::

    {
      "format": "attncert-all-lengths-certificate", "version": 1,
      "formula": ["prev", ["atom", "1"]],    # the claim, as a tree (formula_from_json)
      "formula_text": "prev Q_1",           # the same in the text syntax (checked)
      "construction": "compiled",            # or "proposition11"
      "regime": "temperature",               # the compiler's regime (informative)
      "model": {"sha256": ..., "name": ..., "source": {"zoo"|"path"|"embedded": ...}},
      "coordinate": 2,                       # the readout coordinate holding φ
      "N0": 2,                               # the kernel's part starts here
      "gadgets": [ {...}, ... ],             # the construction, node by node
      "inequalities": [ {...}, ... ],        # every n-dependent bound, with its proof
      "bounded": {"max_len": 1, "verdict": "proved", ...} | null,
      "trace": {...}                         # untrusted: timings, how N0 was found
    }

**Gadgets** (``kind`` and coordinates; every coordinate index is 0-based, layers
0-based; ``formula`` as a JSON tree — :func:`formula_from_json`, so that the checker needs
no parser — and ``term`` likewise, e.g. ``["left", ["atom", "1"]]`` for #←[Q_1]):

* ``bool`` — ``coord`` = [``formula``] computed by the FFN of ``layer`` from the exact
  Booleans ``inputs`` (¬, ∧, ∨, the guard ψ ∨ ¬φ, the flag [n = 1], = / ≠ of two
  thresholds);
* ``prev-parity`` — ◁φ / ▷φ with bounded encodings (Thm 12a, 13c): ``heads`` [even,
  odd] of ``layer`` write ``raws``; ``value`` holds φ; ``parity`` = (−1)^i, ``tie`` the
  tie-breaking encoding; the FFN rounds into ``coord``; ``budget`` the error each head
  may make;
* ``prev-shift`` — ◁φ / ▷φ with unbounded encodings (Thm 12b, 13d): one ``head`` →
  ``raw``;
* ``since-tie`` / ``since-shift`` — φ S ψ / φ U ψ (Thm 15, 16): ``guard`` holds ψ ∨ ¬φ,
  ``value`` holds ψ, ``tie`` the tie-breaking encoding (bounded only);
* ``mean`` — a uniform head of ``layer`` writing the exact mean of ``value`` into
  ``coord``;
* ``lookup``, ``count``, ``countpred``, ``threshold-sign``, ``threshold-clamp`` — the
  counting construction (Thm 20, 21); ``proposition11`` — Proposition 11's marks.

**Inequalities** — one per head and case, in the order the checker derives them::

    {"id": "g1:L0H0", "gadget": 1, "head": [0, 0], "what": "rows whose target ...",
     "var": "n", "start": 2, "bound": "1/4",
     "atoms": [{"P": RATFN, "Phi": {"a": RATFN, "b": RATFN}, "k": 1, "Psi": {...}}, ...],
     "text": "…", "proof": {"x1": 2, "log_lower": "0", "conditions": [...]}}

A RATFN is ``[[c0, c1, ...], [d0, d1, ...]]`` (numerator and denominator coefficients,
low to high, exact rationals as strings "p/q"), in lowest terms with a monic denominator; an atom is
P(x)·exp(−(a + b·log x))·(1 − exp(−Ψ))^(−k) (:mod:`attncert.kernel.all_lengths.closed_form`). The
checker re-derives every inequality from the model's weights and compares it with the
stored one field by field, then checks the proof (rules R1–R5).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attncert.errors import SpecError
from attncert.jsonread import check_header, read_json
from attncert.jsonread import require as _field
from attncert.logic import syntax as s

FORMAT = "attncert-all-lengths-certificate"
VERSION = 1


@dataclass(frozen=True)
class AllLengthsCertificate:
    formula: Any  # the JSON tree (formula_from_json reads it)
    construction: str
    regime: str | None
    model_sha256: str
    model_name: str
    coordinate: int
    n0: int
    gadgets: tuple[dict[str, Any], ...]
    inequalities: tuple[dict[str, Any], ...]
    bounded: dict[str, Any] | None
    model_source: dict[str, Any] | None = None
    trace: dict[str, Any] = field(default_factory=dict)

    @property
    def claim(self) -> s.Formula:
        return formula_from_json(self.formula, "formula")

    @property
    def formula_text(self) -> str:
        return s.to_text(self.claim)


def certificate_from_dict(d: Any, where: str = "certificate") -> AllLengthsCertificate:
    if not isinstance(d, dict):
        raise SpecError("not a JSON object", where=where)
    check_header(d, where, FORMAT, (VERSION,))
    model = _field(d, "model", where, dict)
    n0 = _field(d, "N0", where, int)
    if isinstance(n0, bool) or n0 < 1:
        raise SpecError(f"N0 = {n0!r}", where=f"{where}: N0", expected="an integer ≥ 1")
    coord = _field(d, "coordinate", where, int)
    gadgets = _field(d, "gadgets", where, list)
    ineqs = _field(d, "inequalities", where, list)
    for k, g in enumerate(gadgets):
        if not isinstance(g, dict) or not isinstance(g.get("kind"), str):
            raise SpecError("not a gadget", where=f"{where}: gadgets[{k}]", expected="{kind, ...}")
    for k, q in enumerate(ineqs):
        if not isinstance(q, dict):
            raise SpecError("not an inequality", where=f"{where}: inequalities[{k}]")
    bounded = d.get("bounded")
    if bounded is not None and not isinstance(bounded, dict):
        raise SpecError("bounded", where=f"{where}: bounded", expected="an object or null")
    regime = d.get("regime")
    tree = _field(d, "formula", where, list)
    text = s.to_text(formula_from_json(tree, f"{where}: formula"))
    if d.get("formula_text") != text:
        raise SpecError(
            f"formula_text {d.get('formula_text')!r} is not the formula tree {text!r}",
            where=f"{where}: formula_text",
        )
    return AllLengthsCertificate(
        formula=tree,
        construction=_field(d, "construction", where, str),
        regime=regime if isinstance(regime, str) else None,
        model_sha256=_field(model, "sha256", f"{where}: model", str),
        model_name=str(model.get("name", "")),
        coordinate=coord,
        n0=n0,
        gadgets=tuple(gadgets),
        inequalities=tuple(ineqs),
        bounded=bounded,
        model_source=model.get("source") if isinstance(model.get("source"), dict) else None,
        trace=d.get("trace") if isinstance(d.get("trace"), dict) else {},
    )


def load_certificate(path: str | os.PathLike[str]) -> AllLengthsCertificate:
    return certificate_from_dict(read_json(Path(path)), str(path))


def is_all_lengths(d: Any) -> bool:
    """Whether a parsed JSON document claims to be an all-length certificate."""
    return isinstance(d, dict) and d.get("format") == FORMAT


# ----- formulas as JSON trees (so that the checker needs no parser) ----------------------------

_NULLARY = {"top": s.Top, "bottom": s.Bottom, "first": s.First, "last": s.Last}
_UNARY = {"not": s.Not, "prev": s.Prev, "next": s.Next}
_BINARY = {"and": s.And, "or": s.Or, "since": s.Since, "until": s.Until}
MAX_DEPTH = 200


def formula_from_json(obj: Any, where: str = "formula", depth: int = 0) -> s.Formula:
    """A formula from its JSON tree (the inverse of
    :func:`attncert.prove.all_lengths_certificate.formula_to_json`); SpecError naming
    ``where`` on malformed input."""
    if depth > MAX_DEPTH:
        raise SpecError("formula nested too deeply", where=where)
    if not isinstance(obj, list) or not obj or not isinstance(obj[0], str):
        raise SpecError(f"{obj!r} is not a formula tree", where=where, expected='["op", ...]')
    op, args = obj[0], obj[1:]
    try:
        if op in _NULLARY and not args:
            return _NULLARY[op]()
        if op == "atom" and len(args) == 1 and isinstance(args[0], str):
            return s.Atom(args[0])
        if op in _UNARY and len(args) == 1:
            return _UNARY[op](formula_from_json(args[0], where, depth + 1))
        if op in _BINARY and len(args) == 2:
            a, b = (formula_from_json(x, where, depth + 1) for x in args)
            return _BINARY[op](a, b)
        if op == "pospred" and len(args) == 1 and isinstance(args[0], str):
            return s.PosPred(args[0])
        if op == "countpred" and len(args) == 2 and isinstance(args[0], str):
            return s.CountPred(args[0], term_from_json(args[1], where, depth + 1))
        if op == "compare" and len(args) == 3 and isinstance(args[1], str):
            return s.Compare(
                _lin_from_json(args[0], where, depth),
                s.CmpOp(args[1]),
                _lin_from_json(args[2], where, depth),
            )
    except (ValueError, TypeError) as err:
        raise SpecError(f"malformed {op!r} node: {err}", where=where) from None
    raise SpecError(f"unknown or malformed node {op!r}", where=where)


def term_from_json(obj: Any, where: str = "term", depth: int = 0) -> s.CountTerm:
    if not isinstance(obj, list) or len(obj) != 2 or obj[0] not in ("left", "right"):
        raise SpecError(f"{obj!r} is not a count term", where=where, expected='["left"|"right", F]')
    arg = formula_from_json(obj[1], where, depth + 1)
    return s.CountLeft(arg) if obj[0] == "left" else s.CountRight(arg)


def _lin_from_json(obj: Any, where: str, depth: int) -> s.Linear:
    if not (isinstance(obj, list) and len(obj) == 2 and isinstance(obj[0], list)):
        raise SpecError(f"{obj!r} is not a linear count expression", where=where)
    terms = []
    for item in obj[0]:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], int)):
            raise SpecError(f"{item!r} is not [coefficient, term]", where=where)
        terms.append((item[0], term_from_json(item[1], where, depth + 1)))
    if isinstance(obj[1], bool) or not isinstance(obj[1], int):
        raise SpecError(f"constant {obj[1]!r}", where=where, expected="an integer")
    return s.Linear(tuple(terms), obj[1])
