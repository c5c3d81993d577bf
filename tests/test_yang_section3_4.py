"""Yang, Strobl, Chiang, Angluin: Definitions 1–4 cross-checked against the implementation;
Proposition 11 (first/last position) and Corollary 17 (a star-free language in LTL)
constructed, compiled and proved (issue 16 item 4)."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction

import numpy as np
import pytest

from attncert.compile import compile_formula
from attncert.compile.first_last import INVERSE_COORD, MARK_COORD, first_last_model
from attncert.model import accepts, forward, random_model
from attncert.model.forward import attention_weights
from attncert.model.spec import AttentionKind, Head, Mask, Temperature
from attncert.paper import implements
from attncert.proofcheck.catalog import ALTERNATING_AB
from attncert.prove import prove_agreement


def _head(kind, mask=Mask.NONE, temperature=None, d=2) -> Head:
    z = np.zeros((d, d))
    return Head(z, z, z, z, kind=kind, mask=mask, temperature=temperature)


def _definition_weights(kind: str, scores: list[Fraction], beta: float = 1.0) -> list[float]:
    """Yang et al. Definitions 2–3 written out: leftmost/rightmost/average hardmax and the
    temperature softmax exp(βs_j)/Σ exp(βs_k)."""
    m = max(scores)
    top = [j for j, s in enumerate(scores) if s == m]
    if kind == "leftmost":
        return [1.0 if j == top[0] else 0.0 for j in range(len(scores))]
    if kind == "rightmost":
        return [1.0 if j == top[-1] else 0.0 for j in range(len(scores))]
    if kind == "average":
        return [1.0 / len(top) if j in top else 0.0 for j in range(len(scores))]
    e = [np.exp(beta * float(s - m)) for s in scores]
    return [x / sum(e) for x in e]


@implements("Yang Definition 2")
@pytest.mark.parametrize("kind", ["leftmost", "rightmost", "average"])
def test_definition2_hardmax_with_ties(kind):
    """Every score vector over {0, 1, 2} of length ≤ 5 (ties included): the weights are
    exactly the definition's one-hot / uniform vectors."""
    head = _head(AttentionKind(kind))
    for n in range(1, 6):
        for row in itertools.product((0, 1, 2), repeat=n):
            scores = np.array([[list(row)] * n], dtype=float)
            w = attention_weights(head, scores, n)[0, 0]
            assert list(w) == _definition_weights(kind, [Fraction(x) for x in row])


@implements("Yang Definition 3")
def test_definition3_temperature_softmax():
    """β(N) = coef·N^p·log(N)^q scales the scores before the softmax; large β tends to the
    average hardmax on ties (uniform over the maxima)."""
    rng = np.random.default_rng(0)
    for t in (Temperature(1.0), Temperature(0.5, n_power=1), Temperature(2.0, log_power=1)):
        head = _head(AttentionKind.SOFTMAX, temperature=t)
        for n in (1, 3, 7):
            row = rng.normal(size=n)
            w = attention_weights(head, np.array([[row] * n]), n)[0, 0]
            want = _definition_weights("softmax", [Fraction(float(x)) for x in row], t(n))
            assert np.allclose(w, want, rtol=1e-12, atol=0)
    hot = _head(AttentionKind.SOFTMAX, temperature=Temperature(200.0))
    w = attention_weights(hot, np.array([[[0.0, 1.0, 1.0, 0.5]] * 4]), 4)[0, 0]
    assert abs(w[1] - 0.5) < 1e-12 and abs(w[2] - 0.5) < 1e-12


@implements("Yang Definition 1", "Yang Definition 4")
@pytest.mark.parametrize("kind", ["softmax", "leftmost", "rightmost", "average"])
@pytest.mark.parametrize("mask", ["none", "future", "past"])
def test_definition1_self_attention_matches_the_forward_pass(kind, mask):
    """Definition 1 written out — scores (W_Q y_i)·(W_K y_j), masked, weighted by the head's
    kind (Definition 4's transformer classes: softmax, unique-hard, average-hard), values
    W_O W_V y_j summed, residual and ReLU FFN — equals the model's forward pass layer by layer."""
    m = random_model(2, 2, 6, kind=kind, mask=mask, seed=3)
    tokens = np.array([m.encode("0110100")])
    tr = forward(m, ["0110100"])
    y = tr.embeddings[0]
    n = y.shape[0]
    for layer, lt in zip(m.layers, tr.layers, strict=True):
        att = np.zeros_like(y)
        for head in layer.heads:
            s = (y @ head.w_q.T) @ (y @ head.w_k.T).T
            for i in range(n):
                vis = [j for j in range(n) if head.mask.allowed(i, j)]
                if not vis:
                    continue
                sc = [Fraction(float(s[i, j])) for j in vis]
                w = _definition_weights(kind, sc, head.temperature(n) if kind == "softmax" else 1.0)
                att[i] += sum(
                    wj * (head.w_o @ head.w_v @ y[j]) for wj, j in zip(w, vis, strict=True)
                )
        after = y + att if layer.residual else att
        f = layer.ffn
        out = after + (np.maximum(after @ f.w1.T + f.b1, 0) @ f.w2.T + f.b2) if f else after
        assert np.allclose(out, lt.output[0], rtol=1e-10, atol=1e-12)
        y = out
    assert tokens.shape == (1, n)
    # Definition 4: hard-attention transformers are exactly those without softmax heads
    assert m.is_hard is (kind != "softmax")


@implements("Yang Proposition 11")
@pytest.mark.parametrize("which", ["first", "last"])
def test_proposition11_marks_first_and_last(which):
    m = first_last_model(which)
    r = prove_agreement(which, m, max_len=8, coordinate=MARK_COORD, cross_check=5)
    assert r.verdict == "proved"
    for s in ("a", "ab", "bab", "abbab"):
        marks = forward(m, [s]).layers[-1].output[0, :, MARK_COORD]
        want = [float(i == (0 if which == "first" else len(s) - 1)) for i in range(len(s))]
        assert list(np.round(marks, 12)) == want
    if which == "first":  # "… can compute the quantity 1/i" (after the proof)
        inv = forward(m, ["abbab"]).layers[-1].output[0, :, INVERSE_COORD]
        assert np.allclose(inv, [1 / i for i in range(1, 6)], rtol=1e-12)


def test_proposition11_needs_the_mask():
    """Mutation: without future masking the head averages over the whole string and the mark
    is wrong — the prover finds the counterexample."""
    import dataclasses

    m = first_last_model("first")
    layer = m.layers[0]
    unmasked = dataclasses.replace(
        m,
        layers=(
            dataclasses.replace(
                layer, heads=(dataclasses.replace(layer.heads[0], mask=Mask.NONE),)
            ),
            *m.layers[1:],
        ),
    )
    assert (
        prove_agreement("first", unmasked, max_len=4, coordinate=MARK_COORD).verdict
        == "counterexample"
    )


@pytest.mark.slow
@implements("Yang Corollary 17")
@pytest.mark.parametrize("regime", ["temperature", "unbounded"])
def test_corollary17_star_free_language(regime):
    """(ab)⁺ — star-free — as an LTL formula with ◁, ▷, S and U: compiled in both regimes of
    Corollary 17, proved at every position up to length 6, and the model accepts exactly
    (ab)⁺ on every string of length ≤ 8."""
    m = compile_formula(ALTERNATING_AB, regime=regime, alphabet="ab")
    patterns = " | ".join(h["pattern"] for h in m.meta["heads"])
    # all four temporal operators are simulated: ▷ (a head to j > i), ◁ (to j < i), S and U
    nxt, prv = ("even j > i", "even j < i") if regime == "temperature" else ("j = i+1", "j = i−1")
    for op in (nxt, prv, "φ S ψ", "φ U ψ"):
        assert op in patterns
    assert prove_agreement(ALTERNATING_AB, m, max_len=6, cross_check=4).verdict == "proved"
    strings = ["".join(p) for n in range(1, 9) for p in itertools.product("ab", repeat=n)]
    got = accepts(m, strings)
    want = [bool(re.fullmatch(r"(ab)+", s)) for s in strings]
    assert list(got) == want
