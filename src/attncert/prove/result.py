"""The proof object: per length a verdict, the method, timings and every query.

``ProofResult.to_dict()`` is the JSON the CLI prints with ``--json``; each query entry
names its ``.smt2`` file when ``smt2_dir`` was given, so anyone can re-run z3 on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

VERDICTS = ("proved", "counterexample", "unknown")


@dataclass(frozen=True)
class HeadSummary:
    """Gap certificate and error bound of one head at one length."""

    layer: int
    head: int
    method: str  # uniform | key-options | query-options | sign | exact (≤ 1 key)
    min_gap: str | None  # exact rational (lower bound over the layer's possible inputs)
    min_gap_float: float | None
    max_eps: float  # largest attention error bound over the rows (upper bound)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class LengthResult:
    n: int
    verdict: str  # proved | counterexample | unknown
    method: str  # decomposed | enumeration | none
    seconds: float
    queries: tuple[dict[str, Any], ...] = ()
    heads: tuple[HeadSummary, ...] = ()
    counterexample: dict[str, Any] | None = None
    reason: str = ""
    cross_check: str | None = None  # None | "agree" | "disagree: ..."

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "verdict": self.verdict,
            "method": self.method,
            "seconds": round(self.seconds, 4),
            "queries": list(self.queries),
            "heads": [h.to_dict() for h in self.heads],
            "counterexample": self.counterexample,
            "reason": self.reason,
            "cross_check": self.cross_check,
        }


@dataclass(frozen=True)
class ProofResult:
    formula: str
    model: str
    digest: str
    coordinate: int
    positions: str  # all | last
    max_len: int
    lengths: tuple[LengthResult, ...]
    seconds: float
    jobs: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def verdict(self) -> str:
        vs = {r.verdict for r in self.lengths}
        if "counterexample" in vs:
            return "counterexample"
        if vs == {"proved"}:
            return "proved"
        return "unknown"

    @property
    def exit_code(self) -> int:
        return {"proved": 0, "counterexample": 1, "unknown": 3}[self.verdict]

    @property
    def counterexample(self) -> dict[str, Any] | None:
        for r in self.lengths:
            if r.counterexample:
                return r.counterexample
        return None

    def by_n(self, n: int) -> LengthResult:
        return next(r for r in self.lengths if r.n == n)

    def min_gaps(self) -> dict[int, float | None]:
        """Smallest proved gap over all non-uniform heads, per length."""
        out = {}
        for r in self.lengths:
            gs = [h.min_gap_float for h in r.heads if h.min_gap_float is not None]
            out[r.n] = min(gs) if gs else None
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "formula": self.formula,
            "model": self.model,
            "digest": self.digest,
            "coordinate": self.coordinate,
            "positions": self.positions,
            "max_len": self.max_len,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 4),
            "jobs": self.jobs,
            "notes": list(self.notes),
            "counterexample": self.counterexample,
            "lengths": [r.to_dict() for r in self.lengths],
        }
