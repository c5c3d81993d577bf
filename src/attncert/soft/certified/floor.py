"""Theorem 6 for *this* model at *this* n: certified cross-entropy floors from B(n).

**PARITY** (binary alphabet {0, 1}, uniform strings of length n, the model's
probability of membership σ(z), z the accept logit). Flipping one fixed changeable
position p is a perfect matching of {0,1}ⁿ whose pairs differ in PARITY. With
|z(x) − z(x^p)| ≤ B the two losses sum to log(1 + e^{−z}) + log(1 + e^{z′}) with
z − z′ ≤ B, whose minimum is 2·log(1 + e^{−B/2}); averaging over the matching,

    E[CE] ≥ log(1 + e^{−B/2}) nats,

which tends to log 2 (a coin) as B → 0 (guide, "From a sensitivity bound to a
cross-entropy floor"). The floor is the same for PARITY and its complement.

**2-Dyck next-symbol prediction** (Hahn's PCFG, prefixes of length n conditioned on
length ≥ n). Let U_n be the prefixes that are unbalanced and end with a closing
bracket; after x ∈ U_n the next symbol is the top closer c_x with probability 1 − p
and the wrong closer has probability 0. Exchanging the top open bracket of x
(( ↔ [, never the last position) maps U_n onto itself, keeps the PCFG probability
(the two bracket types have probability p/2 each) and changes c_x. Writing
CE_x ≥ H(P(·|x)) + P(c_x|x)·(−log q(c_x | closer, x)) (coarsening the two closers
loses no entropy), and with g = ℓ_) − ℓ_] the model's closer preference,
|g(x) − g(x′)| ≤ B_g gives

    E[CE] − optimal ≥ (1 − p) · P(U_n) · log(1 + e^{−B_g/2}).

P(U_n) is computed by a dynamic program over heights in arb; B_g is the certified
sensitivity of the functional g (:func:`closer_readout`). This certifies the bracket-
type sub-task of Hahn's proof; the sub-task "can the sequence end here" is not paired
by a one-position change of equal probability, so no floor is claimed for it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb, ctx

from attncert.errors import InputError, UnsupportedError
from attncert.model.spec import Model, Readout
from attncert.soft.certified import rigorous as R

__implements__ = ("Hahn Theorem 6",)

LOG2 = math.log(2.0)


def parity_floor(bound: float) -> float:
    """A float ≤ log(1 + e^{−B/2}) (nats)."""
    return R.log1p_exp_neg_half_lower(bound)


#: up to this many strings (2^n) the PARITY cross-entropy is computed over every string
EXHAUSTIVE_MAX = 1 << 16


@dataclass(frozen=True)
class MeasuredCE:
    """A measured cross-entropy on PARITY (floating point): over every string of length n
    (``exact``; ``half_width`` 0) or sampled, with an approximate ± 3 standard errors
    interval. ``accepts_even``: the labels' parity (PARITY or its complement)."""

    mean: float
    half_width: float
    samples: int
    exact: bool = False
    accepts_even: bool = True

    @property
    def language(self) -> str:
        """The labels' language name: ``parity`` (even) or ``parity-odd``."""
        return "parity" if self.accepts_even else "parity-odd"

    def text(self) -> str:
        """``0.6931 (all 256 strings)`` or ``3.309 ± 0.33 (1000 sampled strings)``."""
        if self.exact:
            return f"{self.mean:.4g} (all {self.samples} strings)"
        return f"{self.mean:.4g} ± {self.half_width:.2g} ({self.samples} sampled strings)"


def _binary_ce(model: Model, strings: list[str], labels: np.ndarray) -> np.ndarray:
    from attncert.soft.sensitivity import final_activation  # the readout row only

    tokens = np.array([model.encode(x) for x in strings], dtype=np.int64)
    z = final_activation(model, tokens) @ model.readout.weight + model.readout.bias
    s = np.where(labels, 1.0, -1.0)
    return np.logaddexp(0.0, -s * z)  # −log σ(±z)


def parity_membership(strings, accepts_even: bool = True) -> np.ndarray:
    """PARITY labels: even number of 1s (or odd when ``accepts_even`` is False)."""
    even = np.array([s.count("1") % 2 == 0 for s in strings])
    return even if accepts_even else ~even


def measured_parity_ce(
    model: Model,
    n: int,
    *,
    samples: int = 1000,
    seed: int = 0,
    accepts_even: bool = True,
    exhaustive_max: int = EXHAUSTIVE_MAX,
) -> MeasuredCE:
    """Binary cross-entropy of σ(z) against PARITY labels (the complement's with
    ``accepts_even`` False) on uniform strings of length n: over all 2ⁿ strings when
    2ⁿ ≤ ``exhaustive_max`` (no sampling error), else on ``samples`` sampled ones."""
    _binary_alphabet(model)
    if n <= 62 and (1 << n) <= exhaustive_max:
        total = 1 << n
        batch = max(1, min(total, (1 << 22) // max(1, model.n_tokens(n) ** 2)))
        parts = []
        for start in range(0, total, batch):
            xs = [format(k, f"0{n}b") if n else "" for k in range(start, min(total, start + batch))]
            parts.append(_binary_ce(model, xs, parity_membership(xs, accepts_even)))
        vals = np.concatenate(parts)
        return MeasuredCE(float(vals.mean()), 0.0, total, True, accepts_even)
    rng = np.random.default_rng(seed)
    rows = []
    batch = max(1, min(samples, (1 << 22) // max(1, model.n_tokens(n) ** 2)))
    while sum(len(r) for r in rows) < samples:
        xs = ["".join(rng.choice(["0", "1"], n)) for _ in range(batch)]
        rows.append(_binary_ce(model, xs, parity_membership(xs, accepts_even)))
    vals = np.concatenate(rows)[:samples]
    hw = 3.0 * float(vals.std(ddof=1)) / math.sqrt(len(vals)) if len(vals) > 1 else math.inf
    return MeasuredCE(float(vals.mean()), hw, len(vals), False, accepts_even)


def _binary_alphabet(model: Model) -> None:
    if set(model.alphabet) != {"0", "1"}:
        raise UnsupportedError(
            f"the PARITY floor pairs strings by flipping a bit; model {model.name!r} has "
            f"alphabet {''.join(model.alphabet)!r}",
            expected="the alphabet {0, 1}",
        )


def closer_readout(model: Model) -> Model:
    """The model with its readout replaced by g = ℓ_) − ℓ_] (the next-symbol head's
    preference between the two closers) at the same position."""
    r = model.readout
    if r.lm_weight is None or ")" not in r.lm_symbols or "]" not in r.lm_symbols:
        raise InputError(
            f"model {model.name!r} has no next-symbol head over ')' and ']'",
            where="readout.lm_symbols",
            expected="a 2-Dyck next-symbol model",
        )
    i, j = r.lm_symbols.index(")"), r.lm_symbols.index("]")
    w = r.lm_weight[i] - r.lm_weight[j]
    b = float(r.lm_bias[i] - r.lm_bias[j])
    if not np.all(np.isfinite(w)):
        raise InputError("the closer difference overflows", where="readout.lm_weight")
    return dataclasses.replace(model, readout=Readout(w, b, position=r.position))


def closer_weight_exact(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Enclosure of the exact difference lm_weight[')'] − lm_weight[']'] and bias (the
    float subtraction in :func:`closer_readout` may round; this is its error bound)."""
    r = model.readout
    i, j = r.lm_symbols.index(")"), r.lm_symbols.index("]")
    d = r.lm_weight[i] - r.lm_weight[j]
    return R.down(d), R.up(d)


def unbalanced_closing_probability(p: Fraction, n: int) -> tuple[float, float]:
    """Enclosure of P(U_n | length ≥ n) for the 2-Dyck PCFG with expansion probability p
    (heights DP in arb; the same chain as
    :meth:`attncert.languages.distributions.DyckDistribution.closing_unbalanced_probability`)."""
    if n < 2:
        return 0.0, 0.0
    pa = arb(p.numerator) / p.denominator
    qa = 1 - pa
    opened = [arb(0)] * (n + 2)
    closed = [arb(0)] * (n + 2)
    opened[1] = pa
    for _ in range(n - 1):
        total = [opened[h] + closed[h] for h in range(n + 2)]
        opened = [arb(0)] + [total[h] * pa for h in range(n + 1)]
        closed = [total[h + 1] * qa for h in range(n + 1)] + [arb(0)]
        # rescale by an exact float (ratios are all that matter; dividing by the ball
        # itself would compound its radius step after step)
        s = float((sum(opened, arb(0)) + sum(closed, arb(0))).mid())
        opened = [v / s for v in opened]
        closed = [v / s for v in closed]
    z = sum(opened, arb(0)) + sum(closed, arb(0))
    return R.enclose(sum(closed[1:], arb(0)) / z)


def dyck_floor(bound_g: float, p: Fraction, n: int) -> tuple[float, float]:
    """(P(U_n) lower bound, excess floor): E[CE] − optimal ≥ (1 − p)·P(U_n)·log(1 + e^{−B_g/2})."""
    pu_lo, _ = unbalanced_closing_probability(p, n)
    old = ctx.prec
    ctx.prec = 200  # the floor may be tiny (e^{−B/2}); keep it resolved and positive
    try:
        pa = arb(p.numerator) / p.denominator
        floor = (1 - pa) * arb(pu_lo) * (1 + (-arb(bound_g) / 2).exp()).log()
        return pu_lo, max(R.arb_lower(floor), 0.0)
    finally:
        ctx.prec = old
