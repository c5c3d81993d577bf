"""Building models from array dictionaries, and importing PyTorch encoders."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attncert.errors import SpecError, UnsupportedError
from attncert.model import Mask, Temperature, forward, random_model, zoo_model
from attncert.model.build import model_from_arrays, model_to_arrays


def rebuild(model, **kw):
    heads = [[h for h in layer.heads] for layer in model.layers]
    return model_from_arrays(
        model_to_arrays(model),
        alphabet=model.alphabet,
        vocab=model.embedding.vocab,
        bos=model.bos,
        eos=model.eos,
        kind=[[h.kind for h in hs] for hs in heads],
        mask=[[h.mask for h in hs] for hs in heads],
        temperature=[[h.temperature for h in hs] for hs in heads],
        features=model.embedding.features,
        position=model.readout.position,
        output_coords=model.readout.output_coords,
        lm_symbols=model.readout.lm_symbols,
        name=model.name,
        meta=dict(model.meta),
        **kw,
    )


@pytest.mark.parametrize(
    "model",
    [
        zoo_model("ones_star"),
        zoo_model("anbn"),
        random_model(2, 2, 6, seed=4, mask="past", bos="^", eos="$"),
        random_model(1, 3, 5, kind="softmax", temperature=Temperature(2.0, 1.0), seed=2),
    ],
    ids=["ones_star", "anbn", "random", "softmax"],
)
def test_arrays_round_trip_keeps_the_hash(model):
    assert rebuild(model).digest == model.digest


def test_per_head_settings_and_defaults():
    arrays = model_to_arrays(random_model(1, 2, 4, seed=0))
    m = model_from_arrays(
        arrays,
        alphabet="01",
        kind=[["leftmost", "average"]],
        mask=[["none", "future"]],
        features=random_model(1, 2, 4, seed=0).embedding.features,
    )
    assert [h.kind.value for h in m.layers[0].heads] == ["leftmost", "average"]
    assert [h.mask.value for h in m.layers[0].heads] == ["none", "future"]
    minimal = model_from_arrays(
        {"embedding.word": np.eye(2), "readout.weight": [1.0, -1.0]}, alphabet="01"
    )
    assert minimal.num_layers == 0 and forward(minimal, ["0"]).accept[0]
    empty_layer = model_from_arrays(
        {"embedding.word": np.eye(2), "layers.0": np.zeros(0), "readout.weight": [1.0, 0.0]},
        alphabet="ab",
    )
    assert empty_layer.num_layers == 1 and empty_layer.layers[0].heads == ()


def _arrays():
    return dict(model_to_arrays(random_model(2, 2, 4, seed=1, features=())))


@pytest.mark.parametrize(
    ("mutate", "where", "message"),
    [
        (lambda a: a.pop("layers.0.heads.1.w_k"), "arrays", "missing key 'layers.0.heads.1.w_k'"),
        (lambda a: a.pop("readout.weight"), "arrays", "missing key 'readout.weight'"),
        (lambda a: a.pop("layers.1.ffn.b2"), "arrays", "missing key 'layers.1.ffn.b2'"),
        (
            lambda a: a.update({"layers.0.heads.1.wq": np.eye(2)}),
            "arrays",
            "unknown key 'layers.0.heads.1.wq'",
        ),
        (
            lambda a: a.update({"layer.0.ffn.w1": np.eye(2)}),
            "arrays",
            "unknown key 'layer.0.ffn.w1'",
        ),
        (
            lambda a: a.update({"layers.0.heads.1.w_q": np.zeros((2, 5))}),
            "arrays['layers.0.heads.1.w_q']",
            "wrong shape (2, 5)",
        ),
        (
            lambda a: a.update({"layers.1.ffn.b1": np.zeros((4, 1))}),
            "arrays['layers.1.ffn.b1']",
            "array of shape (4, 1)",
        ),
        (
            lambda a: a["layers.1.heads.0.w_o"].__setitem__((0, 0), np.nan),
            "arrays['layers.1.heads.0.w_o']",
            "non-finite value nan at index (0, 0)",
        ),
        (lambda a: a.update({"readout.bias": np.zeros(2)}), "arrays['readout.bias']", "shape (2,)"),
        (
            lambda a: [a.pop(k) for k in list(a) if k.startswith("layers.0.")],
            "arrays['layers.0.…']",
            "missing layer 0",
        ),
    ],
)
def test_array_errors_name_the_key(mutate, where, message):
    arrays = {k: np.array(v) for k, v in _arrays().items()}
    mutate(arrays)
    with pytest.raises(SpecError) as err:
        model_from_arrays(arrays, alphabet="01")
    assert err.value.where == where, err.value
    assert message in err.value.message, err.value


def test_bad_kind_names_the_head():
    with pytest.raises(SpecError) as err:
        model_from_arrays(
            _arrays(), alphabet="01", kind=[["leftmost", "leftmost"], ["leftmost", "softest"]]
        )
    assert err.value.where == "layers.1.heads.1.kind" and "softest" in err.value.message
    with pytest.raises(SpecError, match="no kind given for layer 1 head 0"):
        model_from_arrays(_arrays(), alphabet="01", kind=[["leftmost", "leftmost"]])
    with pytest.raises(SpecError, match="no mask given for layer 0 head 0"):
        model_from_arrays(_arrays(), alphabet="01", mask=["none", "future"])


# ----- PyTorch -----------------------------------------------------------------------------


def _encoder(torch, d, nhead, layers=2, bias=True, random_bias=True, seed=0):
    nn = torch.nn
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(d, nhead, dim_feedforward=7, dropout=0.3, bias=bias)
    enc = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
    for tl in enc.layers:
        tl.norm1 = nn.Identity()
        tl.norm2 = nn.Identity()
    enc = enc.double().eval()
    if random_bias:
        with torch.no_grad():
            for p in enc.parameters():
                if p.dim() == 1:
                    p.normal_()
    return enc


def _torch_forward(torch, enc, emb, tokens, causal):
    with torch.no_grad():
        x = emb(torch.tensor(tokens)).transpose(0, 1)  # (N, B, d), batch_first=False
        n = x.shape[0]
        mask = (
            torch.nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64)
            if causal
            else None
        )
        return enc(x, mask=mask).transpose(0, 1).numpy()


@pytest.mark.parametrize(
    ("d", "nhead", "bias", "causal"),
    [
        (8, 2, True, False),
        (8, 2, False, True),
        (12, 3, True, True),
        (6, 2, True, False),
        (6, 1, True, True),
    ],
)
def test_torch_import_matches_torch(d, nhead, bias, causal):
    torch = pytest.importorskip("torch")
    from attncert.model.build import model_from_torch

    enc = _encoder(torch, d, nhead, bias=bias, seed=d + nhead)
    emb = torch.nn.Embedding(3, d).double()
    head_out = torch.nn.Linear(d, 1).double()
    model = model_from_torch(
        enc,
        alphabet="ab",
        bos="^",
        embedding=emb,
        readout=head_out,
        mask=Mask.FUTURE if causal else Mask.NONE,
    )
    dh = d // nhead
    assert ("bias_coordinate" in model.meta["torch"]) is bias
    assert model.d == d + int(bias)
    note = model.meta["torch"]["score_scale"][str(dh)]
    assert ("folded" in note) is (dh in (1, 4, 16)), note
    strings = ["abba", "aaab", "bbbb", "baba"]
    tokens = [model.encode(s) for s in strings]
    want = _torch_forward(torch, enc, emb, tokens, causal)
    ours = forward(model, strings)
    np.testing.assert_allclose(ours.final[..., :d], want, rtol=1e-12, atol=1e-12)
    if bias:
        assert np.all(ours.final[..., d] == 1.0)  # the constant coordinate is never written
    with torch.no_grad():
        logits = head_out(torch.tensor(want[:, -1, :])).numpy()[:, 0]
    np.testing.assert_allclose(ours.logits, logits, rtol=1e-12, atol=1e-12)


def test_torch_scale_folding_is_exact_and_heads_split_correctly():
    torch = pytest.importorskip("torch")
    from attncert.model.build import model_from_torch

    enc = _encoder(torch, 8, 2, layers=1, random_bias=False).float()  # float32 weights
    model = model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 8), kind="leftmost")
    attn = enc.layers[0].self_attn
    w = attn.in_proj_weight.detach().double().numpy()
    for h, head in enumerate(model.layers[0].heads):
        rows = slice(4 * h, 4 * h + 4)
        assert np.array_equal(head.w_q, w[:8][rows] * 0.5)  # 1/sqrt(4) folded exactly
        assert np.array_equal(head.w_k, w[8:16][rows])
        assert np.array_equal(head.w_v, w[16:][rows])
        assert np.array_equal(head.w_o, attn.out_proj.weight.detach().double().numpy()[:, rows])
        assert head.kind.value == "leftmost" and head.temperature is None
    # the hard model attends where torch's attention weights are largest
    x = torch.tensor(np.eye(2, 8)[[0, 1, 1, 0, 1]][:, None, :], dtype=torch.float32)
    with torch.no_grad():
        _, weights = attn(x, x, x, need_weights=True, average_attn_weights=False)
    tr = forward(model, ["abbab"])
    for h in range(2):
        assert np.array_equal(
            tr.layers[0].weights[0, h].argmax(-1), weights[0, h].numpy().argmax(-1)
        )


def test_torch_non_power_of_two_scale_for_hard_heads_is_dropped():
    torch = pytest.importorskip("torch")
    from attncert.model.build import model_from_torch

    enc = _encoder(torch, 6, 2, layers=1, random_bias=False)
    model = model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 6), kind="average")
    w = enc.layers[0].self_attn.in_proj_weight.detach().numpy()
    assert np.array_equal(model.layers[0].heads[0].w_q, w[:3])
    assert "dropped" in model.meta["torch"]["score_scale"]["3"]
    soft = model_from_torch(enc, alphabet="ab", embedding=np.eye(2, 6))
    assert soft.layers[0].heads[0].temperature.coef == 1 / math.sqrt(3)


def test_torch_unsupported_parts_are_refused():
    torch = pytest.importorskip("torch")
    from attncert.model.build import model_from_torch

    nn = torch.nn
    with_norm = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(4, 1), 1, enable_nested_tensor=False
    )
    with pytest.raises(UnsupportedError) as err:
        model_from_torch(with_norm, alphabet="ab", embedding=np.eye(2, 4))
    assert err.value.where == "encoder.layers[0].norm1" and "LayerNorm" in err.value.message
    final_norm = _encoder(torch, 4, 1, layers=1)
    final_norm.norm = nn.LayerNorm(4)
    with pytest.raises(UnsupportedError, match="final norm is LayerNorm"):
        model_from_torch(final_norm, alphabet="ab", embedding=np.eye(2, 4))
    gelu = _encoder(torch, 4, 1, layers=1)
    gelu.layers[0].activation = torch.nn.functional.gelu
    with pytest.raises(UnsupportedError, match="activation gelu"):
        model_from_torch(gelu, alphabet="ab", embedding=np.eye(2, 4))
    with pytest.raises(UnsupportedError, match="non-zero biases"):
        model_from_torch(
            _encoder(torch, 4, 1), alphabet="ab", embedding=np.eye(2, 4), bias_coordinate=False
        )
    with pytest.raises(SpecError, match="embed_dim 4 differs from the embedding width 3"):
        model_from_torch(_encoder(torch, 4, 1), alphabet="ab", embedding=np.eye(2, 3))


def test_torch_absent_is_a_clear_error(monkeypatch):
    import sys

    from attncert.model.build import model_from_torch

    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(UnsupportedError, match="needs torch"):
        model_from_torch([], alphabet="ab", embedding=np.eye(2, 4))
