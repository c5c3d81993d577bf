"""Theorem 26 for every length: write the certificate that
:mod:`attncert.kernel.tieless_all_lengths` checks (untrusted generator).

Given the softmax simulation of a uniform–tieless average-hard transformer and the hard
program's hypotheses H1–H3 (gap γ, activations ≤ Y·N^p, margin μ), find the smallest N₀ from
which the layer-by-layer error majorants C·N^a close below the margin, and record each
layer's (C, a) rounded *up* (7 significant digits, exponents to 10⁻⁷) so that the kernel can
check every step and recognise an edit.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

from flint import arb, fmpq

from attncert.errors import ParameterError
from attncert.kernel import tieless_all_lengths as K
from attncert.kernel.tieless_program import NotDerived, derive
from attncert.model.spec import Model

__implements__ = ("Yang Theorem 26",)

DIGITS = 7


def _fr(x: fmpq) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def decimal_up(x: Fraction, digits: int = DIGITS) -> str:
    """The smallest decimal with ``digits`` significant digits that is ≥ x (x > 0)."""
    k = math.floor(math.log10(x)) if x > 0 else 0
    while Fraction(10) ** k > x:
        k -= 1
    while Fraction(10) ** (k + 1) <= x:
        k += 1
    scale = Fraction(10) ** (k - digits + 1)
    q = x / scale
    return str(Decimal(-(-q.numerator // q.denominator)).scaleb(k - digits + 1))


def power_up(a: fmpq) -> str:
    """a rounded up to a multiple of 10⁻⁷ (exact decimal)."""
    q = _fr(a) * 10**7
    return str(Decimal(-(-q.numerator // q.denominator)).scaleb(-7))


def facts_record(
    gap: Fraction, act_coef: Fraction, act_power: int, margin: Fraction, basis: str
) -> dict:
    return {
        "gap": str(gap),
        "activation": {"coef": str(act_coef), "power": str(act_power)},
        "margin": str(margin),
        "basis": basis,
    }


def derived_facts(soft: Model, n0: int) -> dict | None:
    """H1–H3 from the weights (:mod:`attncert.kernel.tieless_program`) as the facts record
    for tails from ``n0`` on (P(N) ≤ Y·N^p with Y = Σ c_k·n0^{k−p}); None if they do not
    follow."""
    try:
        der = derive(soft)
    except NotDerived:
        return None
    power = max(k for k, _ in der.activation)
    coef = sum((c * fmpq(n0) ** (k - power) for k, c in der.activation), fmpq(0))
    return facts_record(
        _fr(der.gap),
        _fr(coef),
        power,
        _fr(der.margin),
        "derived from the weights for every length (attncert.kernel.tieless_program): "
        + "; ".join(der.heads),
    )


def _attempt(soft: Model, facts: dict | None, n0: int) -> dict:
    from_weights = facts is None
    if facts is None:
        facts = derived_facts(soft, n0)
        if facts is None:
            raise K.Reject("hypotheses_derived", "H1–H3 do not follow from the weights")
    f = K._facts({"facts": facts})
    beta, norms = K.structure(soft)
    kappa = beta.kappa(n0)
    prev = K.Majorant(fmpq(0), None)
    steps: list[dict[str, Any]] = []
    for li, ln in enumerate(norms):
        derived = K.layer_step(prev, ln, f, kappa, n0, f"model.layers[{li}]")
        if derived is None:
            cur = K.Majorant(fmpq(0), None)
            steps.append({"coef": "0", "power": None})
        else:
            c, a = derived
            power = K.q_of(power_up(a), "power")
            need = c * arb(n0) ** K._a(a - power)
            coef = decimal_up(_fr(K.up(need)))
            cur = K.Majorant(K.q_of(coef, "coef"), power)
            steps.append({"coef": coef, "power": power_up(a)})
        prev = cur
    if prev.power is None:
        final = "0"
    else:
        if prev.power > 0:
            raise K.Reject("steps", f"the last layer's error grows like N^{prev.power}")
        bound = K._a(K.readout_l1(soft)) * K._a(prev.coef) * arb(n0) ** K._a(prev.power)
        final = decimal_up(_fr(K.up(bound)))
    if not Fraction(final) < Fraction(facts["margin"]):
        raise K.Reject("final_bound", f"{final} is not below the margin {facts['margin']}")
    return {
        "kind": K.PROOF_KIND,
        "theorem": "Yang et al. Theorem 26 (Lemmas 24–25) at every length N ≥ N0",
        "n0_tokens": n0,
        "temperature": str(beta),
        "facts": facts,
        "hypotheses_derived": from_weights,
        "hypotheses": list(K.HYPOTHESES),
        "steps": steps,
        "final_bound": final,
    }


def all_lengths_certificate(soft: Model, facts: dict | None = None, *, max_n0: int = 256) -> dict:
    """The certificate with the smallest N₀ ∈ [2, ``max_n0``] (tokens) that closes; raises
    :class:`ParameterError` with the last reason when none does. ``facts`` None: H1–H3 are
    derived from the weights (``hypotheses_derived: true``); else they are the stated
    hypotheses (``false``)."""
    last = "no N₀ tried"
    for n0 in range(2, max_n0 + 1):
        try:
            cert = _attempt(soft, facts, n0)
        except K.Reject as err:
            last = str(err)
            continue
        report = K.check(cert, soft)
        if not report.accepted:  # the generator and the kernel must agree
            raise AssertionError(report.summary())
        return cert
    raise ParameterError(
        f"no N₀ ≤ {max_n0} closes Theorem 26's error recursion below the margin: {last}",
        where="temperature",
        expected="a larger β(N) (or a smaller activation bound)",
    )


__all__ = ["all_lengths_certificate", "decimal_up", "derived_facts", "facts_record", "power_up"]
