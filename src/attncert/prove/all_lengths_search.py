"""Proofs of the closed-form inequalities, found (untrusted; issue 23): the point x₁ from
which the kernel's tail rules hold, and the first length where an inequality fails. The
kernel (:mod:`attncert.kernel.all_lengths.closed_form`) checks what is found here with its own rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from flint import arb, ctx, fmpq, fmpq_poly

from attncert.kernel.all_lengths.closed_form import (
    Inequality,
    ProofFailure,
    RatFn,
    TailProof,
    check_condition,
    holds_at,
    tail_conditions,
)

# ----- proofs of the inequalities -------------------------------------------------------------------


def _largest_real_root(r: RatFn) -> float:
    best = -math.inf
    for poly in (r.p, r.q):
        if poly.degree() <= 0:
            continue
        for z, _ in fmpq_poly(poly).complex_roots():
            if abs(float(z.imag.mid())) < 1e-9 * (1 + abs(float(z.real.mid()))):
                best = max(best, float(z.real.mid()))
    return best


def _ell(x1: int) -> fmpq:
    """A short rational ≤ log x₁."""
    with ctx.workprec(64):
        lo = arb(x1).log().lower()
    v = math.floor(float(lo) * 2**20) / 2**20
    return fmpq(int(v * 2**20), 2**20) if v > 0 else fmpq(0)


@dataclass(frozen=True)
class TailSearch:
    proof: TailProof | None
    reason: str = ""


def find_tail(ineq: Inequality, x_from: int) -> TailSearch:
    """x₁ ≥ x_from with every tail condition checked by the kernel's own rule (R2/R3)."""
    x1 = max(x_from, ineq.start, 1)
    for _ in range(40):
        ell = _ell(x1)
        conds = tail_conditions(ineq)
        bad = None
        for c in conds:
            try:
                check_condition(c, fmpq(x1), ell)
            except ProofFailure as err:
                bad = (c, err)
                break
        if bad is None:
            return TailSearch(TailProof(x1, ell, tuple(conds)))
        c, err = bad
        roots = [
            _largest_real_root(c.u),
            _largest_real_root(c.v),
            _largest_real_root(c.u + c.v.scale(ell)),
        ]
        r = max(roots)
        if r == -math.inf or r < x1:
            return TailSearch(None, f"{c.what}: {err.reason} (it fails as x → ∞)")
        x1 = max(x1 + 1, math.floor(r) + 1)
        if x1 > 10**7:
            break
    return TailSearch(None, "no point x₁ found for the tail rules")


@dataclass(frozen=True)
class BoundFailure:
    """An inequality that does not hold for every length: the first failing value of its
    variable (None if only the tail could not be proved) and why."""

    id: str
    what: str
    var: str
    first: int | None
    value: float | None
    bound: str
    reason: str

    def line(self) -> str:
        at = (
            f" first fails at {self.var} = {self.first} (bound {self.value:.4g} > {self.bound})"
            if self.first is not None
            else ""
        )
        return f"{self.id} ({self.what}):{at} {self.reason}".strip()


def holds(ineq: Inequality, x: int) -> bool:
    try:
        return holds_at(ineq, x)
    except (ProofFailure, ZeroDivisionError):
        return False


def first_failure(ineq: Inequality, lo: int, hi: int) -> int | None:
    return next((x for x in range(lo, hi + 1) if not holds(ineq, x)), None)


FAR = 2**40


def first_holding(ineq: Inequality, x1: int) -> int | None:
    """The least x > x1 where the bound holds, by bisection — valid because every atom is
    non-increasing from x1 on (the tail rules hold there), so once it holds it keeps
    holding; None if it still fails at :data:`FAR`."""
    if not holds(ineq, FAR):
        return None
    lo, hi = x1, FAR  # fails at lo, holds at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(ineq, mid):
            hi = mid
        else:
            lo = mid
    return hi


def scan_far(ineq: Inequality, lo: int) -> int | None:
    """A failing point beyond ``lo`` when the tail cannot be proved (doubling)."""
    x = max(lo, 2)
    while x < 10**12:
        if not holds(ineq, x):
            return x
        x *= 2
    return None
