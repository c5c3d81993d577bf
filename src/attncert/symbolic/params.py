"""Parameters of the Depth Reduction Lemma and Definition 5's exact choice of η, q, δ.

Hahn (2020) §5.1 and supplement S1, Definition 5: choose η ∈ (0, ½), q ∈ (0, 1), δ > 0 with
(1+δ)q ∈ (0, 1) such that

    (1 − 2η)(1 − (1+δ)q) = C′/C.                                   (Definition 5)

All parameters are exact rationals (:class:`fractions.Fraction`); given any two of η, q, δ
the third is solved exactly. The default (none given) is

    r = C′/C,   η = (1 − r)/4,   q = 2s/3,   δ = ½,   where s = (1 − r)/(1 + r),

which satisfies Definition 5 exactly and keeps δ ∈ (0, 1) (where the Chernoff bound (8) of
Mitzenmacher–Upfal Thm 4.4 applies).

>>> p = lll_params(c=1, H=2, C=1, C_prime="1/2")
>>> (p.eta, p.q, p.delta)
(Fraction(1, 8), Fraction(2, 9), Fraction(1, 2))
>>> (1 - 2 * p.eta) * (1 - (1 + p.delta) * p.q) == p.C_prime / p.C
True
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational

from attncert.errors import ParameterError

__implements__ = (
    "Hahn S1 Definition 5",
    "Hahn S1 eq. (4)",
)

__all__ = ["LLLParams", "default_def5", "lll_params", "to_fraction"]


def to_fraction(value: object, name: str) -> Fraction:
    """An exact rational from an int, Fraction, decimal string ("0.9") or "p/q" string.

    Floats are converted exactly (a float64 is a dyadic rational), so ``0.9`` as a float is
    *not* 9/10; pass the string ``"0.9"`` for that (the CLI does).
    """
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number", where=name, expected="a rational")
    if isinstance(value, (int, Fraction, Rational)):
        return Fraction(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ParameterError(f"{name} is not finite", where=name, expected="a rational")
        return Fraction(value)
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise ParameterError(
                f"cannot read {value!r} as a rational", where=name, expected="e.g. 0.9 or 9/10"
            ) from None
    raise ParameterError(f"{name} has type {type(value).__name__}", where=name, expected="rational")


@dataclass(frozen=True)
class LLLParams:
    """Exact parameters of one application of the Depth Reduction Lemma (Hahn 2020, Lemma 4).

    c: the model is a c-transformer; H: heads per layer; C: free fraction before;
    C_prime: free fraction after (C′ < C); eta, q, delta: Definition 5's choice.
    """

    c: int
    H: int
    C: Fraction
    C_prime: Fraction
    eta: Fraction
    q: Fraction
    delta: Fraction

    @property
    def ratio(self) -> Fraction:
        """C′/C."""
        return self.C_prime / self.C

    def as_dict(self) -> dict[str, str | int]:
        return {
            "c": self.c,
            "H": self.H,
            "C": str(self.C),
            "C_prime": str(self.C_prime),
            "eta": str(self.eta),
            "q": str(self.q),
            "delta": str(self.delta),
        }

    def env(self) -> dict[str, Fraction | int]:
        """Values keyed by the names of :mod:`attncert.symbolic.formulas` symbols."""
        return {
            "c": self.c,
            "H": self.H,
            "C": self.C,
            "Cp": self.C_prime,
            "eta": self.eta,
            "q": self.q,
            "delta": self.delta,
        }


def default_def5(ratio: Fraction) -> tuple[Fraction, Fraction, Fraction]:
    """Definition 5's (η, q, δ) for C′/C = ``ratio`` ∈ (0, 1), exactly (see module doc)."""
    r = Fraction(ratio)
    s = (1 - r) / (1 + r)
    return (1 - r) / 4, 2 * s / 3, Fraction(1, 2)


def lll_params(
    c: int,
    H: int,
    C: object,
    C_prime: object,
    eta: object | None = None,
    q: object | None = None,
    delta: object | None = None,
) -> LLLParams:
    """Validate the hypotheses of Lemma 4 / Definition 5 and complete η, q, δ exactly.

    Raises :class:`ParameterError` naming the violated condition: c ≥ 1, H ≥ 1,
    0 < C ≤ 1, 0 < C′ < C, η ∈ (0, ½), q ∈ (0, 1), δ > 0, (1+δ)q ∈ (0, 1), and
    Definition 5's equation (1−2η)(1−(1+δ)q) = C′/C (solvable or satisfied).
    """
    if not isinstance(c, int) or isinstance(c, bool) or c < 1:
        raise ParameterError(f"c = {c!r}", where="c", expected="an integer c ≥ 1")
    if not isinstance(H, int) or isinstance(H, bool) or H < 1:
        raise ParameterError(f"H = {H!r}", where="H", expected="an integer H ≥ 1")
    Cf = to_fraction(C, "C")
    Cpf = to_fraction(C_prime, "C_prime")
    if not 0 < Cf <= 1:
        raise ParameterError(f"C = {Cf} violates 0 < C ≤ 1", where="C", expected="C ∈ (0, 1]")
    if not Cpf > 0:
        raise ParameterError(f"C′ = {Cpf} violates C′ > 0", where="C_prime", expected="C′ > 0")
    if not Cpf < Cf:
        raise ParameterError(
            f"C′ = {Cpf} ≥ C = {Cf} (Lemma 4 needs C′ < C)", where="C_prime", expected="C′ < C"
        )
    r = Cpf / Cf
    given = {
        "eta": None if eta is None else to_fraction(eta, "eta"),
        "q": None if q is None else to_fraction(q, "q"),
        "delta": None if delta is None else to_fraction(delta, "delta"),
    }
    e, qq, d = given["eta"], given["q"], given["delta"]
    _check_ranges(e, qq, d)
    n_given = sum(v is not None for v in given.values())
    if n_given == 0:
        e, qq, d = default_def5(r)
    elif n_given == 1:
        # Complete with the default construction where possible.
        if e is None:
            e = (1 - r) / 4 if (1 - r) / 4 < Fraction(1, 2) else None
            if e is not None and qq is not None and not (1 - 2 * e) > r:
                e = None
        if e is None:
            raise ParameterError("cannot complete Definition 5", where="eta", expected="η")
        s = 1 - r / (1 - 2 * e) if 1 - 2 * e > 0 else None
        if s is None or s <= 0:
            raise ParameterError(
                f"Definition 5 unsatisfiable: 1 − 2η = {1 - 2 * e} ≤ C′/C = {r}, so "
                "1 − (1+δ)q = (C′/C)/(1−2η) ≥ 1",
                where="eta",
                expected="1 − 2η > C′/C",
            )
        if qq is None and d is None:
            qq, d = 2 * s / 3, Fraction(1, 2)
        elif qq is None:
            qq = s / (1 + d)
        else:
            d = s / qq - 1
    elif n_given == 2:
        if e is None:
            prod = (1 + d) * qq
            if not 0 < prod < 1:
                raise ParameterError(
                    f"(1+δ)q = {prod} ∉ (0, 1)", where="delta", expected="(1+δ)q ∈ (0, 1)"
                )
            e = (1 - r / (1 - prod)) / 2
        else:
            if not 1 - 2 * e > r:
                raise ParameterError(
                    f"Definition 5 unsatisfiable: 1 − 2η = {1 - 2 * e} ≤ C′/C = {r}",
                    where="eta",
                    expected="1 − 2η > C′/C",
                )
            s = 1 - r / (1 - 2 * e)
            if qq is None:
                qq = s / (1 + d)
            else:
                d = s / qq - 1
    _check_ranges(e, qq, d)
    assert e is not None and qq is not None and d is not None
    if not 0 < (1 + d) * qq < 1:
        raise ParameterError(
            f"(1+δ)q = {(1 + d) * qq} ∉ (0, 1)", where="q", expected="(1+δ)q ∈ (0, 1)"
        )
    lhs = (1 - 2 * e) * (1 - (1 + d) * qq)
    if lhs != r:
        raise ParameterError(
            f"Definition 5 violated: (1−2η)(1−(1+δ)q) = {lhs} ≠ C′/C = {r}",
            where="eta/q/delta",
            expected="(1−2η)(1−(1+δ)q) = C′/C exactly (give at most two of η, q, δ)",
        )
    return LLLParams(c=c, H=H, C=Cf, C_prime=Cpf, eta=e, q=qq, delta=d)


def _check_ranges(e: Fraction | None, q: Fraction | None, d: Fraction | None) -> None:
    if e is not None and not 0 < e < Fraction(1, 2):
        raise ParameterError(f"η = {e} violates η ∈ (0, ½)", where="eta", expected="0 < η < 1/2")
    if q is not None and not 0 < q < 1:
        raise ParameterError(f"q = {q} violates q ∈ (0, 1)", where="q", expected="0 < q < 1")
    if d is not None and not d > 0:
        raise ParameterError(f"δ = {d} violates δ > 0", where="delta", expected="δ > 0")
