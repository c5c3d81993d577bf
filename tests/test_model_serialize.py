"""Model files: bit-for-bit round trips, content hashes, and specific error messages."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from attncert.errors import InputError, SpecError
from attncert.model import (
    Embedding,
    FeedForward,
    Head,
    Layer,
    Model,
    PosFeature,
    Readout,
    Temperature,
    forward,
    forward_exact,
    load_model,
    model_from_dict,
    model_to_dict,
    random_model,
    save_model,
    zoo_model,
)
from attncert.model.build import model_to_arrays


def odd_model() -> Model:
    """Exercises every optional part: BOS/EOS, a learned table, sin features, softmax with
    an n-dependent temperature, no-residual layer, zero-row head, −0.0, LM head."""
    rng = np.random.default_rng(5)
    d = 5
    vocab = ("a", "b", "^", "$")
    word = rng.normal(size=(4, d))
    word[0, 0] = -0.0
    e = np.eye(d)
    heads = (
        Head(
            rng.normal(size=(2, d)),
            rng.normal(size=(2, d)),
            rng.normal(size=(3, d)),
            rng.normal(size=(d, 3)),
            kind="softmax",
            temperature=Temperature(0.5, 1.0, 1.0),
        ),
        Head(np.zeros((0, d)), np.zeros((0, d)), e[[1]], e[:, [2]], kind="average", mask="past"),
    )
    ffn = FeedForward(
        rng.normal(size=(3, d)), rng.normal(size=3), rng.normal(size=(d, 3)), rng.normal(size=d)
    )
    return Model(
        alphabet=("a", "b"),
        embedding=Embedding(
            vocab=vocab,
            word=word,
            features=(PosFeature("sin", 0.3), PosFeature("1/i"), PosFeature("[i=n]")),
            pos_weight=rng.normal(size=(d, 3)),
            table=rng.normal(size=(20, d)),
        ),
        layers=(Layer(heads, ffn), Layer((), ffn, residual=False)),
        readout=Readout(
            weight=rng.normal(size=d),
            bias=-1e-300,
            position=2,
            output_coords=(0, 4),
            lm_weight=rng.normal(size=(3, d)),
            lm_symbols=("a", "b", "$"),
        ),
        bos="^",
        eos="$",
        name="odd",
        meta={"note": "all options", "nested": {"k": [1, 2.5]}},
    )


MODELS = {
    "ones_star": lambda: zoo_model("ones_star"),
    "anbn": lambda: zoo_model("anbn"),
    "random": lambda: random_model(2, 3, 7, seed=11, mask="future", bos="^", eos="$"),
    "odd": odd_model,
}


def bits(a: np.ndarray) -> bytes:
    return (
        np.ascontiguousarray(a, dtype=np.float64).view(np.uint64).tobytes() + str(a.shape).encode()
    )


@pytest.mark.parametrize("name", sorted(MODELS))
def test_save_load_round_trip_is_bit_for_bit(tmp_path, name):
    model = MODELS[name]()
    p1 = save_model(model, tmp_path / "a.json")
    loaded = load_model(p1)
    assert loaded.digest == model.digest
    a, b = model_to_arrays(model), model_to_arrays(loaded)
    assert a.keys() == b.keys()
    for key in a:
        assert bits(a[key]) == bits(b[key]), key
    assert model_to_dict(loaded) == model_to_dict(model)
    p2 = save_model(loaded, tmp_path / "b.json")
    assert p1.read_bytes() == p2.read_bytes()
    assert json.loads(p1.read_text())["sha256"] == model.digest
    # behaviour survives too
    s = "ab" if model.alphabet == ("a", "b") else "01"
    assert np.array_equal(forward(model, [s]).logits, forward(loaded, [s]).logits)


def _numeric_leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k not in ("output_coords", "version", "meta"):
                yield from _numeric_leaves(v, (*path, k))
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            yield from _numeric_leaves(v, (*path, k))
    elif isinstance(obj, float):
        yield path


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def _get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


@pytest.mark.parametrize("name", ["anbn", "odd"])
def test_every_single_weight_change_changes_the_hash(name):
    model = MODELS[name]()
    base = model_to_dict(model)
    leaves = list(_numeric_leaves(base))
    assert len(leaves) > 40
    digests = {model.digest}
    for path in leaves:
        data = json.loads(json.dumps(base))
        old = _get(data, path)
        _set(data, path, float(np.nextafter(old, math.inf)))
        changed = model_from_dict(data)
        digests.add(changed.digest)
    assert len(digests) == len(leaves) + 1  # all distinct, all different from the original


def test_sign_of_zero_and_settings_change_the_hash():
    model = zoo_model("ones_star")
    data = model_to_dict(model)
    data["embedding"]["word"][0][1] = -0.0
    assert model_from_dict(data).digest != model.digest
    for path, value in [
        (("layers", 0, "heads", 0, "kind"), "rightmost"),
        (("layers", 0, "heads", 0, "mask"), "future"),
        (("readout", "position"), "first"),
        (("name",), "other"),
    ]:
        data = model_to_dict(model)
        _set(data, path, value)
        assert model_from_dict(data).digest != model.digest, path


def test_stale_hash_is_refused(tmp_path):
    path = save_model(zoo_model("anbn"), tmp_path / "m.json")
    data = json.loads(path.read_text())
    data["layers"][1]["heads"][0]["w_q"][0][2] = 2.0  # hand edit, sha256 left stale
    path.write_text(json.dumps(data))
    with pytest.raises(SpecError) as err:
        load_model(path)
    assert "content hash mismatch" in err.value.message
    assert err.value.where == f"{path}: sha256"
    # without the hash the edited file loads (a hand-written model)
    del data["sha256"]
    path.write_text(json.dumps(data))
    assert load_model(path).layers[1].heads[0].w_q[0, 2] == 2.0


def _write(tmp_path, data) -> str:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


def test_malformed_json_names_line_and_column(tmp_path):
    text = json.dumps(model_to_dict(zoo_model("ones_star")), indent=1)
    lines = text.splitlines()
    lines[3] = lines[3] + " oops"
    path = _write(tmp_path, "\n".join(lines))
    with pytest.raises(SpecError) as err:
        load_model(path)
    assert err.value.where == path
    assert f"malformed JSON at line 4, column {len(lines[3]) - 3}" in err.value.message


@pytest.mark.parametrize(
    ("mutate", "where", "message"),
    [
        (
            lambda d: d["layers"][0]["heads"][0]["w_q"][0].append(1.0),
            "layers[0].heads[0].w_q",
            "wrong shape (1, 5)",
        ),
        (
            lambda d: d["layers"][0]["heads"][0]["w_k"].append([1.0]),
            "layers[0].heads[0].w_k",
            "not a numeric array",
        ),
        (
            lambda d: d["embedding"].update(word=[[1.0, 0.0]]),
            "embedding.word",
            "wrong shape (1, 2)",
        ),
        (lambda d: d["readout"].update(weight=[[1.0]]), "readout.weight", "array of shape (1, 1)"),
        (
            lambda d: _set(d, ("layers", 0, "heads", 0, "w_v", 0, 0), math.nan),
            "layers[0].heads[0].w_v",
            "non-finite value nan at index (0, 0)",
        ),
        (
            lambda d: _set(d, ("embedding", "word", 1, 3), math.inf),
            "embedding.word",
            "non-finite value inf at index (1, 3)",
        ),
        (lambda d: _set(d, ("readout", "bias"), math.nan), "readout.bias", "non-finite value nan"),
        (
            lambda d: _set(d, ("layers", 0, "heads", 0, "kind"), "hardest"),
            "layers[0].heads[0].kind",
            "unknown value 'hardest'",
        ),
        (
            lambda d: _set(d, ("layers", 0, "heads", 0, "mask"), "sideways"),
            "layers[0].heads[0].mask",
            "unknown value 'sideways'",
        ),
        (
            lambda d: d["layers"][0]["heads"][0].pop("w_k"),
            "layers[0].heads[0]",
            "missing field 'w_k'",
        ),
        (
            lambda d: _set(d, ("embedding", "features"), [{"name": "i^3"}]),
            "embedding.features[0]",
            "unknown positional feature 'i^3'",
        ),
        (lambda d: _set(d, ("version",), 99), "version", "version 99"),
        (lambda d: _set(d, ("format",), "onnx"), "format", "format 'onnx'"),
        (lambda d: _set(d, ("sha256",), 7), "sha256", "sha256 7"),
        (lambda d: _set(d, ("alphabet",), ["0", "1", "1"]), "alphabet", "repeated symbol"),
    ],
)
def test_bad_model_files_give_specific_errors(tmp_path, mutate, where, message):
    data = model_to_dict(zoo_model("ones_star"))
    data["layers"][0]["heads"][0]["w_q"] = [[0.0, 0.0, 1.0, 0.0]]
    mutate(data)
    path = _write(tmp_path, json.dumps(data))  # json.dumps writes NaN / Infinity literals
    with pytest.raises(SpecError) as err:
        load_model(path)
    assert err.value.where == f"{path}: {where}", err.value
    assert message in err.value.message, err.value


def test_nan_in_a_constructed_model_names_the_field():
    model = random_model(1, 2, 4, seed=0)
    head = model.layers[0].heads[1]
    w_q = head.w_q.copy()
    w_q[0, 1] = np.nan
    bad = Head(w_q, head.w_k, head.w_v, head.w_o)
    with pytest.raises(SpecError) as err:
        Model(
            model.alphabet,
            model.embedding,
            (Layer((model.layers[0].heads[0], bad)),),
            model.readout,
        )
    assert err.value.where == "layers[0].heads[1].w_q"
    assert "non-finite value nan at index (0, 1)" in err.value.message


def test_unknown_symbol_in_input_string():
    model = zoo_model("ones_star")
    for run in (lambda: forward(model, ["1x1"]), lambda: forward_exact(model, "1x1")):
        with pytest.raises(InputError) as err:
            run()
        assert "unknown symbol 'x' at position 2 of '1x1'" in str(err.value)
    with pytest.raises(InputError, match="sees no tokens"):
        forward(model, [""])
    with pytest.raises(InputError, match="sees no tokens"):
        forward_exact(model, "")


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match="file not found"):
        load_model(tmp_path / "nope.json")
