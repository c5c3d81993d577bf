"""Building models from array dictionaries (the PyTorch importer: tests/test_import_torch.py)."""

from __future__ import annotations

import numpy as np
import pytest

from attncert.errors import SpecError
from attncert.model import Temperature, forward, random_model, zoo_model
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
