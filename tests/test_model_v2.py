"""Model format version 2: LayerNorm, GELU, attention biases, final norm, mean readout.

Round trip of every new field, old (version-1) files keep loading with the same
hash, strict numeric arrays, located errors, hardening, and the float evaluator's
new pieces against PyTorch's functional forms."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from attncert.errors import InputError, SpecError, UnsupportedError
from attncert.model import (
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    LayerNorm,
    Model,
    Readout,
    Temperature,
    forward,
    harden,
    hardening_agreement,
    load_model,
    model_from_dict,
    model_to_dict,
    random_model,
    save_model,
    zoo_model,
)
from attncert.model.forward import activate, layer_norm
from attncert.model.serialize import model_to_json


def _ln(rng, d, eps=1e-5):
    return LayerNorm(1 + 0.1 * rng.standard_normal(d), 0.1 * rng.standard_normal(d), eps)


def v2_model(seed=0, *, norm_position="pre", activation="gelu", readout="mean", kind="softmax"):
    """A 2-layer model that uses every version-2 field."""
    rng = np.random.default_rng(seed)
    d, dk, dff = 6, 3, 8
    g = rng.standard_normal
    layers = []
    for _ in range(2):
        heads = tuple(
            Head(
                g((dk, d)),
                g((dk, d)),
                g((dk, d)),
                g((d, dk)),
                kind=kind,
                mask="future",
                temperature=Temperature(0.5) if kind == "softmax" else None,
                b_q=g(dk),
                b_k=g(dk),
                b_v=g(dk),
                b_o=g(d),
            )
            for _ in range(2)
        )
        ffn = FeedForward(g((dff, d)), g(dff), g((d, dff)), g(d), activation=activation)
        layers.append(Layer(heads, ffn, True, _ln(rng, d), _ln(rng, d, 1e-6), norm_position))
    return Model(
        alphabet=("0", "1"),
        embedding=Embedding(("0", "1", "B"), g((3, d))),
        layers=tuple(layers),
        readout=Readout(g(d), 0.25, position=readout),
        bos="B",
        name="v2-test",
        final_norm=_ln(rng, d),
    )


@pytest.mark.parametrize("norm_position", ["pre", "post"])
@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("readout", ["last", "first", "mean"])
def test_round_trip_covers_every_new_field(tmp_path, norm_position, activation, readout):
    m = v2_model(norm_position=norm_position, activation=activation, readout=readout)
    path = save_model(m, tmp_path / "m.json")
    data = json.loads(path.read_text())
    assert data["version"] == 2
    layer = data["layers"][0]
    assert layer["norm_position"] == norm_position
    assert set(layer["norm1"]) == {"weight", "bias", "eps"} and layer["norm2"]["eps"] == 1e-6
    assert layer["ffn"]["activation"] == activation
    assert all(layer["heads"][0][b] is not None for b in ("b_q", "b_k", "b_v", "b_o"))
    assert data["final_norm"] is not None and data["readout"]["position"] == readout
    back = load_model(path)
    assert back.digest == m.digest
    assert model_to_json(back) == model_to_json(m)
    a, b = back.layers[1], m.layers[1]
    assert np.array_equal(a.norm2.weight, b.norm2.weight) and a.norm2.eps == b.norm2.eps
    assert np.array_equal(a.heads[1].b_o, b.heads[1].b_o)
    assert a.ffn.activation is b.ffn.activation and a.norm_position is b.norm_position
    strings = ["0110", "1111", "0000"]
    assert np.array_equal(forward(back, strings).logits, forward(m, strings).logits)


def test_each_new_field_changes_the_hash():
    m = v2_model()
    base = model_to_dict(m)
    seen = {m.digest}
    for path in (
        ("layers", 0, "norm1", "eps"),
        ("layers", 0, "norm2", "weight", 0),
        ("layers", 1, "heads", 0, "b_q", 0),
        ("layers", 1, "heads", 1, "b_o", 2),
        ("final_norm", "bias", 1),
    ):
        data = json.loads(json.dumps(base))
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = float(np.nextafter(node[path[-1]], np.inf))
        digest = model_from_dict(data).digest
        assert digest not in seen, path
        seen.add(digest)
    for key, value in (("norm_position", "post"),):
        data = json.loads(json.dumps(base))
        data["layers"][0][key] = value
        assert model_from_dict(data).digest not in seen
    data = json.loads(json.dumps(base))
    data["layers"][0]["ffn"]["activation"] = "gelu_tanh"
    assert model_from_dict(data).digest not in seen


def test_version_1_models_keep_their_format_and_hash(tmp_path):
    """A model without version-2 features is written as version 1, byte for byte as
    before: certificates that name it by hash stay valid."""
    m = random_model(2, 2, 8, seed=3)
    data = json.loads(model_to_json(m))
    assert data["version"] == 1
    assert "final_norm" not in data and "b_q" not in data["layers"][0]["heads"][0]
    assert "activation" not in data["layers"][0]["ffn"]
    # the hash this zoo model had under attncert 0.1, as its committed certificate records
    assert zoo_model("ones_star").digest == _committed_hash("theorem1/ones_star-n64")
    path = tmp_path / "old.json"
    path.write_text(model_to_json(m))
    assert load_model(path).digest == m.digest


def _committed_hash(artifact: str) -> str:
    cert = Path(__file__).parent.parent / "proofs/hahn2020" / artifact / "certificate.json"
    return json.loads(cert.read_text())["model"]["sha256"]


@pytest.mark.parametrize(
    ("edit", "where", "what"),
    [
        (lambda d: d["layers"][0]["heads"][0].__setitem__("b_q", ["0.5", 1, 2]), "b_q", "'0.5'"),
        (lambda d: d["layers"][0]["norm1"].__setitem__("eps", -1.0), "norm1", "eps"),
        (
            lambda d: d["layers"][0]["norm1"].__setitem__("weight", [1.0] * 5),
            "norm1.weight",
            "shape",
        ),
        (lambda d: d["layers"][0]["ffn"].__setitem__("activation", "swish"), "ffn", "swish"),
        (
            lambda d: d["layers"][0].__setitem__("norm_position", "middle"),
            "norm_position",
            "middle",
        ),
        (lambda d: d["readout"].__setitem__("position", "median"), "readout", "median"),
        (
            lambda d: d["final_norm"].__setitem__("bias", [float("nan")] * 6),
            "final_norm.bias",
            "nan",
        ),
        (lambda d: d.__setitem__("version", 4), "version", "4"),
        (lambda d: d["embedding"].__setitem__("word", [[True] * 6] * 3), "embedding.word", "True"),
    ],
)
def test_bad_version_2_fields_are_located(edit, where, what):
    data = json.loads(model_to_json(v2_model()))
    edit(data)
    with pytest.raises(SpecError) as err:
        model_from_dict(data, source="m.json")
    text = str(err.value)
    assert "m.json" in text and where in text and what in text, text


def test_numeric_arrays_must_hold_numbers_in_version_1_files_too():
    data = json.loads(model_to_json(random_model(1, 1, 4, seed=0)))
    data["layers"][0]["heads"][0]["w_q"][1][2] = "0.5"
    with pytest.raises(SpecError, match=r"w_q.*\[1\]\[2\] is '0.5'"):
        model_from_dict(data, source="m.json")


def test_layer_norm_and_gelu_match_torch_functional():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 7, 6)) * 3
    norm = _ln(rng, 6)
    ours = layer_norm(norm, x)
    ref = torch.nn.functional.layer_norm(
        torch.tensor(x), (6,), torch.tensor(norm.weight), torch.tensor(norm.bias), norm.eps
    ).numpy()
    assert np.abs(ours - ref).max() < 1e-12
    from attncert.model.spec import Activation

    t = torch.tensor(x)
    assert np.abs(activate(Activation.GELU, x) - torch.nn.functional.gelu(t).numpy()).max() < 1e-12
    tanh_ref = torch.nn.functional.gelu(t, approximate="tanh").numpy()
    assert np.abs(activate(Activation.GELU_TANH, x) - tanh_ref).max() < 1e-12
    assert np.array_equal(activate(Activation.RELU, x), np.maximum(x, 0))


def test_mean_readout_and_final_norm_by_hand():
    m = v2_model(readout="mean")
    tr = forward(m, ["0110", "1001"])
    y = tr.layers[-1].output
    r = layer_norm(m.final_norm, y)
    assert np.allclose(tr.final, r, rtol=0, atol=1e-15)
    assert np.allclose(tr.logits, r.mean(axis=1) @ m.readout.weight + 0.25, rtol=0, atol=1e-13)


def test_forward_refuses_a_bare_string():
    with pytest.raises(InputError, match="bare string '01101'"):
        forward(random_model(1, 1, 4, seed=0), "01101")


def test_extensions_name_what_older_tools_refuse():
    m = v2_model()
    assert m.extensions == ("LayerNorm", "gelu activation", "attention biases", "mean readout")
    assert not m.is_rational
    assert random_model(1, 1, 4, seed=0).extensions == ()
    with pytest.raises(UnsupportedError, match="LayerNorm, gelu activation"):
        m.require_plain("the z3 prover")


def test_harden_replaces_softmax_heads_only_and_records_the_origin():
    soft = v2_model(kind="softmax")
    hard = harden(soft)
    assert hard.is_hard and all(
        h.kind is AttentionKind.LEFTMOST and h.temperature is None
        for layer in hard.layers
        for h in layer.heads
    )
    assert hard.meta["hardened"]["from_sha256"] == soft.digest
    assert len(hard.meta["hardened"]["heads"]) == 4
    same = harden(hard)
    assert same is hard
    # hard attention over the same scores: on each string the hardened head attends
    # to the argmax of the soft head's scores
    strings = ["0110100", "1110001"]
    ts, th = forward(soft, strings), forward(hard, strings)
    for ls, lh in zip(ts.layers[:1], th.layers[:1], strict=True):
        assert np.array_equal(ls.scores, lh.scores)
        assert np.array_equal(lh.weights.argmax(-1), ls.weights.argmax(-1))
    ag = hardening_agreement(soft, hard, ["0110", "1111", "0000", "10101"])
    assert ag.strings == 4 and 0 <= ag.agree <= 4
    assert [r[0] for r in ag.by_length] == [4, 5]


def test_harden_refuses_a_non_positive_temperature():
    soft = v2_model(kind="softmax")
    from dataclasses import replace

    bad_head = replace(soft.layers[0].heads[1], temperature=Temperature(-1.0))
    layer = replace(soft.layers[0], heads=(soft.layers[0].heads[0], bad_head))
    bad = replace(soft, layers=(layer, soft.layers[1]))
    with pytest.raises(UnsupportedError, match=r"layers\[0\]\.heads\[1\]\.temperature"):
        harden(bad)


def test_gelu_is_not_relu():
    x = np.array([-1.0, 0.5])
    from attncert.model.spec import Activation

    g = activate(Activation.GELU, x)
    assert math.isclose(g[1], 0.5 * 0.5 * (1 + math.erf(0.5 / math.sqrt(2))), rel_tol=1e-15)
    assert g[0] < 0
