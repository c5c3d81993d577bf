"""The certified sensitivity B(n) of a softmax model (Lemma 5, for this model at this n).

B(n) bounds |z(x) − z(x^i)| for every string x of length n and every changeable
position i (every input position but the readout token, Lemma 5's i < n), z the accept
logit. For each symbol σ the readout token may carry (it never changes):

* the **propagated bound**: the one-position change carried through every layer
  (:mod:`.propagate`, and at the last layer the back-substitution of :mod:`.readout`);
* the **range cap**: z_hi − z_lo, the logit's certified range over all strings with
  that readout symbol — true for *any* two strings, so it is a cap, not Lemma 5.

B_σ = min(propagated, cap) and B(n) = max_σ B_σ; :attr:`CertifiedSensitivity.source`
says which one decided, and :meth:`CertifiedSensitivity.diagnosis` names the step that
loses the most (the largest amplification of the change bound, LayerNorm constants
limited only by ε, one key able to take all the weight).

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.soft.certified.sensitivity import certify_sensitivity
    >>> c = certify_sensitivity(zoo_model("soft_parity_lm"), 64)
    >>> c.bound > 2.3  # the measured maximum is 2.35 (one '0' among '1's wins)
    True
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from attncert.errors import InputError
from attncert.model.spec import Model, Readout
from attncert.soft.certified import rigorous as R
from attncert.soft.certified.propagate import (
    Propagation,
    StepRecord,
    propagate,
    readout_token,
    sensitivity_inputs,
)

__implements__ = ("Hahn Lemma 5",)

LN_LOOSE = 10.0  # an LN step that multiplies the change bound by ≥ this is "loose"


@dataclass(frozen=True, eq=False)
class SymbolBound:
    """B for one readout symbol (None: the readout token is not an input position).
    ``slack`` bounds |z_exact − z_float| when the readout functional was rounded to float
    (the next-symbol head's difference of two rows)."""

    symbol: str | None
    prop: Propagation
    slack: float = 0.0

    @property
    def z_lo(self) -> float:
        return float(R.down(self.prop.z_lo - self.slack)) if self.slack else self.prop.z_lo

    @property
    def z_hi(self) -> float:
        return float(R.up(self.prop.z_hi + self.slack)) if self.slack else self.prop.z_hi

    @property
    def cap(self) -> float:
        return float(R.up(self.z_hi - self.z_lo))

    @property
    def propagated(self) -> float:
        if not self.slack:
            return self.prop.change
        return float(R.up(self.prop.change + 2 * self.slack))

    @property
    def bound(self) -> float:
        return min(self.cap, self.propagated)

    @property
    def source(self) -> str:
        return "propagation" if self.propagated <= self.cap else "range cap"


@dataclass(frozen=True, eq=False)
class CertifiedSensitivity:
    """B(n) and how it was obtained."""

    model_name: str
    digest: str
    n: int
    per_symbol: tuple[SymbolBound, ...]
    seconds: float

    @property
    def worst(self) -> SymbolBound:
        return max(self.per_symbol, key=lambda s: s.bound)

    @property
    def bound(self) -> float:
        return self.worst.bound

    @property
    def source(self) -> str:
        return self.worst.source

    @property
    def propagated(self) -> float:
        return max(s.propagated for s in self.per_symbol)

    @property
    def cap(self) -> float:
        return max(s.cap for s in self.per_symbol)

    def lossiest_step(self) -> tuple[StepRecord, float] | None:
        """The step whose output change bound (at the readout) grew most relative to its
        input, and the factor."""
        steps = self.worst.prop.steps
        best = None
        for prev, cur in itertools.pairwise(steps):
            if prev.other_readout <= 0:  # the first attention creates the change from 0
                continue
            f = cur.other_readout / prev.other_readout
            if best is None or f > best[1]:
                best = (cur, f)
        return best

    def ln_loose(self) -> str | None:
        """A sentence if a LayerNorm is what makes the bound loose, else None."""
        for ln in self.worst.prop.ln:
            if ln.lipschitz_max < LN_LOOSE:
                continue
            var = "mean-square" if ln.kind == "RMSNorm" else "variance"
            why = (
                f"its {var} lower bound over the box is 0, so only ε limits the constant"
                if ln.eps_only
                else f"its {var} lower bound is only {ln.var_lo_min:.3g}"
            )
            return (
                f"{ln.kind} ({ln.where}) is what makes the bound loose: Lipschitz constant "
                f"up to {ln.lipschitz_max:.3g} — {why}"
            )
        return None

    def diagnosis(self) -> str:
        """Which step loses the factor, in words."""
        w = self.worst
        parts = []
        if w.source == "range cap":
            parts.append(
                f"the one-position propagation ({w.propagated:.3g}) exceeds the logit's range "
                f"over all strings ({w.cap:.3g}), so B(n) is the range cap"
            )
        alpha = w.prop.alpha_readout
        if alpha and max(alpha) >= 0.5:
            parts.append(
                f"at the readout query one key may take weight up to {max(alpha):.3g} "
                "(score range too wide for e^Δ/(e^Δ + n − 1) to be small)"
            )
        ln = self.ln_loose()
        if ln:
            parts.append(ln)
        step = self.lossiest_step()
        if step is not None and step[1] > 1:
            s, f = step
            factor = "∞ (from 0)" if math.isinf(f) else f"{f:.3g}"
            parts.append(
                f"largest growth of the change bound: layer {s.layer} {s.step} (×{factor})"
            )
        return "; ".join(parts) if parts else "no single step dominates"


def certify_sensitivity(
    model: Model, n: int, *, lp: bool = True, readout="accept"
) -> CertifiedSensitivity:
    """B(n) for ``model`` (module docstring). ``readout`` is ``"accept"`` (the decision
    logit) or ``{"lm_difference": [a, b]}`` (ℓ_a − ℓ_b of the next-symbol head; its float
    difference is enclosed and the rounding added to every bound)."""
    t0 = time.perf_counter()
    target, err = functional_model(model, readout)
    r = readout_token(model, n)
    off = model.input_offset()
    symbols: list[str | None] = [None]
    if r is not None and 0 <= r - off < n:
        symbols = list(model.alphabet)
    props = []
    if symbols != [None] and not split_by_symbol(target, r):
        # one pass with the readout token free (it never changes): its rows are the symbols
        prop = propagate(target, sensitivity_inputs(target, n), lp=lp)
        for _k, z_lo, z_hi, ch, f_box, f_ch in prop.per_row:
            props.append(
                dataclasses.replace(
                    prop, z_lo=z_lo, z_hi=z_hi, change=ch, final_box=f_box, final_change=f_ch
                )
            )
    else:
        props = [propagate(target, sensitivity_inputs(target, n, s), lp=lp) for s in symbols]
    per = []
    for s, prop in zip(symbols, props, strict=True):
        slack = 0.0
        if err is not None:  # |(w_exact − w)·r| + |b_exact − b| over the readout vector's box
            f_abs = R.abs_max(*prop.final_box)
            slack = float(R.up(R.nonneg_matmul_up(err[0][None], f_abs[:, None])[0, 0] + err[1]))
        per.append(SymbolBound(s, prop, slack))
    return CertifiedSensitivity(model.name, model.digest, n, tuple(per), time.perf_counter() - t0)


def split_by_symbol(model: Model, r: int | None) -> bool:
    """Whether each readout symbol gets its own propagation: when the readout
    back-substitution applies (it needs the readout query's token fixed); otherwise one
    propagation serves every symbol through the readout position's rows."""
    from attncert.soft.certified.readout import eligible

    return eligible(model, r)


def functional_model(model: Model, readout):
    """(model with the readout functional, rounding error (err_w, err_b) or None)."""
    if readout == "accept":
        return model, None
    pair = readout.get("lm_difference") if isinstance(readout, dict) else None
    r = model.readout
    if not (
        isinstance(pair, (list, tuple))
        and len(pair) == 2
        and r.lm_weight is not None
        and all(p in r.lm_symbols for p in pair)
    ):
        raise InputError(
            f"readout {readout!r} for model {model.name!r}",
            expected="'accept' or {'lm_difference': [a, b]} over the next-symbol head's symbols",
        )
    i, j = (r.lm_symbols.index(p) for p in pair)
    w = r.lm_weight[i] - r.lm_weight[j]
    b = float(r.lm_bias[i] - r.lm_bias[j])
    err_w = np.maximum(R.up(w) - w, w - R.down(w))  # one rounding: ≤ an ulp
    err_b = float(max(R.up(b) - b, b - R.down(b)))
    derived = dataclasses.replace(model, readout=Readout(w, b, position=r.position))
    return derived, (err_w, err_b)
