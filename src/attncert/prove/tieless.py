"""Theorem 26's hypothesis by the decomposed prover: uniform–tieless for every length ≤ N.

An average-hard head is *tieless with gap γ(n)* when, on every input of length n, every
query's maximal score is attained by exactly one key and beats the others by ≥ γ(n)
(Yang et al. Def. 5); *uniform* when W_Qᵀ W_K = 0. :func:`tieless_gaps` decides this per
length over the layers' possible inputs (:mod:`attncert.prove.gaps`), which include every
string — so "tieless" and the reported gaps (lower bounds on the true minimal gaps) are
proved for all |Σ|ⁿ strings without enumerating them. Deeper layers are abstracted
through the model's claims (a compiled model's node record), which are proved along the
way by the same z3 queries as :func:`attncert.prove_agreement` (with ε = 0).

A reported tie is a tie of the abstraction; for small n,
:func:`attncert.compile.tieless.check_uniform_tieless` (exact enumeration) decides whether
a string realises it. Without claims only models whose deeper layers need no abstraction
are covered; the limit is stated in the result (``reason``).

    >>> from attncert.compile import compile_formula
    >>> from attncert.compile.tieless import to_average_hard
    >>> hard = to_average_hard(compile_formula("Q_a S Q_b", alphabet="abc"))
    >>> [r.tieless for r in tieless_gaps(hard, 5)]
    [True, True, True, True, True]
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from attncert.errors import UnsupportedError
from attncert.logic import syntax as s
from attncert.logic.parser import parse
from attncert.model.spec import Model
from attncert.prove.coordinate import designated_coordinate
from attncert.prove.gaps import PossibleTie, Unsupported
from attncert.prove.layer import LengthProver
from attncert.prove.structure import Plan, build_claims


@dataclass(frozen=True)
class TielessLength:
    n: int
    tieless: bool | None  # None: the abstraction could not decide
    min_gaps: dict[str, str | None]  # "layer.head" -> exact min gap (None: uniform / ≤ 1 key)
    seconds: float
    reason: str = ""

    @property
    def min_gap(self) -> float | None:
        gs = [float(_q(g)) for g in self.min_gaps.values() if g is not None]
        return min(gs) if gs else None


def _q(text: str):
    from fractions import Fraction

    return Fraction(text)


def tieless_gaps(
    model: Model,
    max_len: int,
    *,
    formula: s.Formula | str | None = None,
    coordinate: int | None = None,
    claims: Mapping[int, s.Formula | str] | None = None,
) -> list[TielessLength]:
    """Per length 1..``max_len``: is every non-uniform head tieless, and its minimal gap."""
    if not model.is_hard:
        raise UnsupportedError(
            "the tieless check needs a hard-attention model",
            expected="average-hard heads (attncert.compile.tieless.to_average_hard)",
        )
    if formula is None:
        formula = model.meta.get("formula") if model.meta else None
    skip_target = formula is None  # no claim about the output: only the attention rows
    if formula is None:
        formula = "true"
    f = parse(formula) if isinstance(formula, str) else formula
    if coordinate is None:
        coordinate = 0 if skip_target else designated_coordinate(model)
    coord = coordinate
    plan = Plan(model, build_claims(model, f, coord, claims))
    out = []
    for n in range(1, max_len + 1):
        t0 = time.perf_counter()
        lp = LengthProver(plan, n, strict_ties=True, skip_target=skip_target)
        reason = ""
        try:
            ok = lp.run()
            tieless: bool | None = True
            if not ok:
                tieless = None
                reason = lp.unknown or (
                    f"claim {lp.failure.claim.text!r} not proved at row {lp.failure.row}"
                    if lp.failure
                    else ""
                )
        except PossibleTie as err:
            tieless, reason = (
                False,
                f"layer {lp.head_stats[-1].layer} head {lp.head_stats[-1].head}, {err}",
            )
        except Unsupported as err:
            tieless, reason = None, f"unsupported: {err}"
        gaps = {
            f"{h.layer}.{h.head}": None if h.min_gap is None else str(h.min_gap)
            for h in lp.head_stats
        }
        out.append(TielessLength(n, tieless, gaps, time.perf_counter() - t0, reason))
    return out
