"""Theorem 26 for every length: write the certificate that
:mod:`attncert.kernel.tieless.checker` checks (untrusted generator).

Given the softmax simulation of a uniform–tieless average-hard transformer and the hard
program's hypotheses H1–H3 (gap γ, activations ≤ Y·N^p, margin μ), find the smallest N₀ from
which the layer-by-layer error majorants C·N^a close below the margin, and record each
layer's (C, a) rounded *up* (7 significant digits, exponents to 10⁻⁷) so that the kernel can
check every step and recognise an edit.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from flint import arb, fmpq

from attncert.errors import ParameterError
from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.tieless import checker as K
from attncert.kernel.tieless.program import Derived, NotDerived, derive
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


def derived_facts(soft: Model, n0: int, der: Derived | None = None) -> dict | None:
    """H1–H3 from the weights (:mod:`attncert.kernel.tieless.program`) as the facts record
    for tails from ``n0`` on (P(N) ≤ Y·N^p with Y = Σ c_k·n0^{k−p}); None if they do not
    follow."""
    if der is None:
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
        # the text proofs/ records, with the module's name before issue 34's move
        # (now attncert.kernel.tieless.program; docs/trust.md maps the old names)
        "derived from the weights for every length (attncert.kernel.tieless_program): "
        + "; ".join(der.heads),
    )


def _attempt(
    soft: Model,
    facts: dict | None,
    n0: int,
    der: Derived | None = None,
    structure: tuple[K.Beta, tuple[K.LayerNorms, ...]] | None = None,
) -> dict:
    """The certificate at one N₀ (``structure``: the kernel's reading of the model, when
    the caller already has it — it does not depend on N₀)."""
    from_weights = facts is None
    if facts is None:
        facts = derived_facts(soft, n0, der)
        if facts is None:
            raise K.Reject("hypotheses_derived", "H1–H3 do not follow from the weights")
    f = K._facts({"facts": facts})
    beta, norms = structure if structure is not None else K.structure(soft)
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


@dataclass(frozen=True)
class Diagnosis:
    """Why no tail closes: the first input length n at which the per-length error bound
    (Lemmas 24–25 at that N, with the derived hypotheses) fails, and at that length a string
    on which the softmax model's decision differs from the program's (found by enumeration,
    confirmed in arb) — or None when they agree on every input there (the bound is then
    insufficient, not the model wrong)."""

    first_failing_n: int | None
    counterexample: str | None
    checked_strings: int
    note: str


def diagnose(soft: Model, *, max_n: int = 64, max_strings: int = 4096) -> Diagnosis:
    """Diagnose a softmax simulation whose all-length proof does not close (see
    :class:`Diagnosis`)."""
    from attncert.compile.tieless import LengthReport, error_bound, to_average_hard, uniform_heads
    from attncert.model import accepts_exact

    hard = to_average_hard(soft)
    try:
        K.structure(soft)
        der = derive(soft)
    except K.Reject as err:
        return Diagnosis(None, None, 0, f"outside Theorem 26's simulation: {err}")
    except NotDerived as err:
        return Diagnosis(None, None, 0, f"H1–H3 do not follow from the weights: {err}")
    uni = set(uniform_heads(hard))
    gaps = {
        (li, hi): None if (li, hi) in uni else _fr(der.gap)
        for li, layer in enumerate(hard.layers)
        for hi in range(len(layer.heads))
    }
    limit = _fr(der.margin) / _fr(K.readout_l1(soft))
    temp = soft.layers[0].heads[0].temperature
    first = None
    for n in range(1, max_n + 1):
        big_n = hard.n_tokens(n)
        act = sum((_fr(c) * big_n**k for k, c in der.activation), Fraction(0))
        rep = LengthReport(n, 0, gaps, act, _fr(der.margin))
        err = error_bound(hard, rep, temp(big_n))
        if err is None or not err < arb(limit.numerator) / limit.denominator:
            first = n
            break
    if first is None:
        return Diagnosis(
            None,
            None,
            0,
            f"the per-length bound holds at every n ≤ {max_n}; only the tail majorants do "
            "not close (the bound is insufficient, not the model wrong)",
        )
    checked, n = 0, first
    while checked + len(hard.alphabet) ** n <= max_strings:
        for w in itertools.product(hard.alphabet, repeat=n):
            text = "".join(w)
            if forward_rigorous(soft, text).accept != accepts_exact(hard, text):
                return Diagnosis(
                    first,
                    text,
                    checked + 1,
                    f"the per-length bound first fails at n = {first}; at n = {n} the softmax "
                    f"model decides {text!r} differently from the program (exact program, arb "
                    "softmax): a counterexample",
                )
            checked += 1
        n += 1
    return Diagnosis(
        first,
        None,
        checked,
        f"the per-length bound first fails at n = {first}, but the softmax model agrees with "
        f"the program on all {checked} inputs of length {first}…{n - 1}: the bound is "
        "insufficient there, not (as far as checked) the model wrong",
    )


def all_lengths_certificate(soft: Model, facts: dict | None = None, *, max_n0: int = 256) -> dict:
    """The certificate with the smallest N₀ ∈ [2, ``max_n0``] (tokens) that closes; raises
    :class:`ParameterError` with the last reason when none does. ``facts`` None: H1–H3 are
    derived from the weights (``hypotheses_derived: true``); else they are the stated
    hypotheses (``false``)."""
    last = "no N₀ tried"
    der = None
    if facts is None:
        try:
            der = derive(soft)
        except NotDerived as err:
            raise ParameterError(
                f"Theorem 26's hypotheses do not follow from the weights: {err}",
                where="model",
                expected="a uniform–tieless average-hard program the rules cover, or stated facts",
            ) from None
    try:
        structure = K.structure(soft)
    except K.Reject as err:
        structure, last = None, str(err)
    for n0 in range(2, max_n0 + 1) if structure is not None else ():
        try:
            cert = _attempt(soft, facts, n0, der, structure)
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


__all__ = [
    "Diagnosis",
    "all_lengths_certificate",
    "decimal_up",
    "derived_facts",
    "diagnose",
    "facts_record",
    "power_up",
]
