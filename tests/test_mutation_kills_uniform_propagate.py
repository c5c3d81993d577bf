"""The length-uniform propagation (:mod:`attncert.kernel.uniform.propagate`) where the
random and zoo models of ``test_soft_uniform.py`` leave it loose: a head whose BOS value
dominates (the single-position classes' weight bounds the output both ways, tightly), the
inverse temperature's range, and which LayerNorm the readout reads (issue 34: mutation
score)."""

from __future__ import annotations

import dataclasses

import numpy as np
from test_model_v2 import v2_model
from test_soft_uniform import _check_sound

from attncert.kernel.uniform.propagate import _beta, _sphere_norm, propagate_uniform
from attncert.model.spec import Embedding, Head, Layer, Model, Readout, Temperature


def _bos_heavy(bos_value: float = 10.0) -> Model:
    """Uniform attention (zero scores) over BOS (value b) and n symbols (value 0 or 1):
    z = (b + #1)/N; for b = 10 its range over every N ≥ N₀' = 5 is (0, 14/5], for b = −½
    it is [−1/10, 1)."""
    word = np.array([[0.0, 1.0], [1.0, 1.0], [bos_value, 1.0]])
    head = Head(
        w_q=np.array([[0.0, 1.0]]),
        w_k=np.array([[1.0, 0.0]]),
        w_v=np.array([[1.0, 0.0]]),
        w_o=np.array([[1.0], [0.0]]),
        kind="softmax",
        temperature=Temperature(0.0),
    )
    return Model(
        alphabet=("0", "1"),
        embedding=Embedding(("0", "1", "B"), word),
        layers=(Layer((head,), None, residual=False),),
        readout=Readout(np.array([1.0, 0.0]), 0.0, position="last"),
        name="bos-heavy",
        bos="B",
    )


def test_a_dominant_bos_value_is_bounded_both_ways_and_tightly():
    model = _bos_heavy()
    _check_sound(model, 4, 1, n_max=8)  # every logit inside, every change below K/n
    for row in propagate_uniform(model, 4, 1).rows:
        # sup = 14/5 at N = 5 (all ones), inf → 0 as N grows: both ends within rounding
        assert abs(row.z_hi - 14 / 5) < 1e-12 and -1e-12 < row.z_lo <= 0.0


def test_a_bos_value_just_below_the_others_bounds_the_minimum_tightly():
    model = _bos_heavy(-0.5)
    _check_sound(model, 4, 1, n_max=8)
    for row in propagate_uniform(model, 4, 1).rows:
        # inf = −½/5 at N = 5 (all zeros); sup → 1 as N grows
        assert abs(row.z_lo + 1 / 10) < 1e-12 and 1.0 <= row.z_hi < 1.0 + 1e-12


def test_the_inverse_temperature_s_range_over_every_length():
    def head(t: Temperature):
        return dataclasses.replace(_bos_heavy().layers[0].heads[0], temperature=t)

    assert _beta(head(Temperature(2.0)), 9) == (2.0, 2.0)
    lo, hi = _beta(head(Temperature(1.0, n_power=-0.5)), 9)  # β(N) = N^−½ ∈ (0, 1/3]
    assert lo == 0.0 and 1 / 3 <= hi < 1 / 3 + 1e-15
    lo, hi = _beta(head(Temperature(-1.0, n_power=-0.5)), 9)
    assert -1 / 3 - 1e-15 < lo <= -1 / 3 and hi == 0.0


def test_the_readout_reads_the_final_norm_when_there_is_one():
    post = v2_model(1, norm_position="post", activation="relu", readout="last")
    last = post.layers[-1]
    assert post.final_norm is not None and not last.pre_norm and last.norm2 is not None
    assert _sphere_norm(post) is post.final_norm  # not the last layer's own norm
    without = dataclasses.replace(post, final_norm=None)
    assert _sphere_norm(without) is last.norm2


def _flip_temperature(model: Model) -> Model:
    """The same function with every score's sign moved from W_Q into β: β·q·k is
    (−β)·(−q)·k, so every sound propagation must give the same numbers."""
    layers = []
    for layer in model.layers:
        heads = []
        for h in layer.heads:
            t = h.temperature
            flipped = Temperature(-t.coef, t.n_power, t.log_power)
            heads.append(dataclasses.replace(h, w_q=-h.w_q, temperature=flipped))
        layers.append(dataclasses.replace(layer, heads=tuple(heads)))
    return dataclasses.replace(model, layers=tuple(layers), name=model.name + "-flipped")


def test_a_negative_decreasing_temperature_bounds_the_score_drift_by_its_size():
    """β(N) = −2·N^(−½) lies in [β(N₀'), 0]: the drift of the scores in layer 2 is
    |β|·…, and |β| is the lower end's size, not the upper end's (0)."""
    from test_soft_uniform_decoders import tame

    from attncert.model.decoders import random_decoder

    # tamed: small scores, so layer 2's score drift is a visible part of its change (with
    # the untamed weights e^Δ's one-key term swamps it)
    base = tame(
        random_decoder(2, 2, 8, positions="none", norm="layer", mlp="gelu", seed=3, causal=False)
    )
    layers = tuple(
        dataclasses.replace(
            layer,
            heads=tuple(
                dataclasses.replace(h, temperature=Temperature(2.0, -0.5)) for h in layer.heads
            ),
        )
        for layer in base.layers
    )
    model = dataclasses.replace(base, layers=layers)
    pos, neg = propagate_uniform(model, 8), propagate_uniform(_flip_temperature(model), 8)
    assert _beta(_flip_temperature(model).layers[1].heads[0], 10)[1] == 0.0
    assert [s.other for s in pos.steps] == [s.other for s in neg.steps]
    assert [r.k_tok for r in pos.rows] == [r.k_tok for r in neg.rows]


def test_pre_norm_layers_normalise_before_attention_not_after():
    """A pre-norm layer's steps: the attention reads LN₁(y), the FFN LN₂(y), no norm after
    either (a post-norm layer records 'norm1' and 'norm2' steps instead)."""
    from attncert.model.decoders import random_decoder

    pre = random_decoder(2, 2, 8, positions="rope", seed=1, causal=False)
    labels = [s.label for s in propagate_uniform(pre, 8).steps]
    assert labels == [
        "embedding",
        "layer 1 attention",
        "layer 1 ffn",
        "layer 2 attention",
        "layer 2 ffn",
        "final norm",
    ]


def test_post_norm_layers_record_each_norm_of_their_own_layer():
    from test_soft_uniform import _unmask

    post = _unmask(v2_model(11, norm_position="post", activation="relu", readout="first"))
    labels = [s.label for s in propagate_uniform(post, 4).steps]
    assert labels == [
        "embedding",
        *[f"layer {k} {step}" for k in (1, 2) for step in ("attention", "norm1", "ffn", "norm2")],
        "final norm",
    ]


def _shifted_values(shift: float) -> Model:
    """Uniform attention over n symbols whose values are x + ``shift``: the one-key change
    is a *difference* of values, the same for every shift."""
    word = np.array([[0.0, 1.0], [1.0, 1.0]])  # (x, 1)
    head = Head(
        w_q=np.array([[0.0, 1.0]]),
        w_k=np.array([[1.0, 0.0]]),
        w_v=np.array([[1.0, shift]]),
        w_o=np.array([[1.0], [0.0]]),
        kind="softmax",
        temperature=Temperature(1.0),
    )
    return Model(
        alphabet=("0", "1"),
        embedding=Embedding(("0", "1"), word),
        layers=(Layer((head,), None, residual=False),),
        readout=Readout(np.array([1.0, 0.0]), 0.0, position="last"),
        name=f"shifted-{shift}",
    )


def test_the_one_key_change_does_not_depend_on_where_the_values_sit():
    """|Δ output| from one key is ≤ (N − 1)a·max(v_hi − M_lo, M_hi − v_lo): a spread of
    values, so shifting every value by 3 changes no coefficient (and K stays e·N₀/(N₀ − 1)
    times the value range 1)."""
    ks = {s: propagate_uniform(_shifted_values(s), 9).rows[0].k_tok for s in (0.0, 3.0, -3.0)}
    # equal up to the outward rounding of the shifted values (an ulp), not a factor
    assert all(abs(k / ks[0.0] - 1) < 1e-12 for k in ks.values()), ks
    assert 2.0 < float(ks[0.0]) < 2.8  # e^Δ·(value range 1) with Δ = 1: e ≈ 2.718
