"""The constants Hahn's proof only says exist: k from (12), N from (11), and Theorem 1's chain.

For one application of the Depth Reduction Lemma (Lemma 4) with parameters
(c, H, C, C′, η, q, δ) — see :mod:`attncert.symbolic.params` — the proof needs an integer k with

- (12)  D ≤ A^{1/k}(1−B)^{1/k}(1−A)^{f/k},  f = E·k² (paper or supplement E);
- Stage 2 (supplement Lemma 17): 2^c c/k ≤ ηC;
- (11) feasible: (1 − 1/k²)^{2^c H} > exp(−δ²q(1−2η)C/3), so that (11) holds for large n;

and then an N from which (11) B(1−A)^{2^c H n} ≥ exp(−δ²q(1−2η)Cn/3) holds. Each is the
*smallest* such integer: for (12) because its right-hand side increases in k ≥ 2 (claim
``lll.rhs12-monotone``), for the others by monotonicity of the closed forms. Every decision is
made by :func:`attncert.symbolic.rigorous.decide` (arb balls / exact rationals).

Theorem 1 applies the lemma once per layer: c₀ = 1, C₀ = 1, c_{ℓ+1} = c_ℓ(2^{c_ℓ} k_ℓ H + 1),
with the free fraction shrinking C_ℓ → C_{ℓ+1} (``schedule``). These numbers explode; values
beyond ``EXACT_BITS`` are kept as rigorous bounds on log₂ (level 1) or log₂log₂ (level 2),
see :class:`Magnitude`.

>>> from attncert.symbolic.params import lll_params
>>> p = lll_params(c=1, H=2, C=1, C_prime="1/2")
>>> k = smallest_k_eq12(p)
>>> eq12_holds(k, p) and not eq12_holds(k - 1, p)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp
from flint import arb, ctx, fmpq

from attncert.errors import ParameterError, UnsupportedError
from attncert.symbolic import formulas as F
from attncert.symbolic.params import LLLParams, lll_params, to_fraction
from attncert.symbolic.rigorous import decide

__implements__ = (
    "Hahn Theorem 1",
    "Hahn eq. (11)",
    "Hahn eq. (12)",
    "Hahn S1 Theorem 1",
)

__all__ = [
    "Chain",
    "LayerConstants",
    "LemmaConstants",
    "Magnitude",
    "constants",
    "eq11_feasible",
    "eq11_holds",
    "eq12_holds",
    "lemma_constants",
    "smallest_k_eq11_feasible",
    "smallest_k_eq12",
    "smallest_k_stage2",
    "smallest_n_eq11",
]

EXACT_BITS = 4096  # exact integers up to this many bits for k; c exact up to EXACT_C_BITS
EXACT_C_BITS = 1 << 20
PREC = 192


def _env(p: LLLParams, **extra: int) -> dict[str, object]:
    env: dict[str, object] = dict(p.env())
    env.update(extra)
    return env


def eq12_holds(k: int, p: LLLParams, version: str = "supplement") -> bool:
    """Decide (12) at integer k rigorously (k = 1: the RHS is 0 < D, so False)."""
    if k < 2:
        return False
    r = decide(F.rhs12(version) >= F.D, _env(p, k=k))
    if r is None:
        raise UnsupportedError(f"(12) undecided at k = {k}", where="eq12")
    return r


def eq11_holds(n: int, k: int, p: LLLParams) -> bool:
    """Decide (11) with (8): exp(−δ²q(1−2η)Cn/3) ≤ B(1−A)^{2^c H n}, rigorously."""
    if k < 2:
        return False
    r = decide(F.chernoff8 <= F.eq11_rhs, _env(p, k=k, n=n))
    if r is None:
        raise UnsupportedError(f"(11) undecided at n = {n}, k = {k}", where="eq11")
    return r


def eq11_feasible(k: int, p: LLLParams) -> bool:
    """(1 − 1/k²)^{2^c H} > exp(−δ²q(1−2η)C/3): (11) then holds for all large n."""
    if k < 2:
        return False
    expr = (1 - F.A) ** (2**F.c * F.H) > sp.exp(-(F.delta**2) * F.q * (1 - 2 * F.eta) * F.C / 3)
    r = decide(expr, _env(p, k=k))
    if r is None:
        raise UnsupportedError(f"(11) feasibility undecided at k = {k}", where="eq11")
    return r


def _smallest(pred, start: int, estimate: int) -> int:
    """Smallest integer m ≥ start with pred(m), for a monotone (False…False True…) pred."""
    if pred(start):
        return start
    lo = start  # pred(lo) False
    hi = max(estimate, start + 1)
    while not pred(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _arbq(x: Fraction) -> arb:
    return arb(fmpq(x.numerator, x.denominator))


def _estimate_k12(p: LLLParams, version: str) -> tuple[float, int]:
    """(log2 estimate, int estimate) of the smallest k for (12) via g(k)·k ≈ E + 2 ln k + ln 2."""
    old = ctx.prec
    ctx.prec = 128
    try:
        c = arb(p.c)
        ln2 = arb(2).log()
        log2E = (2 * c if version == "paper" else c) + (
            c * c * p.H / (_arbq(p.eta) * _arbq(p.C))
        ).log() / ln2
        pp = _arbq(p.q / 2) ** p.c
        alpha = _arbq(p.eta) * _arbq(p.C) / (c * c) * (-(-pp).log1p())
        log2a = alpha.log() / ln2
        x = log2E - log2a
        for _ in range(8):  # fixed point of k = (E + 2 ln k + ln 2)/α in log2 form
            x = ((2**log2E + (2 * x + 1) * ln2).log() / ln2) - log2a
        xf = float(x.mid())
    finally:
        ctx.prec = old
    if xf > EXACT_BITS:
        return xf, 0
    return xf, max(2, int(2**xf))


def smallest_k_eq12(p: LLLParams, version: str = "supplement") -> int:
    """The smallest integer k satisfying (12) (exact; UnsupportedError if > EXACT_BITS bits)."""
    xf, est = _estimate_k12(p, version)
    if est == 0:
        raise UnsupportedError(
            f"k for (12) has about {xf:.4g} bits", where="k", expected=f"≤ {EXACT_BITS} bits"
        )
    return _smallest(lambda kk: eq12_holds(kk, p, version), 2, est)


def smallest_k_stage2(p: LLLParams) -> int:
    """Smallest k with 2^c c/k ≤ ηC (supplement Lemma 17): ⌈2^c c/(ηC)⌉, exactly."""
    v = Fraction(2**p.c * p.c) / (p.eta * p.C)
    return math.ceil(v)


def smallest_k_eq11_feasible(p: LLLParams) -> int:
    """Smallest k ≥ 2 with (1 − 1/k²)^{2^c H} > exp(−δ²q(1−2η)C/3)."""
    a = float(p.delta**2 * p.q * (1 - 2 * p.eta) * p.C / 3)
    est = max(2, int(math.sqrt(2.0 ** min(p.c, 1000) * p.H / max(1 - math.exp(-a), 1e-300))))
    return _smallest(lambda kk: eq11_feasible(kk, p), 2, est)


def smallest_n_eq11(k: int, p: LLLParams) -> int:
    """Smallest n ≥ 1 from which (11) holds (given k; ParameterError if never)."""
    if not eq11_feasible(k, p):
        raise ParameterError(
            f"(11) fails for every n at k = {k}: (1−1/k²)^(2^c H) ≤ exp(−δ²q(1−2η)C/3)",
            where="k",
            expected="a larger k",
        )
    old = ctx.prec
    ctx.prec = 128
    try:
        a = _arbq(p.delta**2 * p.q * (1 - 2 * p.eta) * p.C / 3)
        g = a + arb(2**p.c * p.H) * (1 - arb(fmpq(1, k * k))).log()
        est = max(1, int(float((arb(2).log() / g).mid())))
    finally:
        ctx.prec = old
    return _smallest(lambda nn: eq11_holds(nn, k, p), 1, est)


@dataclass(frozen=True)
class LemmaConstants:
    """The constants of one application of Lemma 4 (exact integers)."""

    params: LLLParams
    version: str
    k_eq12: int
    k_stage2: int
    k_eq11: int
    k: int  # max of the three
    N_eq11: int
    c_next: int

    def as_dict(self) -> dict[str, object]:
        return {
            "params": self.params.as_dict(),
            "version": self.version,
            "k_eq12": self.k_eq12,
            "k_stage2": self.k_stage2,
            "k_eq11": self.k_eq11,
            "k": self.k,
            "N_eq11": self.N_eq11,
            "c_next": self.c_next,
        }


def lemma_constants(p: LLLParams, version: str = "supplement") -> LemmaConstants:
    """k (smallest satisfying (12), Stage 2 and (11)-feasibility), N for (11), c(2^c kH+1)."""
    k12 = smallest_k_eq12(p, version)
    k2 = smallest_k_stage2(p)
    k11 = smallest_k_eq11_feasible(p)
    k = max(k12, k2, k11)
    N = smallest_n_eq11(k, p)
    return LemmaConstants(p, version, k12, k2, k11, k, N, p.c * (2**p.c * k * p.H + 1))


# ---------------------------------------------------------------------------------------------
# Huge numbers


@dataclass(frozen=True)
class Magnitude:
    """A positive integer x: exact (level 0), or lo ≤ log₂x ≤ hi (level 1), or
    lo ≤ log₂log₂x ≤ hi (level 2). Bounds are rigorous (arb-derived)."""

    level: int
    exact: int | None = None
    lo: arb | None = field(default=None, compare=False)
    hi: arb | None = field(default=None, compare=False)

    @staticmethod
    def of(x: int) -> Magnitude:
        if x.bit_length() <= EXACT_C_BITS:
            return Magnitude(0, exact=x)
        lg = arb(x).log() / arb(2).log()
        return Magnitude(1, None, lg, lg)

    def log2(self) -> arb:
        """An arb ball containing log₂x (levels 0, 1)."""
        if self.level == 0:
            assert self.exact is not None
            return arb(self.exact).log() / arb(2).log()
        if self.level == 1:
            assert self.lo is not None and self.hi is not None
            return self.lo.union(self.hi)
        raise UnsupportedError("log2 of a level-2 magnitude", where="magnitude")

    def arb_value(self) -> arb:
        if self.level == 0:
            return arb(self.exact)
        return arb(2) ** self.log2()

    def describe(self) -> str:
        if self.level == 0:
            x = self.exact
            assert x is not None
            if x.bit_length() <= 200:
                return str(x)
            return f"exact integer with {_digits(x)} digits"
        assert self.lo is not None and self.hi is not None
        l10 = arb(2).log() / arb(10).log()
        if self.level == 1:
            lo, hi = self.lo.lower() * l10, self.hi.upper() * l10
            return f"10^[{_fmt(lo)}, {_fmt(hi)}]"
        return f"2^(2^[{_fmt(self.lo.lower())}, {_fmt(self.hi.upper())}])"

    def as_dict(self) -> dict[str, object]:
        if self.level == 0:
            return {"level": 0, "exact": str(self.exact), "digits": _digits(self.exact or 0)}
        assert self.lo is not None and self.hi is not None
        key = "log2" if self.level == 1 else "log2log2"
        return {
            "level": self.level,
            f"{key}_lower": _fmt(self.lo.lower()),
            f"{key}_upper": _fmt(self.hi.upper()),
            "describe": self.describe(),
        }


def _digits(x: int) -> int:
    if x < 10**4000:
        return len(str(x))
    d = int(x.bit_length() * 0.30102999566398120)  # then correct exactly
    while 10**d <= x:
        d += 1
    while d > 1 and 10 ** (d - 1) > x:
        d -= 1
    return d


def _fmt(x: arb) -> str:
    return x.str(radius=False, more=False, condense=20) if hasattr(x, "str") else str(x)


@dataclass(frozen=True)
class LayerConstants:
    """Layer ℓ of Theorem 1's chain (ℓ = 1 … L)."""

    layer: int
    c: Magnitude  # c before this layer's application (c_{ℓ−1})
    C: Fraction
    C_prime: Fraction
    eta: Fraction
    q: Fraction
    delta: Fraction
    k: Magnitude
    k_eq12: Magnitude
    k_stage2: Magnitude | None
    k_eq11: Magnitude | None
    N_eq11: int | tuple[int, int]
    c_next: Magnitude

    def as_dict(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "c": self.c.as_dict(),
            "C": str(self.C),
            "C_prime": str(self.C_prime),
            "eta": str(self.eta),
            "q": str(self.q),
            "delta": str(self.delta),
            "k": self.k.as_dict(),
            "k_eq12": self.k_eq12.as_dict(),
            "k_stage2": None if self.k_stage2 is None else self.k_stage2.as_dict(),
            "k_eq11": None if self.k_eq11 is None else self.k_eq11.as_dict(),
            "N_eq11": self.N_eq11 if isinstance(self.N_eq11, int) else list(self.N_eq11),
            "c_next": self.c_next.as_dict(),
        }


@dataclass(frozen=True)
class Chain:
    """Theorem 1's constants for an L-layer H-head model with target free fraction C."""

    layers: int
    heads: int
    C: Fraction
    schedule: str
    version: str
    rows: tuple[LayerConstants, ...]
    C_final: Fraction
    N_formal: int | tuple[int, int]
    n_applies: Magnitude  # smallest n with n ≥ N_formal and C_final·n > c_L

    def as_dict(self) -> dict[str, object]:
        return {
            "layers": self.layers,
            "heads": self.heads,
            "C": str(self.C),
            "schedule": self.schedule,
            "version": self.version,
            "rows": [r.as_dict() for r in self.rows],
            "C_final": str(self.C_final),
            "N_formal": self.N_formal if isinstance(self.N_formal, int) else list(self.N_formal),
            "n_applies": self.n_applies.as_dict(),
        }


def _schedule(L: int, C: Fraction, schedule: str) -> list[Fraction]:
    """Free fractions C₀ = 1 > C₁ > … > C_L ≥ C, exact rationals."""
    if schedule == "linear":
        return [1 - Fraction(i, L) * (1 - C) for i in range(L + 1)]
    if schedule == "geometric":
        # rational r ≥ C^{1/L}, r < 1, r^L ≥ C (checked exactly)
        den = 10**6
        r = Fraction(math.ceil(float(C) ** (1 / L) * den), den)
        while r**L < C:
            r += Fraction(1, den)
        if r >= 1:
            r = 1 - (1 - C) / (2 * L) if (1 - (1 - C) / (2 * L)) ** L >= C else r
        if not (r < 1 and r**L >= C):
            return _schedule(L, C, "linear")
        return [r**i for i in range(L + 1)]
    raise ParameterError(
        f"unknown schedule {schedule!r}", where="schedule", expected="'geometric' or 'linear'"
    )


def _log2(x: arb) -> arb:
    return x.log() / arb(2).log()


def _bracket_layer(
    cM: Magnitude, H: int, Cf: Fraction, eta: Fraction, q: Fraction, delta: Fraction, version: str
) -> tuple[Magnitude, int | tuple[int, int], Magnitude]:
    """k (bracket), N for (11), c_next for huge c (c ≥ 2^6), rigorously (see module doc)."""
    old = ctx.prec
    ctx.prec = PREC
    try:
        return _bracket_layer_at_prec(cM, H, Cf, eta, q, delta, version)
    finally:
        ctx.prec = old


def _bracket_layer_at_prec(
    cM: Magnitude, H: int, Cf: Fraction, eta: Fraction, q: Fraction, delta: Fraction, version: str
) -> tuple[Magnitude, int | tuple[int, int], Magnitude]:
    a1 = (2 if version == "paper" else 1) + _log2(_arbq(2 / q))  # log2 k ≈ (a1)·c
    if cM.level == 2 or (cM.level == 1 and cM.log2().lower() > 2**40):
        # level 2: log2 log2 c = LL; log2 log2 k ≈ log2 c + log2 a1; c_next ≈ 2^{(1+a1)c}
        LL = cM.lo.union(cM.hi) if cM.level == 2 else _log2(cM.log2())
        lam = arb(2) ** LL
        if not lam.lower() > 2**20:
            raise UnsupportedError("level-2 bounds need log2 c ≥ 2^20", where="constants")
        err = arb(2) ** -20
        kll = lam + _log2(a1)
        cll = lam + _log2(1 + a1)
        kM = Magnitude(2, None, kll - err, kll + err)
        cN = Magnitude(2, None, cll - err, cll + err)
        # N: as below with eps ∈ [0, 2^-(10^6)] (k is doubly exponential)
        a = _arbq(delta**2 * q * (1 - 2 * eta) * Cf / 3)
        eps = arb(0).union(arb(2) ** -(10**6))
        n_lo, n_hi = _ceil_arb(arb(2).log() / a), _ceil_arb(arb(2).log() / (a - eps))
        return kM, (n_lo if n_lo == n_hi else (n_lo, n_hi)), cN
    c = cM.arb_value()
    lc = cM.log2()
    if not c.lower() >= 64:
        raise UnsupportedError("bracket mode needs c ≥ 64", where="constants")
    log2E = (
        (2 * c if version == "paper" else c)
        + 2 * lc
        + _log2(arb(H))
        - _log2(_arbq(eta) * _arbq(Cf))
    )
    log2alo = _log2(_arbq(eta) * _arbq(Cf)) - 2 * lc + c * _log2(_arbq(q / 2))
    tiny = arb(2) ** -58
    x_lo = log2E - (log2alo + tiny)
    x_hi = log2E - log2alo + 2 * tiny
    # side conditions of the upper bound: x ≥ 64, log2((2x+1) ln 2) − log2 E ≤ −60
    side = _log2((2 * x_hi + 1) * arb(2).log()) - log2E
    if not (x_hi.lower() >= 64 and side.upper() <= -60):
        raise UnsupportedError("bracket side conditions failed", where="constants")
    # other lower bounds on k must be smaller: Stage 2 (log2 ≤ c + log2 c − log2 ηC + 1),
    # (11)-feasibility (log2 ≤ (c + log2 H − log2(1 − e^{−a}))/2 + 1)
    a = _arbq(delta**2 * q * (1 - 2 * eta) * Cf / 3)
    k2 = c + lc - _log2(_arbq(eta) * _arbq(Cf)) + 1
    k11 = (c + _log2(arb(H)) - _log2(1 - (-a).exp())) / 2 + 1
    if not (k2.upper() < x_lo.lower() and k11.upper() < x_lo.lower()):
        raise UnsupportedError("k for (12) does not dominate", where="constants")
    kM = Magnitude(1, None, x_lo.lower() + 0 * x_lo, x_hi.upper() + 0 * x_hi)
    # N for (11): ⌈ln 2/(a + 2^c H ln(1−1/k²))⌉, ln(1−1/k²) ∈ [−2/k², −1/k²]
    e_exp = c + 1 + _log2(arb(H)) - 2 * x_lo
    eps = arb(0).union(arb(2) ** (-(10**6))) if e_exp.upper() < -(10**6) else arb(2) ** e_exp
    N_lo = _ceil_arb(arb(2).log() / a)
    N_hi = _ceil_arb(arb(2).log() / (a - eps))
    N: int | tuple[int, int] = N_lo if N_lo == N_hi else (N_lo, N_hi)
    # c_next = c(2^c k H + 1): log2 ∈ [lc + c + log2 k + log2 H, … + 2^-60]
    lo = lc + c + x_lo + _log2(arb(H))
    hi = lc + c + x_hi + _log2(arb(H)) + tiny
    cN = Magnitude(1, None, lo.lower() + 0 * lo, hi.upper() + 0 * hi)
    return kM, N, cN


def _ceil_arb(x: arb) -> int:
    lo, hi = math.ceil(float(x.lower())), math.ceil(float(x.upper()))
    if lo != hi:
        raise UnsupportedError("ceiling undecided", where="constants")
    return lo


def constants(
    layers: int,
    heads: int,
    C: object,
    *,
    schedule: str = "geometric",
    version: str = "supplement",
) -> Chain:
    """Theorem 1's chain for an L-layer, H-head model and target free fraction C.

    Layer ℓ applies Lemma 4 to a c_{ℓ−1}-transformer with C = C_{ℓ−1}, C′ = C_ℓ (``schedule``:
    geometric C_ℓ = r^ℓ with rational r ≥ C^{1/L}, or linear), η, q, δ by Definition 5's
    default (:func:`attncert.symbolic.params.default_def5`).

    >>> ch = constants(1, 1, "0.5")
    >>> ch.rows[0].k.exact == lemma_constants(lll_params(1, 1, 1, ch.rows[0].C_prime)).k
    True
    """
    if not isinstance(layers, int) or layers < 1:
        raise ParameterError(f"layers = {layers!r}", where="layers", expected="integer ≥ 1")
    if not isinstance(heads, int) or heads < 1:
        raise ParameterError(f"heads = {heads!r}", where="heads", expected="integer ≥ 1")
    if version not in ("paper", "supplement"):
        raise ParameterError(
            f"version {version!r}", where="version", expected="'paper' or 'supplement'"
        )
    Cf = to_fraction(C, "C")
    if not 0 < Cf < 1:
        raise ParameterError(f"C = {Cf} violates 0 < C < 1", where="C", expected="C ∈ (0, 1)")
    fr = _schedule(layers, Cf, schedule)
    old = ctx.prec
    rows = []
    Ns: list[int | tuple[int, int]] = []
    cM = Magnitude(0, exact=1)
    try:
        for ell in range(1, layers + 1):
            Cprev, Cnext = fr[ell - 1], fr[ell]
            if cM.level == 0 and cM.exact is not None and cM.exact < 64:
                p = lll_params(cM.exact, heads, Cprev, Cnext)
                lc = lemma_constants(p, version)
                kM = Magnitude(0, exact=lc.k)
                row = LayerConstants(
                    ell,
                    cM,
                    Cprev,
                    Cnext,
                    p.eta,
                    p.q,
                    p.delta,
                    kM,
                    Magnitude(0, exact=lc.k_eq12),
                    Magnitude(0, exact=lc.k_stage2),
                    Magnitude(0, exact=lc.k_eq11),
                    lc.N_eq11,
                    Magnitude.of(lc.c_next),
                )
            else:
                p1 = lll_params(1, heads, Cprev, Cnext)
                eta, q, delta = p1.eta, p1.q, p1.delta
                kM, N, cN = _bracket_layer(cM, heads, Cprev, eta, q, delta, version)
                row = LayerConstants(
                    ell, cM, Cprev, Cnext, eta, q, delta, kM, kM, None, None, N, cN
                )
            rows.append(row)
            Ns.append(row.N_eq11)
            cM = row.c_next
    finally:
        ctx.prec = old
    lows = [x if isinstance(x, int) else x[0] for x in Ns]
    highs = [x if isinstance(x, int) else x[1] for x in Ns]
    N_formal: int | tuple[int, int] = (
        max(lows) if max(lows) == max(highs) else (max(lows), max(highs))
    )
    C_L = fr[-1]
    if cM.level == 0:
        assert cM.exact is not None
        n_par = cM.exact * C_L.denominator // C_L.numerator + 1  # smallest n with C_L n > c_L
        n_app = Magnitude(0, exact=max(n_par, max(highs)))
    else:
        # n > c_L / C_L: log2 n ∈ log2 c_L − log2 C_L + [0, tiny]
        ctx.prec = PREC
        try:
            if cM.level == 1:
                sh = -_log2(_arbq(C_L))
                n_app = Magnitude(1, None, cM.lo + sh, cM.hi + sh + arb(2) ** -50)
            else:
                n_app = Magnitude(2, None, cM.lo, cM.hi + arb(2) ** -20)
        finally:
            ctx.prec = old
    return Chain(layers, heads, Cf, schedule, version, tuple(rows), C_L, N_formal, n_app)
