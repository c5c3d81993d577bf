"""The horizon's pattern bound is sound (issue 40): for every model kind, every pattern
kind (free middle, a bounded symbol count, a first occurrence) and every length of a short
interval, the logit of every string of the pattern — enumerated, by the float forward pass
— lies in the range the kernel derives (:func:`attncert.kernel.horizon.bound.pattern_range`).
ALiBi inside β, a causal mask, RoPE over every angle, features over an interval, hard heads
and β = log N each have a case; a bound that leaves a logit outside fails here."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from attncert.kernel.horizon.bound import pattern_range
from attncert.kernel.horizon.classes import Pattern
from attncert.model import forward, random_model, zoo_model
from attncert.model.decoders import random_decoder
from attncert.model.testbeds import first_symbol_model

TOL = 1e-9  # the float pass's own error on these small models


def _strings(pat: Pattern, n: int, alphabet):
    m = n - pat.fixed
    for mid in itertools.product(alphabet, repeat=m):
        x = "".join(mid)
        if any(not (a <= x.count(s) <= (m if b is None else b)) for s, a, b in pat.counts):
            continue
        if pat.first is not None:
            tau, t_lo, t_hi = pat.first
            if tau not in x:
                continue
            big_n = n + (1 if MODEL_BOS.get(id(pat)) else 0)
            i_star = len(pat.u) + x.index(tau) + 1 + MODEL_BOS.get(id(pat), 0)
            if not (
                t_lo <= Fraction(i_star, big_n) and (t_hi is None or Fraction(i_star, big_n) < t_hi)
            ):
                continue
        yield pat.u + x + pat.w


MODEL_BOS: dict = {}


def _alibi_testbed():
    """The test bed with ALiBi (slope 0.3) under β = 0.5: no norm, a ReLU FFN — the bound is
    tight, so ALiBi's term outside β instead of inside would miss the logits."""
    import dataclasses

    from attncert.model.spec import Temperature

    m = first_symbol_model(2.0, 0.5)
    layer = m.layers[0]
    head = dataclasses.replace(layer.heads[0], alibi=0.3, temperature=Temperature(0.5))
    return dataclasses.replace(m, layers=(dataclasses.replace(layer, heads=(head,)),))


MODELS = {
    "testbed-alibi-beta": _alibi_testbed,
    "encoder-features": lambda: random_model(1, 2, 8, kind="softmax", seed=3),
    "nope-causal-ln": lambda: random_decoder(2, 2, 8, positions="none", seed=1),
    "alibi-causal": lambda: random_decoder(2, 2, 8, positions="alibi", seed=2),
    "rope-rms-swiglu": lambda: random_decoder(
        1, 2, 8, positions="rope", norm="rms", mlp="swiglu", seed=3
    ),
    "testbed-gamma": lambda: first_symbol_model(2.0, 0.9),
    "testbed-log-beta": lambda: first_symbol_model(2.0, temperature="log"),
    "testbed-hard": lambda: first_symbol_model(1.0, kind="leftmost"),
    "trained-alibi": lambda: zoo_model("trained_alibi_first_last"),
}

PATTERNS = [
    lambda lo, hi: Pattern(lo, hi, "0", "1"),
    lambda lo, hi: Pattern(lo, hi, "1", "1", (("0", 1, None),)),
    lambda lo, hi: Pattern(lo, hi, "", "0", (("1", 0, 2),)),
    lambda lo, hi: Pattern(lo, hi, "1", "0", first=("0", Fraction(0), Fraction(1, 2))),
    lambda lo, hi: Pattern(lo, hi, "0", "0", first=("1", Fraction(1, 3), None)),
]


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize(
    "make", PATTERNS, ids=["free", "count>=1", "count<=2", "first-lo", "first-hi"]
)
@pytest.mark.parametrize(("lo", "hi", "bins"), [(6, 6, 1), (6, 6, 0), (5, 8, 3)])
def test_every_logit_of_the_pattern_lies_in_the_bound(name, make, lo, hi, bins):
    model = MODELS[name]()
    pat = make(lo, hi)
    if bins == 0 and pat.first is not None:
        bins = 7  # a first-occurrence pattern takes relative bins
    MODEL_BOS[id(pat)] = int(model.bos is not None)
    r = pattern_range(model, pat, bins)
    strings = [s for n in range(lo, hi + 1) for s in _strings(pat, n, model.alphabet)]
    assert strings, "the pattern is empty: the test would check nothing"
    for n in range(lo, hi + 1):
        batch = [s for s in strings if len(s) == n]
        if not batch:
            continue
        z = forward(model, batch).logits
        assert all(r.z_lo - TOL <= v <= r.z_hi + TOL for v in z), (
            name,
            pat.text(),
            bins,
            float(min(z)),
            float(max(z)),
            r,
        )
    assert math.isfinite(r.z_lo) and math.isfinite(r.z_hi)
