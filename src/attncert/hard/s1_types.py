"""The data of :mod:`attncert.hard.s1_claims`: one S1 statement on an instance
(:class:`S1Claim`, plain data with ``to_dict`` for the certify trace and for re-statement by
a checker) and what the pipeline hands over after reducing a layer (:class:`LayerStages`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from attncert.hard.restriction import Restriction
from attncert.hard.tables import Table
from attncert.model.spec import Model

__all__ = ["LayerStages", "S1Claim", "compare", "fr"]


@dataclass(frozen=True)
class S1Claim:
    """One S1 statement (part) on the instance. ``status``: ``holds`` / ``fails`` (value
    against bound), ``instance`` (a definition instantiated: nothing to compare), ``not run``
    (the stage was skipped), ``undecided`` (not computable here, ``note`` says why).
    ``in_range`` is ``False`` when the statement's own hypotheses (k ≥ K, n ≥ N, δ ≤ 1) fail
    on this instance — the bound is still evaluated and shown."""

    statement: str  # "Lemma 6", "Definition 7", "eq. (6)"
    part: str  # "6.1", "(5)", "" …
    layer: int
    asserts: str
    value: str = ""
    bound: str = ""
    relation: str = ""  # "<=", ">=", "" (nothing to compare)
    status: str = "instance"
    in_range: bool | None = None
    note: str = ""

    @property
    def holds(self) -> bool | None:
        return {"holds": True, "fails": False}.get(self.status)

    def to_dict(self) -> dict[str, Any]:
        return {
            "statement": f"S1 {self.statement}",
            "part": self.part,
            "layer": self.layer,
            "asserts": self.asserts,
            "value": self.value,
            "bound": self.bound,
            "relation": self.relation,
            "status": self.status,
            "holds": self.holds,
            "in_range": self.in_range,
            "note": self.note,
        }


@dataclass(frozen=True, eq=False)
class LayerStages:
    """What the pipeline knows after reducing layer ``ell`` (see the module docstring)."""

    model: Model
    ell: int
    tables: tuple[Table, ...]  # layer ℓ−1 tables (before ρ₀ is applied)
    rho0: Restriction
    rho1: Restriction
    rho2: Restriction
    rho3: Restriction
    new_tables: tuple[Table, ...]  # layer ℓ tables under ρ₃
    k: int
    eta: Fraction
    q: Fraction
    delta: Fraction
    paper_stages: bool = True
    top: int = 8
    stage2: dict = field(default_factory=dict)
    stage3: dict = field(default_factory=dict)
    seed: int = 0


def fr(x: Fraction | int) -> str:
    return str(Fraction(x))


def compare(value: Fraction | int, bound: Fraction | int, rel: str) -> str:
    ok = value <= bound if rel == "<=" else value >= bound
    return "holds" if ok else "fails"


def measured(value: Fraction | int, rel: str, bound: Fraction | int) -> dict[str, str]:
    """An S1Claim's value, bound, relation and status, from one value and one bound (so
    the status is always the comparison of the two numbers printed)."""
    return {
        "value": fr(value),
        "bound": fr(bound),
        "relation": rel,
        "status": compare(value, bound, rel),
    }
