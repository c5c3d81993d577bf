"""Lemma 5 constants and bounds: sound on real activations, refused outside Lemma 5."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from attncert.errors import ParameterError, UnsupportedError
from attncert.model import (
    Embedding,
    Head,
    Layer,
    Model,
    PosFeature,
    Readout,
    Temperature,
    random_model,
    zoo_model,
)
from attncert.model.forward import forward_tokens
from attncert.soft import bounds as B
from attncert.soft.sensitivity import _tokens, exhaustive_sensitivity

__implements__ = (
    "Hahn Lemma 5",
    "Hahn S2 eq. (34)",
    "Hahn S2 eq. (35)",
)


def _small_soft(
    seed: int, layers: int = 2, heads: int = 2, d: int = 6, scale: float = 0.1
) -> Model:
    """A random softmax model with W_Q, W_K and W₂ scaled down (smaller A and F)."""
    m = random_model(layers, heads, d, kind="softmax", seed=seed)
    from attncert.model import model_from_dict, model_to_dict

    data = model_to_dict(m)
    for layer in data["layers"]:
        for h in layer["heads"]:
            for key in ("w_q", "w_k"):
                h[key] = (np.array(h[key]) * scale).tolist()
        layer["ffn"]["w2"] = (np.array(layer["ffn"]["w2"]) * 0.3).tolist()
    return model_from_dict(data)


MODELS = [_small_soft(s) for s in range(3)] + [
    random_model(1, 1, 4, kind="softmax", seed=5),
    zoo_model("soft_parity"),
]


def test_spectral_norm_bounds_are_sound_and_tight():
    rng = np.random.default_rng(0)
    for shape in [(1, 5), (5, 1), (4, 4), (7, 3), (3, 9)]:
        m = rng.normal(size=shape)
        true = np.linalg.norm(m, 2)
        fro = float(B.spectral_norm_upper(m, "frobenius"))
        cert = float(B.spectral_norm_upper(m, "certified"))
        assert true <= cert * (1 + 1e-15) and cert <= fro * (1 + 1e-15)
        assert cert <= true * min(shape) ** (1 / 64) * (1 + 1e-9)
    assert B.spectral_norm_upper(np.zeros((3, 2))) == 0
    with pytest.raises(ParameterError):
        B.spectral_norm_upper(np.eye(2), "power")


def test_root_upper_is_an_exact_upper_bound():
    for x, r in [(Fraction(2), 2), (Fraction(10**40 + 7, 3), 64), (Fraction(1, 7), 5)]:
        u = B.root_upper(x, r)
        assert u**r >= x
        assert float(u) == pytest.approx(float(x) ** (1 / r), rel=1e-12)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_F_and_A_bound_real_activations_and_logits(model):
    c = B.lemma5_constants(model)
    rng = np.random.default_rng(1)
    for n in (1, 5, 40):
        xs = rng.integers(0, len(model.alphabet), (16, n))
        tr = forward_tokens(model, _tokens(model, xs))
        ys = [tr.embeddings] + [lt.output for lt in tr.layers]
        assert np.linalg.norm(ys[0], axis=-1).max() <= float(c.layers[0].F_in if c.layers else c.F)
        for lc, lt in zip(c.layers, tr.layers, strict=True):
            assert np.linalg.norm(ys[lc.index], axis=-1).max() <= float(lc.F_out)
            for h, head in enumerate(model.layers[lc.index - 1].heads):
                beta = head.temperature(model.n_tokens(n))
                assert np.abs(beta * lt.scores[:, h]).max() <= float(lc.A[h]) + 1e-12
    with mpmath.workprec(100):
        expected = 2 * (1 + mpmath.exp(2 * c.A) + c.L_fact)
        assert abs(c.C / expected - 1) < 1e-12


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_measured_change_never_exceeds_the_bound(model):
    c = B.lemma5_constants(model)
    for n in (2, 5, 8):
        ib = B.induction_bounds(c, model.n_tokens(n))
        for metric, bound in (
            ("logit", ib.readout_change),
            ("activation", ib.activation_change),
            ("probability", ib.probability_change),
        ):
            measured = exhaustive_sensitivity(model, n, metric).value
            assert measured <= float(bound), (n, metric)


@pytest.mark.parametrize("model", MODELS[:3], ids=lambda m: m.name)
def test_every_layer_and_position_obeys_the_induction_bounds(model):
    """‖Δy_i^{(k)}‖ ≤ δ_i^{(k)} and ‖Δy_j^{(k)}‖ ≤ δ_o^{(k)} (j ≠ i) on random pairs."""
    c = B.lemma5_constants(model)
    rng = np.random.default_rng(2)
    for n in (3, 12, 60):
        xs = rng.integers(0, 2, (20, n))
        pos = rng.integers(0, n, 20)
        xp = xs.copy()
        xp[np.arange(20), pos] ^= 1
        a = forward_tokens(model, _tokens(model, xs))
        b = forward_tokens(model, _tokens(model, xp))
        ib = B.induction_bounds(c, model.n_tokens(n))
        for lb, la, lbb in zip(ib.layers, a.layers, b.layers, strict=True):
            diff = np.linalg.norm(la.output - lbb.output, axis=-1)  # (20, N)
            at_i = diff[np.arange(20), pos + model.input_offset()]
            assert at_i.max() <= float(lb.delta_i)
            diff[np.arange(20), pos + model.input_offset()] = 0
            assert diff.max() <= float(lb.delta_o)


def test_bounds_decay_like_one_over_n_eventually():
    c = B.lemma5_constants(MODELS[0])
    big = [B.induction_bounds(c, 10**k).readout_change for k in (200, 201, 202)]
    assert float(big[0] / big[1]) == pytest.approx(10, rel=1e-6)
    assert float(big[1] / big[2]) == pytest.approx(10, rel=1e-6)


def test_published_inequality_drops_the_missing_term():
    c = B.lemma5_constants(MODELS[0])
    full = B.induction_bounds(c, 10**200)
    orig = B.induction_bounds(c, 10**200, corrected=False)
    assert all(lb.missing_term_o > 0 for lb in full.layers)
    assert all(lb.missing_term_o == 0 for lb in orig.layers)
    assert orig.readout_change < full.readout_change


def test_n0_values():
    for model in MODELS:
        c = B.lemma5_constants(model)
        # the published steps: L(1 + H^k C/n) ≤ C² for n ≥ n0
        n0 = c.n0_original
        for k in range(1, c.L + 1):
            assert c.L_fact * (1 + mpmath.mpf(c.H) ** k * c.C / n0) <= c.C**2
        n1 = B.n0_corrected(c)
        if n1 is not None:
            assert B.induction_bounds(c, n1).closed_form_holds
            assert B.induction_bounds(c, 4 * n1).closed_form_holds
            if n1 > 2:
                assert not B.induction_bounds(c, n1 - 1).closed_form_holds


def test_logit_bound_forms():
    assert B.logit_bound(mpmath.mpf(3), mpmath.mpf(2)) == 18
    assert B.logit_bound(mpmath.mpf(3), mpmath.mpf(2), "additive") == 12


# ------------------------------------------------------------------ refusals


def _one_layer(head: Head, features=(), pos_weight=None) -> Model:
    d = head.w_q.shape[1]
    word = np.eye(2, d)
    emb = Embedding(
        vocab=("0", "1"),
        word=word,
        features=tuple(features),
        pos_weight=np.zeros((d, len(features))) if pos_weight is None else pos_weight,
    )
    return Model(("0", "1"), emb, (Layer((head,)),), Readout(weight=np.ones(d)))


def _head(**kw) -> Head:
    args = dict(
        w_q=np.eye(2),
        w_k=np.eye(2),
        w_v=np.eye(2),
        w_o=np.eye(2),
        kind="softmax",
    )
    args.update(kw)
    return Head(**args)


def test_hard_attention_is_refused():
    with pytest.raises(UnsupportedError, match="soft attention") as err:
        B.lemma5_constants(zoo_model("ones_star"))
    assert err.value.where == "layers[0].heads[0]"


def test_masked_attention_is_refused():
    with pytest.raises(UnsupportedError, match="all n positions"):
        B.lemma5_constants(_one_layer(_head(mask="future")))


def test_temperature_growing_with_n_is_refused():
    with pytest.raises(ParameterError, match="parameters independent of n") as err:
        B.lemma5_constants(_one_layer(_head(temperature=Temperature(1.0, n_power=1))))
    assert err.value.where == "layers[0].heads[0].temperature"
    # a constant or decaying temperature is fine
    B.lemma5_constants(_one_layer(_head(temperature=Temperature(2.0, n_power=-1))))


def test_unbounded_positional_encoding_is_refused():
    feats = (PosFeature("i/n"), PosFeature("i"))
    pw = np.array([[1.0, 0.0], [0.0, 0.5]])
    with pytest.raises(ParameterError, match="bounded positional encodings") as err:
        B.lemma5_constants(_one_layer(_head(), feats, pw))
    assert err.value.where == "embedding.features[1]"
    assert "'i'" in str(err.value)
    # the same feature with a zero weight column has no effect and is accepted
    pw0 = np.array([[1.0, 0.0], [0.0, 0.0]])
    B.lemma5_constants(_one_layer(_head(), feats, pw0))


def test_every_bounded_feature_is_at_most_one():
    from attncert.model.positional import FEATURE_NAMES

    for name in FEATURE_NAMES:
        f = PosFeature(name, 0.7 if name in ("sin", "cos") else None)
        if f.bounded:
            assert max(abs(f.exact(i, n)) for n in (1, 2, 7, 50) for i in range(1, n + 1)) <= 1
    assert math.isinf(B.log10(mpmath.mpf(0)))
