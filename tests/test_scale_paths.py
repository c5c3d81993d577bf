"""The lean paths used at large n agree exactly with the full ones on small models:
the rigorous decision without field matrices (kernel.hard.decide.decide_tokens) against
the full rigorous forward pass, the blockwise float forward against the Trace forward,
and block rows of masks against the mask matrix."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from attncert.kernel.core.trace import forward_rigorous_tokens
from attncert.kernel.hard.decide import decide, decide_tokens
from attncert.model import harden, random_model
from attncert.model.spec import Mask

sys.path.insert(0, str(Path(__file__).parent))
from test_kernel_near_ties import near_tie_model
from test_model_v2 import v2_model


def _models():
    out = [random_model(2, 2, 8, seed=s) for s in range(3)]
    out += [
        random_model(2, 2, 8, seed=1, kind="average"),
        random_model(2, 1, 8, seed=2, kind="rightmost", mask="future"),
        random_model(1, 2, 4, seed=4, kind="average", features=()),  # many exact ties
    ]
    for seed in range(2):
        for v in (
            {},
            {"norm_position": "post", "readout": "last"},
            {"activation": "gelu_tanh", "readout": "first"},
            {"activation": "relu"},
        ):
            out.append(harden(v2_model(seed, **v)))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("index", range(14))
def test_lean_rigorous_decision_equals_the_full_forward_pass(index):
    model = _models()[index]
    rng = np.random.default_rng(index)
    for n in (1, 2, 5, 9, 16):
        for _ in range(4):
            s = "".join(rng.choice(list(model.alphabet), n))
            toks = model.encode(s)
            assert decide_tokens(model, toks) == forward_rigorous_tokens(model, toks).accept, s


@pytest.mark.slow
def test_lean_decision_at_near_and_exact_ties():
    """The near-tie model: scores 2⁻⁶⁶ apart are decided in the field (the float
    enclosures overlap), and the lean and full passes agree on every string ≤ 6."""
    from itertools import product

    m = near_tie_model()
    for n in range(1, 7):
        for s in map("".join, product("01", repeat=n)):
            assert decide(m, s) == forward_rigorous_tokens(m, m.encode(s)).accept
            assert decide(m, s) == ("1" not in s)


def test_mask_rows_equal_the_mask_matrix():
    for mask in Mask:
        full = mask.matrix(9)
        rows = np.array([0, 3, 8])
        got = mask.rows(rows, 9)
        want = full[rows]
        assert (got is None and want.all()) or np.array_equal(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("block", [1, 3, 1 << 22])
def test_blockwise_float_forward_equals_the_trace_forward(block, monkeypatch):
    import importlib

    fw = importlib.import_module("attncert.model.forward")
    monkeypatch.setattr(fw, "_BLOCK_ENTRIES", block)
    rng = np.random.default_rng(block)
    models = [
        *_models(),
        random_model(2, 2, 8, seed=1, kind="softmax"),
        random_model(2, 2, 8, seed=2, kind="softmax", mask="future_strict"),
        random_model(1, 1, 4, seed=3, kind="rightmost", mask="past_strict", features=()),
    ]
    for model in models:
        for n in (1, 6, 13):
            strings = ["".join(rng.choice(list(model.alphabet), n)) for _ in range(3)]
            full = fw.forward(model, strings)
            lean = fw.forward(model, strings, keep_attention=False)
            assert lean.layers[0].scores is None and lean.layers[0].weights is None
            unique = all(
                h.kind.value in ("leftmost", "rightmost") for ly in model.layers for h in ly.heads
            )
            for a, b in zip(full.layers, lean.layers, strict=True):
                if unique:  # a gather is what the one-hot product computes, exactly
                    assert np.array_equal(a.head_values, b.head_values), model.name
                    assert np.array_equal(a.output, b.output)
                else:  # blocks of a dense product: equal up to its rounding
                    assert np.allclose(a.output, b.output, rtol=1e-12, atol=1e-12)
            if unique:
                assert np.array_equal(full.logits, lean.logits)
            assert np.array_equal(full.accept, lean.accept)


def test_top_columns_finds_the_k_largest_entries():
    from attncert.arith.filter import top_columns

    rng = np.random.default_rng(0)
    for n in (3, 300, 1100, 5000):
        for k in (1, 5, 9):
            a = rng.standard_normal((20, n))
            a[3] = -np.inf
            a[4, : n // 2] = 7.0  # many ties at the top
            a[5, -1] = 50.0  # the largest entry in the short last block
            got = top_columns(a, min(k, n))
            for r in range(20):
                assert len(set(got[r].tolist())) == len(got[r])
                want = np.sort(a[r])[::-1][: min(k, n)]
                assert np.array_equal(np.sort(a[r, got[r]])[::-1], want), (n, k, r)


def test_binomial_tail_in_integers_equals_the_rational_sum():
    """Lemma 21's exact tail (S1 statements of the certify trace), computed as one
    fraction, equals the term-by-term rational sum."""
    import math
    from fractions import Fraction as F

    from attncert.symbolic.oracles import binomial_tail

    def ref(m, q, t):
        return sum(
            (math.comb(m, x) * q**x * (1 - q) ** (m - x) for x in range(m + 1) if x > t), F(0)
        )

    for m in (0, 1, 2, 5, 17, 60):
        for q in (F(0), F(1), F(1, 10), F(3, 7), F(1, 2)):
            for t in (F(-1), F(-5, 2), F(0), F(1, 3), F(2), F(7, 2), F(m), F(m + 1)):
                assert binomial_tail(m, q, t) == ref(m, q, t), (m, q, t)
