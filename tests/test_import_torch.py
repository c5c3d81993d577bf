"""The PyTorch importer against PyTorch's own forward pass (issue 14 item 3).

Each configuration — norm_first True/False, final norm, ReLU/GELU, causal masks given
as ``is_causal`` + ``generate_square_subsequent_mask`` or as an explicit mask,
batch_first either way, float32 and float64, the fused fast path (eval + no_grad) and
the slow path — is imported once and compared with PyTorch on 100 random strings of
lengths 1..64: max |logit difference| ≤ 1e-5 (and the same for every activation the
readout reads). Which PyTorch path ran is observed, not assumed. Then the refusals,
each naming module and field.
"""

from __future__ import annotations

import functools
import math
import sys
import warnings

import numpy as np
import pytest
from lazy_import import lazy_importorskip

from attncert.errors import SpecError, UnsupportedError
from attncert.model import Mask, PosFeature, forward
from attncert.model.importers import model_from_torch
from attncert.model.positional import feature_matrix

torch = lazy_importorskip("torch")  # imported at first use, not at collection

FEATURES = (PosFeature("i/n"), PosFeature("(-1)^i"), PosFeature("1/i"))
TOL = 1e-5


def _randomize(module, seed, scale=0.5):
    """Every parameter random (LayerNorm weights around 1), so that a transposed
    matrix, a swapped bias or a dropped norm cannot hide."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.3 * noise)
            else:
                p.copy_(scale * noise)


@functools.cache
def _net_class():
    """The test network (a torch module class, defined at first use)."""
    nn = torch.nn

    class Net(nn.Module):
        """Embedding + positional features (attncert's own feature matrix) + encoder + readout."""

        def __init__(self, encoder, d, vocab, position):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Linear(len(FEATURES), d, bias=False)
            self.encoder = encoder
            self.head = nn.Linear(d, 1)
            self.position = position

        def hidden(self, tokens, batch_first, mask=None, is_causal=False):
            n = tokens.shape[1]
            phi = torch.tensor(feature_matrix(FEATURES, n), dtype=self.emb.weight.dtype)
            x = self.emb(tokens) + self.pos(phi)[None]
            if not batch_first:
                x = x.transpose(0, 1)
            kw = {"mask": mask}
            if is_causal:
                kw["is_causal"] = True
            y = self.encoder(x, **kw)
            return y if batch_first else y.transpose(0, 1)

        def logits(self, y):
            if self.position == "mean":
                r = y.mean(dim=1)
            elif self.position == "first":
                r = y[:, 0]
            else:
                r = y[:, -1]
            return self.head(r)[:, 0]

    return Net


def Net(encoder, d, vocab, position):
    return _net_class()(encoder, d, vocab, position)


def _encoder(
    *,
    d=8,
    nhead=2,
    layers=2,
    norm_first=True,
    final_norm=True,
    activation="gelu",
    batch_first=True,
    bias=True,
    seed=0,
):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(
        d,
        nhead,
        dim_feedforward=12,
        dropout=0.1,
        activation=activation,
        batch_first=batch_first,
        norm_first=norm_first,
        bias=bias,
    )
    norm = torch.nn.LayerNorm(d, bias=bias) if final_norm else None
    return torch.nn.TransformerEncoder(layer, layers, norm=norm, enable_nested_tensor=False)


def _strings(rng, count=100, max_len=64):
    lengths = rng.integers(1, max_len + 1, size=count)
    return ["".join(rng.choice(["a", "b"], size=k)) for k in lengths]


class _PathSpy:
    """Counts calls of PyTorch's fused encoder-layer kernel (the fast path)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        orig = torch.module._transformer_encoder_layer_fwd

        def spy(*args, **kwargs):
            self.calls += 1
            return orig(*args, **kwargs)

        monkeypatch.setattr(torch.module, "_transformer_encoder_layer_fwd", spy)


def _compare(model, net, strings, *, batch_first, mask_mode, fast):
    """max |Δlogit| and max |Δactivation| over ``strings`` (grouped by length)."""
    by_len: dict[int, list[str]] = {}
    for s in strings:
        by_len.setdefault(len(s), []).append(s)
    worst_logit = worst_act = 0.0
    for group in by_len.values():
        tokens = torch.tensor([model.encode(s) for s in group])
        n = tokens.shape[1]
        mask, is_causal = None, False
        if mask_mode != "none":
            mask = torch.nn.Transformer.generate_square_subsequent_mask(
                n, dtype=net.emb.weight.dtype
            )
            is_causal = mask_mode == "is_causal"
        if fast:
            with torch.no_grad():
                y = net.hidden(tokens, batch_first, mask, is_causal)
                want = net.logits(y)
        else:
            y = net.hidden(tokens, batch_first, mask, is_causal)
            want = net.logits(y)
        ours = forward(model, group)
        worst_logit = max(worst_logit, np.abs(ours.logits - want.detach().double().numpy()).max())
        worst_act = max(worst_act, np.abs(ours.final - y.detach().double().numpy()).max())
    return worst_logit, worst_act


CASES = [
    # norm_first, final_norm, activation, mask_mode, batch_first, dtype, fast, position
    (True, True, "gelu", "is_causal", True, "float32", True, "last"),
    (False, True, "gelu", "is_causal", True, "float32", True, "first"),
    (False, False, "relu", "explicit", True, "float64", True, "mean"),
    (True, False, "relu", "none", True, "float64", True, "last"),
    (True, True, "gelu", "explicit", False, "float64", False, "last"),
    (False, True, "relu", "is_causal", False, "float32", False, "mean"),
    (False, False, "gelu", "none", True, "float32", False, "first"),
    (True, True, "relu", "explicit", False, "float32", False, "first"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("norm_first", "final_norm", "activation", "mask_mode", "batch_first", "dtype", "fast", "pos"),
    CASES,
)
def test_import_agrees_with_torch(
    monkeypatch, norm_first, final_norm, activation, mask_mode, batch_first, dtype, fast, pos
):
    seed = len(str((norm_first, final_norm, activation, mask_mode, batch_first, fast, pos)))
    dtype = getattr(torch, dtype)
    enc = _encoder(
        norm_first=norm_first,
        final_norm=final_norm,
        activation=activation,
        batch_first=batch_first,
        seed=seed,
    )
    net = Net(enc, 8, 3, pos)
    _randomize(net, seed)
    net = net.to(dtype).eval()
    if mask_mode == "explicit":
        mask_arg = {"mask": torch.nn.Transformer.generate_square_subsequent_mask(7)}
    elif mask_mode == "is_causal":
        mask_arg = {"causal": True}
    else:
        mask_arg = {}
    model = model_from_torch(
        enc,
        alphabet="ab",
        bos="^",
        embedding=net.emb,
        features=FEATURES,
        pos_weight=net.pos,
        readout=net.head,
        position=pos,
        **mask_arg,
    )
    assert model.final_norm is not None if final_norm else model.final_norm is None
    assert all(layer.pre_norm is norm_first for layer in model.layers)
    assert model.meta["torch"]["mask"] == ("none" if mask_mode == "none" else "future")
    assert model.meta["torch"]["batch_first"] == [batch_first]
    spy = _PathSpy(monkeypatch)
    strings = _strings(np.random.default_rng(seed))
    assert len(strings) >= 100 and max(map(len, strings)) <= 64
    worst_logit, worst_act = _compare(
        model, net, strings, batch_first=batch_first, mask_mode=mask_mode, fast=fast
    )
    # the fast path needs batch_first (and eval + no_grad): observe which path ran
    assert (spy.calls > 0) is (fast and batch_first), spy.calls
    assert worst_logit <= TOL, worst_logit
    assert worst_act <= TOL, worst_act


def test_import_detects_a_wrong_mask_or_a_missing_norm():
    """The comparison above can fail: importing without the causal mask, or with a
    norm dropped, is far off."""
    enc = _encoder(seed=3)
    net = Net(enc, 8, 3, "last")
    _randomize(net, 3)
    net = net.double().eval()
    kw = dict(
        alphabet="ab",
        bos="^",
        embedding=net.emb,
        features=FEATURES,
        pos_weight=net.pos,
        readout=net.head,
    )
    strings = _strings(np.random.default_rng(3), count=30, max_len=12)
    good = model_from_torch(enc, causal=True, **kw)
    bad_mask = model_from_torch(enc, **kw)
    no_final = model_from_torch(list(enc.layers), causal=True, **kw)
    opts = dict(batch_first=True, mask_mode="is_causal", fast=True)
    assert _compare(good, net, strings, **opts)[0] <= TOL
    assert _compare(bad_mask, net, strings, **opts)[0] > 1e-2
    assert _compare(no_final, net, strings, **opts)[1] > 1e-2


def test_separate_qkv_weights_bias_free_layers_and_plain_norms(monkeypatch):
    """``_qkv_same_embed_dim`` False (q/k/v_proj_weight), ``bias=False`` everywhere and
    LayerNorm without elementwise affine: all import, and agree with PyTorch."""
    enc = _encoder(bias=False, seed=5, activation=torch.nn.GELU(approximate="tanh"))
    net = Net(enc, 8, 3, "last")
    _randomize(net, 5)
    attn = enc.layers[0].self_attn
    wq, wk, wv = attn.in_proj_weight.detach().clone().chunk(3)
    attn._qkv_same_embed_dim = False
    del attn.in_proj_weight
    attn.register_parameter("in_proj_weight", None)
    for name, w in zip(("q", "k", "v"), (wq, wk, wv * 1.5), strict=True):
        attn.register_parameter(f"{name}_proj_weight", torch.nn.Parameter(w))
    enc.layers[1].norm2 = torch.nn.LayerNorm(8, elementwise_affine=False)
    net = net.double().eval()
    model = model_from_torch(
        enc,
        alphabet="ab",
        bos="^",
        embedding=net.emb,
        features=FEATURES,
        pos_weight=net.pos,
        readout=net.head,
    )
    head = model.layers[0].heads[0]
    assert (
        head.b_q is None
        and head.b_o is None
        and model.layers[0].ffn.activation.value == ("gelu_tanh")
    )
    assert np.array_equal(model.layers[1].norm2.weight, np.ones(8))
    assert np.array_equal(model.layers[1].norm2.bias, np.zeros(8))
    strings = _strings(np.random.default_rng(5))
    worst, _ = _compare(model, net, strings, batch_first=True, mask_mode="none", fast=False)
    assert worst <= TOL


def test_two_output_classifier_and_biases_on_head_zero():
    enc = _encoder(seed=7, layers=1)
    _randomize(enc, 7)
    enc = enc.double().eval()
    clf = torch.nn.Linear(8, 2).double()
    model = model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 8), readout=clf)
    w = clf.weight.detach().numpy()
    assert np.array_equal(model.readout.weight, w[1] - w[0])
    heads = model.layers[0].heads
    ob = enc.layers[0].self_attn.out_proj.bias.detach().numpy()
    assert np.array_equal(heads[0].b_o, ob) and heads[1].b_o is None
    ib = enc.layers[0].self_attn.in_proj_bias.detach().numpy()
    # d_h = 4 = 4^1: 1/2 folded into b_q exactly; b_k, b_v as stored
    assert np.array_equal(heads[1].b_q, ib[4:8] * 0.5)
    assert np.array_equal(heads[1].b_k, ib[12:16]) and np.array_equal(heads[1].b_v, ib[20:24])
    x = torch.tensor(np.eye(2, 8)[[0, 1, 1]][None])
    with torch.no_grad():
        want = clf(enc(x)[:, -1])
    ours = forward(model, ["abb"]).logits[0]
    assert abs(ours - float(want[0, 1] - want[0, 0])) < 1e-12


def test_scale_folding_is_exact_and_heads_split_correctly():
    enc = _encoder(layers=1, final_norm=False, seed=1)
    _randomize(enc, 1)
    enc = enc.float().eval()
    model = model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 8), kind="leftmost")
    attn = enc.layers[0].self_attn
    w = attn.in_proj_weight.detach().double().numpy()
    assert "folded" in model.meta["torch"]["score_scale"]["4"]
    for h, head in enumerate(model.layers[0].heads):
        rows = slice(4 * h, 4 * h + 4)
        assert np.array_equal(head.w_q, w[:8][rows] * 0.5)  # 1/sqrt(4) folded exactly
        assert np.array_equal(head.w_k, w[8:16][rows])
        assert np.array_equal(head.w_v, w[16:][rows])
        assert np.array_equal(head.w_o, attn.out_proj.weight.detach().double().numpy()[:, rows])
        assert head.kind.value == "leftmost" and head.temperature is None
    # the hard model attends where torch's attention weights are largest (pre-norm: the
    # attention reads LN1 of the embedding)
    x = torch.tensor(np.eye(2, 8)[[0, 1, 1, 0, 1]][None], dtype=torch.float32)
    with torch.no_grad():
        u = enc.layers[0].norm1(x)
        _, weights = attn(u, u, u, need_weights=True, average_attn_weights=False)
    tr = forward(model, ["abbab"])
    for h in range(2):
        assert np.array_equal(
            tr.layers[0].weights[0, h].argmax(-1), weights[0, h].numpy().argmax(-1)
        )


def test_non_power_of_four_scale_is_a_temperature_or_dropped():
    enc = _encoder(d=6, nhead=2, layers=1, seed=2).double().eval()
    soft = model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 6))
    w = enc.layers[0].self_attn.in_proj_weight.detach().numpy()
    assert np.array_equal(soft.layers[0].heads[0].w_q, w[:3])
    assert soft.layers[0].heads[0].temperature.coef == 1 / math.sqrt(3)
    assert "fl(1/sqrt(3))" in soft.meta["torch"]["score_scale"]["3"]
    hard = model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 6), kind="average")
    assert np.array_equal(hard.layers[0].heads[0].w_q, w[:3])
    assert "dropped" in hard.meta["torch"]["score_scale"]["3"]


def test_explicit_masks_are_recognized_by_pattern():
    enc = _encoder(layers=1).eval()
    kw = dict(alphabet="ab", embedding=np.eye(2, 8))
    causal_bool = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    m = model_from_torch(enc, mask=causal_bool, **kw)
    assert m.layers[0].heads[0].mask is Mask.FUTURE
    assert m.meta["torch"]["mask_source"] == "explicit 5x5 bool mask tensor"
    strict_past = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    assert model_from_torch(enc, mask=strict_past, **kw).layers[0].heads[0].mask is Mask.PAST_STRICT
    assert model_from_torch(enc, mask="future", **kw).meta["torch"]["mask"] == "future"
    with pytest.raises(SpecError, match="causal=True but the explicit mask is the 'past_strict'"):
        model_from_torch(enc, mask=strict_past, causal=True, **kw)
    with pytest.raises(SpecError, match="causal=True contradicts mask='past'"):
        model_from_torch(enc, mask="past", causal=True, **kw)


@pytest.mark.parametrize(
    ("mutate", "where", "what"),
    [
        (
            lambda enc: setattr(enc.layers[0], "norm1", torch.nn.RMSNorm(8)),
            "encoder.layers[0].norm1",
            "RMSNorm",
        ),
        (lambda enc: setattr(enc, "norm", torch.nn.RMSNorm(8)), "encoder.norm", "RMSNorm"),
        (
            lambda enc: setattr(enc.layers[1], "activation", torch.nn.functional.silu),
            "encoder.layers[1].activation",
            "custom activation silu",
        ),
        (
            lambda enc: setattr(enc.layers[1], "activation", torch.nn.Tanh()),
            "encoder.layers[1].activation",
            "custom activation Tanh",
        ),
        (
            lambda enc: setattr(
                enc.layers[0], "self_attn", torch.nn.MultiheadAttention(8, 2, add_bias_kv=True)
            ),
            "encoder.layers[0].self_attn.bias_k",
            "add_bias_kv",
        ),
        (
            lambda enc: setattr(
                enc.layers[0], "self_attn", torch.nn.MultiheadAttention(8, 2, add_zero_attn=True)
            ),
            "encoder.layers[0].self_attn.add_zero_attn",
            "add_zero_attn",
        ),
        (lambda enc: enc.train(), "encoder.layers[0].dropout", "training mode with dropout"),
        (
            lambda enc: setattr(enc.layers[0], "norm2", torch.nn.LayerNorm((2, 4))),
            "encoder.layers[0].norm2.normalized_shape",
            "normalized_shape (2, 4)",
        ),
    ],
)
def test_unsupported_modules_are_refused_naming_module_and_field(mutate, where, what):
    enc = _encoder().eval()
    mutate(enc)
    with pytest.raises(UnsupportedError) as err:
        model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 8))
    assert err.value.where == where, str(err.value)
    assert what in err.value.message, str(err.value)


def test_other_refusals():
    enc = _encoder().eval()
    kw = dict(alphabet="ab", embedding=np.eye(2, 8))

    class MyLayer(torch.nn.TransformerEncoderLayer):
        pass

    with pytest.raises(UnsupportedError, match=r"encoder.layers\[0\]: MyLayer"):
        model_from_torch([MyLayer(8, 2)], **kw)
    with pytest.raises(UnsupportedError, match="key_padding_mask"):
        model_from_torch(enc, key_padding_mask=torch.zeros(1, 3, dtype=torch.bool), **kw)
    with pytest.raises(UnsupportedError, match="none of the patterns"):
        model_from_torch(enc, mask=torch.eye(4, dtype=torch.bool), **kw)
    penalty = torch.zeros(4, 4)
    penalty[0, 1] = -3.0
    with pytest.raises(UnsupportedError, match="finite non-zero entries"):
        model_from_torch(enc, mask=penalty, **kw)
    with pytest.raises(UnsupportedError, match="encoder: Linear"):
        model_from_torch(torch.nn.Linear(8, 8), **kw)
    with pytest.raises(UnsupportedError, match="a classifier with 3 outputs"):
        model_from_torch(enc, readout=torch.nn.Linear(8, 3), **kw)
    with pytest.raises(SpecError, match="embed_dim 8 differs from the embedding width 3"):
        model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 3))
    no_dropout = _encoder()
    for tl in no_dropout.layers:
        tl.dropout.p = tl.dropout1.p = tl.dropout2.p = 0.0
        tl.self_attn.dropout = 0.0
    model_from_torch(no_dropout.train(), **kw)  # training mode without dropout: deterministic


def test_bias_coordinate_is_accepted_and_ignored():
    enc = _encoder(layers=1).eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 8), bias_coordinate=True)
    assert m.d == 8 and any(issubclass(w.category, DeprecationWarning) for w in caught)


def test_torch_absent_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(UnsupportedError, match=r"needs torch.*attncert\[torch\]"):
        model_from_torch([], alphabet="ab", embedding=np.eye(2, 4))
