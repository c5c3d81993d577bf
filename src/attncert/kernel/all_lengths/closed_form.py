"""Closed forms in one integer variable, and their inequalities for every value from a point
on: the analytic half of an all-length proof (trusted; issue 23).

Objects (every coefficient an exact rational, python-flint ``fmpq``):

* :class:`RatFn` — a rational function p(x)/q(x) in lowest terms with q monic;
* :class:`LogLin` — A(x) + B(x)·log x with A, B rational functions: an exponent such as
  β(n)·γ(n) for β(n) = c·n^p·(log n)^q with q ∈ {0, 1} and a rational gap γ(n);
* :class:`Atom` — T(x) = P(x)·exp(−Φ(x))·(1 − exp(−Ψ(x)))^(−k), k ∈ {0, 1, 2}: one term
  of a soft-attention error bound (Yang et al. Lemma 6's off-target mass; a geometric
  series Σ_{d≥1} e^{−dΦ} = e^{−Φ}/(1 − e^{−Φ}); a Gaussian tail);
* :class:`Inequality` — Σ atoms ≤ bound for every integer x ≥ ``start``.

A proof (:class:`TailProof`) is a point x₁ ≥ start and a rational ℓ ≤ log x₁; it is
checked by these rules, each named in a failure:

* **R1 points** — for every integer x in [start, x₁] the sum, enclosed in arb balls, is
  ≤ bound (64 → 1024 bits; still undecided at the cap: the proof fails as undecided);
* **R2 Sturm** — a polynomial p with p(a) > 0 whose Sturm sequence (p₀ = p, p₁ = p′,
  p_{k+1} = −rem(p_{k−1}, p_k)) has as many sign changes at a as at +∞ has no real root
  in (a, ∞), so p > 0 on [a, ∞); a rational function is > 0 there when its numerator
  and denominator have one sign there, and ≥ 0 when it is the zero function;
* **R3 log lower bound** — U(x) + V(x)·log x ≥ 0 on [a, ∞) when V ≥ 0 there (R2) and
  U + ℓ·V ≥ 0 there (R2), with ℓ ≤ log a (arb), because log is increasing;
* **R4 monotone atom** — T is non-increasing on [x₁, ∞) when P > 0 there (R2),
  Φ′ − P′/P ≥ 0 there (R3) and, for k > 0, Ψ′ ≥ 0 there (R3) and Ψ(x₁) > 0 (arb):
  (log T)′ = P′/P − Φ′ − k·Ψ′e^{−Ψ}/(1 − e^{−Ψ}) ≤ P′/P − Φ′ ≤ 0;
* **R5 tail** — every atom non-increasing on [x₁, ∞) and the sum ≤ bound at x₁ (R1) give
  the sum ≤ bound for every x ≥ x₁.

Derivatives are computed exactly on coefficient lists (no expression simplifier). The
conditions R2–R4 check are listed by :func:`tail_conditions`; a certificate stores them and
the checker compares the stored list with the one it derives before checking each.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flint import arb, ctx, fmpq, fmpq_poly

from attncert.errors import SpecError

__implements__ = ("Yang Lemma 6", "Yang Lemma 7", "Yang Lemma 8")

PRECISIONS = (64, 128, 256, 1024)


class ProofFailure(Exception):
    """A rule did not establish its claim: ``rule`` (R1…R5), ``where`` (x or the
    condition), ``reason`` in words; ``undecided`` when only precision ran out."""

    def __init__(self, rule: str, where: str, reason: str, *, undecided: bool = False, x=None):
        super().__init__(f"{rule} at {where}: {reason}")
        self.rule, self.where, self.reason, self.undecided, self.x = (
            rule,
            where,
            reason,
            undecided,
            x,
        )


# ----- exact rationals in JSON ---------------------------------------------------------------


def q_of(x: Any, where: str = "rational") -> fmpq:
    """An exact rational from a JSON string "p/q" or an int (no floats: they would round)."""
    if isinstance(x, bool):
        raise SpecError(f"{x!r}", where=where, expected="a rational 'p/q' or an integer")
    if isinstance(x, int):
        return fmpq(x)
    if isinstance(x, str):
        try:
            if "/" in x:
                a, b = x.split("/")
                if int(b) == 0:
                    raise ValueError
                return fmpq(int(a), int(b))
            return fmpq(int(x))
        except ValueError:
            pass
    raise SpecError(f"{x!r}", where=where, expected="a rational 'p/q' or an integer")


def q_str(x: fmpq) -> str:
    x = fmpq(x)
    return str(int(x.p)) if x.q == 1 else f"{int(x.p)}/{int(x.q)}"


# ----- rational functions ---------------------------------------------------------------------


def _poly(coeffs: Iterable[fmpq | int]) -> fmpq_poly:
    return fmpq_poly([fmpq(c) for c in coeffs])


@dataclass(frozen=True)
class RatFn:
    """p(x)/q(x) in lowest terms, q monic (the zero function is 0/1)."""

    num: tuple[fmpq, ...]
    den: tuple[fmpq, ...]

    @staticmethod
    def of(p: fmpq_poly, q: fmpq_poly) -> RatFn:
        if q.is_zero():
            raise ZeroDivisionError("rational function with denominator 0")
        if p.is_zero():
            return RatFn((), (fmpq(1),))
        g = p.gcd(q)
        p, q = p // g, q // g
        lc = q.leading_coefficient()
        p, q = p / lc, q / lc
        return RatFn(tuple(p.coeffs()), tuple(q.coeffs()))

    @staticmethod
    def const(c: fmpq | int) -> RatFn:
        return RatFn.of(_poly([c]), _poly([1]))

    @staticmethod
    def poly(coeffs: Sequence[fmpq | int]) -> RatFn:
        return RatFn.of(_poly(coeffs), _poly([1]))

    @staticmethod
    def x_pow(k: int) -> RatFn:
        """x^k for an integer k (negative: 1/x^|k|)."""
        mono = _poly([0] * abs(k) + [1])
        return RatFn.of(mono, _poly([1])) if k >= 0 else RatFn.of(_poly([1]), mono)

    @property
    def p(self) -> fmpq_poly:
        return _poly(self.num)

    @property
    def q(self) -> fmpq_poly:
        return _poly(self.den)

    def is_zero(self) -> bool:
        return not self.num

    def is_const(self) -> bool:
        return len(self.num) <= 1 and len(self.den) == 1

    def __add__(self, o: RatFn) -> RatFn:
        return RatFn.of(self.p * o.q + o.p * self.q, self.q * o.q)

    def __sub__(self, o: RatFn) -> RatFn:
        return RatFn.of(self.p * o.q - o.p * self.q, self.q * o.q)

    def __mul__(self, o: RatFn) -> RatFn:
        return RatFn.of(self.p * o.p, self.q * o.q)

    def __truediv__(self, o: RatFn) -> RatFn:
        if o.is_zero():
            raise ZeroDivisionError("division by the zero function")
        return RatFn.of(self.p * o.q, self.q * o.p)

    def scale(self, c: fmpq | int) -> RatFn:
        return self * RatFn.const(c)

    def derivative(self) -> RatFn:
        p, q = self.p, self.q
        return RatFn.of(p.derivative() * q - p * q.derivative(), q * q)

    def at(self, x: fmpq | int) -> fmpq:
        d = self.q(fmpq(x))
        if d == 0:
            raise ZeroDivisionError(f"denominator vanishes at {x}")
        return self.p(fmpq(x)) / d

    def to_json(self) -> list[list[str]]:
        """[numerator, denominator] coefficient lists, low to high, as exact rationals."""
        return [[q_str(c) for c in self.num], [q_str(c) for c in self.den]]

    @staticmethod
    def from_json(obj: Any, where: str) -> RatFn:
        if not isinstance(obj, list) or len(obj) != 2 or not all(isinstance(x, list) for x in obj):
            raise SpecError("not a rational function", where=where, expected="[num, den]")
        num = [q_of(c, f"{where}[0]") for c in obj[0]]
        den = [q_of(c, f"{where}[1]") for c in obj[1]]
        if not den or all(c == 0 for c in den):
            raise SpecError("denominator 0", where=where)
        # stored as written (not re-normalised), so that an edited coefficient is seen
        return RatFn(tuple(num), tuple(den))

    def text(self, var: str = "x") -> str:
        num = _poly_text(self.num, var)
        if self.den == (fmpq(1),):
            return num
        return f"({num})/({_poly_text(self.den, var)})"


def _poly_text(coeffs: Sequence[fmpq], var: str) -> str:
    if not coeffs:
        return "0"
    parts = []
    for k in range(len(coeffs) - 1, -1, -1):
        c = fmpq(coeffs[k])
        if c == 0:
            continue
        mono = "" if k == 0 else (var if k == 1 else f"{var}^{k}")
        mag = abs(c)
        cs = q_str(mag)
        body = cs if not mono else (mono if mag == 1 else f"{cs}*{mono}")
        parts.append(("- " if c < 0 else "+ ") + body)
    s = " ".join(parts)
    return s[2:] if s.startswith("+ ") else "-" + s[2:]


# ----- A + B·log x --------------------------------------------------------------------------


@dataclass(frozen=True)
class LogLin:
    """A(x) + B(x)·log x."""

    a: RatFn
    b: RatFn

    @staticmethod
    def of(a: RatFn, b: RatFn | None = None) -> LogLin:
        return LogLin(a, b if b is not None else RatFn.const(0))

    def times(self, r: RatFn) -> LogLin:
        return LogLin(self.a * r, self.b * r)

    def __add__(self, o: LogLin) -> LogLin:
        return LogLin(self.a + o.a, self.b + o.b)

    def derivative(self) -> tuple[RatFn, RatFn]:
        """(U, V) with d/dx (A + B log x) = U + V·log x: U = A′ + B/x, V = B′."""
        return self.a.derivative() + self.b * RatFn.x_pow(-1), self.b.derivative()

    def is_zero(self) -> bool:
        return self.a.is_zero() and self.b.is_zero()

    def ball(self, x: int) -> arb:
        v = arb(self.a.at(x))
        if not self.b.is_zero():
            v += arb(self.b.at(x)) * arb(x).log()
        return v

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a.to_json(), "b": self.b.to_json()}

    @staticmethod
    def from_json(obj: Any, where: str) -> LogLin:
        if not isinstance(obj, dict) or set(obj) != {"a", "b"}:
            raise SpecError("not an exponent A + B·log x", where=where, expected="{a, b}")
        return LogLin(
            RatFn.from_json(obj["a"], f"{where}.a"), RatFn.from_json(obj["b"], f"{where}.b")
        )

    def text(self, var: str = "x") -> str:
        if self.b.is_zero():
            return self.a.text(var)
        lg = f"log({var})"
        if self.a.is_zero():
            return f"({self.b.text(var)})*{lg}"
        return f"{self.a.text(var)} + ({self.b.text(var)})*{lg}"


# ----- atoms and inequalities -----------------------------------------------------------------


@dataclass(frozen=True)
class Atom:
    """T(x) = P(x)·exp(−Φ(x))·(1 − exp(−Ψ(x)))^(−k)."""

    p: RatFn
    phi: LogLin
    psi: LogLin | None = None
    k: int = 0

    def __post_init__(self) -> None:
        if self.k not in (0, 1, 2) or (self.k > 0) != (self.psi is not None):
            raise SpecError(f"atom power k = {self.k}", expected="0 (no Ψ), 1 or 2 (with Ψ)")

    def scaled(self, r: RatFn) -> Atom:
        return Atom(self.p * r, self.phi, self.psi, self.k)

    def ball(self, x: int) -> arb:
        t = arb(self.p.at(x)) * (-self.phi.ball(x)).exp()
        if self.k:
            one_minus = -((-self.psi.ball(x)).expm1())  # 1 − e^{−Ψ}
            if not one_minus > 0:
                raise ProofFailure("R1", f"x = {x}", "1 − exp(−Ψ) is not certainly > 0", x=x)
            t = t / one_minus**self.k
        return t

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"P": self.p.to_json(), "Phi": self.phi.to_json(), "k": self.k}
        if self.psi is not None:
            out["Psi"] = self.psi.to_json()
        return out

    @staticmethod
    def from_json(obj: Any, where: str) -> Atom:
        if not isinstance(obj, dict) or not {"P", "Phi", "k"} <= set(obj):
            raise SpecError("not an atom", where=where, expected="{P, Phi, k[, Psi]}")
        k = obj["k"]
        if not isinstance(k, int) or isinstance(k, bool):
            raise SpecError(f"k = {k!r}", where=f"{where}.k", expected="0, 1 or 2")
        psi = LogLin.from_json(obj["Psi"], f"{where}.Psi") if "Psi" in obj else None
        try:
            return Atom(
                RatFn.from_json(obj["P"], f"{where}.P"),
                LogLin.from_json(obj["Phi"], f"{where}.Phi"),
                psi,
                k,
            )
        except SpecError as err:
            raise SpecError(err.message, where=where, expected=err.expected) from None

    def text(self, var: str = "x") -> str:
        s = f"({self.p.text(var)})*exp(-({self.phi.text(var)}))"
        if self.k:
            s += f"/(1 - exp(-({self.psi.text(var)})))" + ("^2" if self.k == 2 else "")
        return s


@dataclass(frozen=True)
class Inequality:
    """Σ atoms(x) ≤ bound for every integer x ≥ start (``var`` names x: n or i)."""

    var: str
    atoms: tuple[Atom, ...]
    bound: fmpq
    start: int

    def ball(self, x: int) -> arb:
        total = arb(0)
        for a in self.atoms:
            total += a.ball(x)
        return total

    def text(self) -> str:
        lhs = " + ".join(a.text(self.var) for a in self.atoms) or "0"
        return f"{lhs} <= {q_str(self.bound)} for all integers {self.var} >= {self.start}"


def holds_at(ineq: Inequality, x: int) -> bool:
    """R1 at one point: True if the sum is certainly ≤ bound, False if certainly above;
    ProofFailure(undecided) if the balls never separate."""
    bound = arb(ineq.bound)
    for prec in PRECISIONS:
        with ctx.workprec(prec):
            try:
                v = ineq.ball(x)
            except ZeroDivisionError:
                raise ProofFailure(
                    "R1", f"{ineq.var} = {x}", "a denominator vanishes", x=x
                ) from None
            except ProofFailure:
                if prec == PRECISIONS[-1]:
                    raise
                continue
            if v <= bound:
                return True
            if v > bound:
                return False
    raise ProofFailure(
        "R1", f"{ineq.var} = {x}", "the sum and the bound do not separate", undecided=True, x=x
    )


def value_at(ineq: Inequality, x: int) -> float:
    """The sum at x as a float (midpoint; for messages only)."""
    with ctx.workprec(128):
        return float(ineq.ball(x).mid())


# ----- Sturm sequences (R2) ------------------------------------------------------------------


def _sign_changes(values: Iterable[fmpq]) -> int:
    signs = [v > 0 for v in values if v != 0]
    return sum(1 for a, b in itertools.pairwise(signs) if a != b)


def roots_above(p: fmpq_poly, a: fmpq) -> int:
    """Number of distinct real roots of p in (a, ∞) by Sturm's theorem (p(a) ≠ 0)."""
    if p.degree() <= 0:
        return 0
    seq = [p, p.derivative()]
    while not seq[-1].is_zero():
        _, r = divmod(seq[-2], seq[-1])
        if r.is_zero():
            break
        seq.append(-r)
    at_a = [s(a) for s in seq]
    at_inf = [s.leading_coefficient() for s in seq]
    return _sign_changes(at_a) - _sign_changes(at_inf)


def positive_from(p: fmpq_poly, a: fmpq) -> bool:
    """R2: p(x) > 0 for every real x ≥ a."""
    return p(a) > 0 and roots_above(p, a) == 0


def ratfn_sign_from(r: RatFn, a: fmpq) -> int:
    """+1 if r > 0 on [a, ∞), 0 if r is the zero function, −1 if neither is shown (R2)."""
    if r.is_zero():
        return 0
    p, q = r.p, r.q
    for s in (1, -1):
        if positive_from(p * s, a) and positive_from(q * s, a):
            return 1
    return -1


# ----- tail conditions (R3, R4) -----------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """One R2/R3 claim of a tail proof: U + V·log x ≥ 0 (V = 0: plain R2) on [x₁, ∞), or
    ``strict``: U > 0 there (a factor P of an atom)."""

    what: str  # e.g. "atom 0: P > 0"
    u: RatFn
    v: RatFn
    strict: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "U": self.u.to_json(),
            "V": self.v.to_json(),
            "strict": self.strict,
        }

    @staticmethod
    def from_json(obj: Any, where: str) -> Condition:
        if not isinstance(obj, dict) or not {"what", "U", "V", "strict"} <= set(obj):
            raise SpecError("not a tail condition", where=where, expected="{what, U, V, strict}")
        return Condition(
            str(obj["what"]),
            RatFn.from_json(obj["U"], f"{where}.U"),
            RatFn.from_json(obj["V"], f"{where}.V"),
            bool(obj["strict"]),
        )


def tail_conditions(ineq: Inequality) -> list[Condition]:
    """The R2/R3 claims that R4 needs for every atom (in a fixed order)."""
    out: list[Condition] = []
    zero = RatFn.const(0)
    for k, at in enumerate(ineq.atoms):
        if at.p.is_zero():
            continue
        out.append(Condition(f"atom {k}: P > 0", at.p, zero, strict=True))
        u, v = at.phi.derivative()
        out.append(Condition(f"atom {k}: Phi' - P'/P >= 0", u - at.p.derivative() / at.p, v))
        if at.k:
            u2, v2 = at.psi.derivative()
            out.append(Condition(f"atom {k}: Psi' >= 0", u2, v2))
    return out


def check_condition(c: Condition, a: fmpq, ell: fmpq) -> None:
    """R2 (strict) or R3 for one condition on [a, ∞); ProofFailure naming it otherwise."""
    if c.strict:
        if not c.v.is_zero() or ratfn_sign_from(c.u, a) != 1:
            raise ProofFailure("R2", c.what, f"{c.u.text()} is not shown > 0 on [{q_str(a)}, ∞)")
        return
    if c.v.is_zero():
        if ratfn_sign_from(c.u, a) < 0:
            raise ProofFailure("R2", c.what, f"{c.u.text()} is not shown ≥ 0 on [{q_str(a)}, ∞)")
        return
    if ratfn_sign_from(c.v, a) < 0:
        raise ProofFailure(
            "R3", c.what, f"the log coefficient {c.v.text()} is not shown ≥ 0 on [{q_str(a)}, ∞)"
        )
    low = c.u + c.v.scale(ell)
    if ratfn_sign_from(low, a) < 0:
        raise ProofFailure(
            "R3",
            c.what,
            f"{low.text()} (log x replaced by {q_str(ell)}) is not shown ≥ 0 on [{q_str(a)}, ∞)",
        )


# ----- the proof ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TailProof:
    """x₁ (pointwise checks on [start, x₁], monotone from x₁ on), ℓ ≤ log x₁, and the
    conditions R4 needs (stored so that the checker can compare them)."""

    x1: int
    ell: fmpq
    conditions: tuple[Condition, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "x1": self.x1,
            "log_lower": q_str(self.ell),
            "conditions": [c.to_json() for c in self.conditions],
        }

    @staticmethod
    def from_json(obj: Any, where: str) -> TailProof:
        if not isinstance(obj, dict) or not {"x1", "log_lower", "conditions"} <= set(obj):
            raise SpecError("not a tail proof", where=where, expected="{x1, log_lower, conditions}")
        x1 = obj["x1"]
        if not isinstance(x1, int) or isinstance(x1, bool) or x1 < 1:
            raise SpecError(f"x1 = {x1!r}", where=f"{where}.x1", expected="an integer ≥ 1")
        conds = obj["conditions"]
        if not isinstance(conds, list):
            raise SpecError("conditions", where=f"{where}.conditions", expected="a list")
        return TailProof(
            x1,
            q_of(obj["log_lower"], f"{where}.log_lower"),
            tuple(Condition.from_json(c, f"{where}.conditions[{k}]") for k, c in enumerate(conds)),
        )


MAX_POINTS = 200_000  # R1 evaluations one proof may ask for


def check_inequality(ineq: Inequality, proof: TailProof) -> None:
    """Rules R1–R5 (module docstring); returns if ``ineq`` holds for every x ≥ start,
    else raises :class:`ProofFailure` naming the rule, the place and the reason."""
    if proof.x1 < ineq.start:
        raise ProofFailure("R5", "x1", f"x1 = {proof.x1} is below the start {ineq.start}")
    if proof.x1 - ineq.start > MAX_POINTS:
        raise ProofFailure("R1", "x1", f"more than {MAX_POINTS} points to check")
    # R3's ℓ ≤ log x₁
    with ctx.workprec(128):
        if not arb(proof.x1).log() >= arb(proof.ell):
            raise ProofFailure("R3", "log_lower", f"{q_str(proof.ell)} is not ≤ log {proof.x1}")
    want = tail_conditions(ineq)
    if list(proof.conditions) != want:
        bad = next(
            (k for k, (a, b) in enumerate(zip(proof.conditions, want, strict=False)) if a != b),
            min(len(want), len(proof.conditions)),
        )
        name = want[bad].what if bad < len(want) else f"condition {bad}"
        raise ProofFailure(
            "R4", name, "the stored tail condition differs from the one derived from the atoms"
        )
    a = fmpq(proof.x1)
    for c in want:
        check_condition(c, a, proof.ell)
    for k, at in enumerate(ineq.atoms):
        if at.k and not at.p.is_zero():
            with ctx.workprec(128):
                if not at.psi.ball(proof.x1) > 0:
                    raise ProofFailure("R4", f"atom {k}: Psi(x1) > 0", "not certainly positive")
    # R1 on [start, x1]
    for x in range(ineq.start, proof.x1 + 1):
        if not holds_at(ineq, x):
            raise ProofFailure(
                "R1",
                f"{ineq.var} = {x}",
                f"the bound is exceeded: {value_at(ineq, x):.6g} > {q_str(ineq.bound)}",
                x=x,
            )
