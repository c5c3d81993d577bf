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

import itertools
import math
import time
from dataclasses import dataclass

from attncert.model.spec import Model
from attncert.soft.certified.propagate import (
    Propagation,
    StepRecord,
    propagate,
    readout_token,
    sensitivity_inputs,
)

LN_LOOSE = 10.0  # an LN step that multiplies the change bound by ≥ this is "loose"


@dataclass(frozen=True, eq=False)
class SymbolBound:
    """B for one readout symbol (None: the readout token is not an input position)."""

    symbol: str | None
    prop: Propagation

    @property
    def cap(self) -> float:
        return self.prop.cap

    @property
    def propagated(self) -> float:
        return self.prop.change

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
            if prev.other_readout > 0:
                f = cur.other_readout / prev.other_readout
            elif cur.other_readout > 0:
                f = math.inf
            else:
                continue
            if best is None or f > best[1]:
                best = (cur, f)
        return best

    def ln_loose(self) -> str | None:
        """A sentence if a LayerNorm is what makes the bound loose, else None."""
        for ln in self.worst.prop.ln:
            if ln.lipschitz_max < LN_LOOSE:
                continue
            why = (
                "its variance lower bound over the box is 0, so only ε limits the constant"
                if ln.eps_only
                else f"its variance lower bound is only {ln.var_lo_min:.3g}"
            )
            return (
                f"LayerNorm ({ln.where}) is what makes the bound loose: Lipschitz constant "
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


def certify_sensitivity(model: Model, n: int, *, lp: bool = True) -> CertifiedSensitivity:
    """B(n) for ``model`` (module docstring)."""
    t0 = time.perf_counter()
    r = readout_token(model, n)
    off = model.input_offset()
    symbols: list[str | None] = [None]
    if r is not None and 0 <= r - off < n:
        symbols = list(model.alphabet)
    per = tuple(
        SymbolBound(s, propagate(model, sensitivity_inputs(model, n, readout_symbol=s), lp=lp))
        for s in symbols
    )
    return CertifiedSensitivity(model.name, model.digest, n, per, time.perf_counter() - t0)
