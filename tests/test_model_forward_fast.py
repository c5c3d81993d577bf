"""The float forward pass's fast path (issue 42): every softmax head of a layer at once
(:mod:`attncert.model.fused`), blocks of strings, token ids without a loop per string
(:mod:`attncert.model.tokens`) — the same numbers as the head-by-head evaluation, up to
float rounding, on every model kind; and the same errors."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

from attncert.errors import InputError
from attncert.model import fused, random_model, zoo_model
from attncert.model.decoders import random_decoder
from attncert.model.tokens import encode_batch

fw = importlib.import_module(
    "attncert.model.forward"
)  # the module (the package exports a function)


def _gqa():
    m = random_decoder(2, 4, 16, positions="rope", seed=3)
    layers = []
    for layer in m.layers:
        hs = list(layer.heads)
        for h in (1, 3):
            hs[h] = dataclasses.replace(hs[h], w_k=hs[h - 1].w_k.copy(), w_v=hs[h - 1].w_v.copy())
        layers.append(dataclasses.replace(layer, heads=tuple(hs)))
    return dataclasses.replace(m, layers=tuple(layers), name="gqa")


MODELS = {
    "rope rms swiglu": lambda: random_decoder(2, 2, 8, seed=1),
    "alibi layernorm gelu parallel": lambda: random_decoder(
        2, 2, 8, positions="alibi", norm="layer", mlp="gelu", parallel=True, seed=2
    ),
    "nope encoder": lambda: random_decoder(1, 2, 8, positions="none", causal=False, seed=3),
    "grouped-query rope": _gqa,
    "strict mask |Σ| = 3": lambda: random_model(
        2, 2, 6, kind="softmax", seed=4, alphabet="abc", mask="future_strict"
    ),
    "trained_alibi_dyck1": lambda: zoo_model("trained_alibi_dyck1"),
    "soft_parity (temperature, BOS/EOS)": lambda: zoo_model("soft_parity"),
}


def _strings(model, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list(model.alphabet), n)) for _ in range(k)]


def _close(a, b):
    scale = max(1.0, float(np.max(np.abs(np.nan_to_num(a, neginf=0.0)), initial=0.0)))
    assert a.shape == b.shape
    assert np.array_equal(np.isinf(a), np.isinf(b))
    fin = np.isfinite(a)
    assert np.max(np.abs(a[fin] - b[fin]), initial=0.0) <= 1e-12 * scale


@pytest.mark.parametrize("build", list(MODELS.values()), ids=list(MODELS))
def test_the_fused_pass_equals_the_head_by_head_pass(build, monkeypatch):
    model = build()
    assert all(fused.plan(layer) is not None for layer in model.layers if layer.heads)
    for n in (1, 5, 12):
        strings = _strings(model, n, 30, seed=n)
        fast = fw.forward(model, strings)
        lean = fw.forward(model, strings, keep_attention=False)
        with monkeypatch.context() as mp:
            mp.setattr(fused, "plan", lambda layer: None)  # the general, head-by-head path
            slow = fw.forward(model, strings)
        for a, b, c in zip(fast.layers, slow.layers, lean.layers, strict=True):
            for name in ("scores", "weights", "head_values", "after_attention", "output"):
                _close(getattr(a, name), getattr(b, name))
            assert c.scores is None and c.weights is None
            _close(c.output, a.output)
        _close(fast.logits, slow.logits)
        assert np.array_equal(fast.accept, slow.accept)
        assert np.array_equal(fast.accept, lean.accept)


def test_blocks_of_strings_give_the_unblocked_trace(monkeypatch):
    model = _gqa()
    strings = _strings(model, 9, 50)
    whole = fw.forward(model, strings, keep_attention=False)
    monkeypatch.setattr(fw, "_STRING_CELLS", 1)  # one string per block
    parts = fw.forward(model, strings, keep_attention=False)
    for a, b in zip(whole.layers, parts.layers, strict=True):
        assert a.scores is None is b.scores
        for name in ("head_values", "after_attention", "output"):
            _close(getattr(a, name), getattr(b, name))
    _close(whole.logits, parts.logits)
    _close(whole.final, parts.final)
    assert np.array_equal(whole.tokens, parts.tokens)


def test_grouped_query_heads_share_their_projections():
    model = _gqa()
    p = fused.plan(model.layers[0])
    d_k = model.layers[0].heads[0].w_q.shape[0]
    assert p.w_q.shape[1] == 4 * d_k and p.w_k.shape[1] == 2 * d_k == p.w_v.shape[1]
    assert p.k_of.tolist() == [0, 0, 1, 1] == p.v_of.tolist()
    assert fused.plan(model.layers[0]) is p  # cached per layer


def test_layers_that_do_not_stack_take_the_general_path():
    hard = random_model(1, 2, 8, seed=5)  # leftmost hard heads
    assert fused.plan(hard.layers[0]) is None
    m = random_model(1, 2, 6, kind="softmax", seed=6)
    h0, h1 = m.layers[0].heads
    mixed = dataclasses.replace(
        m,
        layers=(
            dataclasses.replace(m.layers[0], heads=(h0, dataclasses.replace(h1, mask="past"))),
        ),
    )
    assert fused.plan(mixed.layers[0]) is None
    s = _strings(mixed, 6, 5)
    assert fw.forward(mixed, s).logits.shape == (5,)


def test_token_ids_without_a_loop_are_model_encode():
    for model in (
        zoo_model("soft_parity"),
        zoo_model("trained_alibi_dyck1"),
        random_model(1, 1, 4),
    ):
        strings = [*_strings(model, 7, 20), "".join(model.alphabet[:1]) * 7]
        got = encode_batch(model, strings)
        assert got.dtype == np.int64
        assert got.tolist() == [model.encode(s) for s in strings]
    m = zoo_model("soft_parity")
    assert encode_batch(m, [("0", "1")]).tolist() == [m.encode(("0", "1"))]
    assert encode_batch(m, []).shape == (0, m.n_tokens(0))


def test_token_ids_refuse_what_model_encode_refuses():
    m = zoo_model("trained_alibi_dyck1")
    with pytest.raises(InputError) as got:
        encode_batch(m, ["()", "(x", "z)"])
    with pytest.raises(InputError) as want:
        m.encode("(x")
    assert str(got.value) == str(want.value)
    with pytest.raises(InputError, match="equal length"):
        encode_batch(m, ["()", "("])
    with pytest.raises(InputError, match="bare string"):
        fw.forward(m, "()")


def test_the_vectorized_erf_is_the_c_librarys_within_two_ulps():
    import math

    from attncert.model.erf import erf

    rng = np.random.default_rng(9)
    edges = [0.0, -0.0, 1e-300, -1e-20, 1 / 16, 1 / 16 + 2.0**-60, 5.999, 6.0, 6.01, -7.0, 1e300]
    x = np.concatenate([rng.normal(size=20000) * 3, rng.uniform(-6.5, 6.5, 20000), edges])
    want = np.array([math.erf(v) for v in x.tolist()])
    got = erf(x)
    assert np.all(np.abs(got - want) <= 2 * np.spacing(np.abs(want)))
    assert erf(np.array([np.inf, -np.inf])).tolist() == [1.0, -1.0]
    assert np.isnan(erf(np.array([np.nan])))[0]
