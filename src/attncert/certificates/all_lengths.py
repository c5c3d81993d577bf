"""The all-length agreement certificate: format, reading and writing (issue 23).

A certificate says, for one model (by content hash) and one formula φ: the model's
designated coordinate equals [φ at i] at every position i of every string of every
length n ≥ 1 — for n ≥ ``N0`` by the trusted checker :mod:`attncert.kernel.all_lengths`,
for n < ``N0`` by the bounded prover (:mod:`attncert.prove`, z3 per length), whose result
is recorded under ``bounded``.

Versioned JSON (``format: "attncert-all-lengths-certificate"``, ``version: 1``)::

    {
      "format": "attncert-all-lengths-certificate", "version": 1,
      "formula": "prev Q_1",                 # the claim
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
0-based; ``formula`` in the text syntax of :mod:`attncert.logic`):

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
P(x)·exp(−(a + b·log x))·(1 − exp(−Ψ))^(−k) (:mod:`attncert.kernel.closed_form`). The
checker re-derives every inequality from the model's weights and compares it with the
stored one field by field, then checks the proof (rules R1–R5).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attncert.errors import SpecError
from attncert.io import check_header, read_json, write_atomic
from attncert.io import require as _field

FORMAT = "attncert-all-lengths-certificate"
VERSION = 1


@dataclass(frozen=True)
class AllLengthsCertificate:
    formula: str
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

    def to_dict(self) -> dict[str, Any]:
        model: dict[str, Any] = {"sha256": self.model_sha256, "name": self.model_name}
        if self.model_source is not None:
            model["source"] = self.model_source
        return {
            "format": FORMAT,
            "version": VERSION,
            "formula": self.formula,
            "construction": self.construction,
            "regime": self.regime,
            "model": model,
            "coordinate": self.coordinate,
            "N0": self.n0,
            "gadgets": list(self.gadgets),
            "inequalities": list(self.inequalities),
            "bounded": self.bounded,
            "trace": self.trace,
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        write_atomic(Path(path), json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n")


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
    return AllLengthsCertificate(
        formula=_field(d, "formula", where, str),
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
