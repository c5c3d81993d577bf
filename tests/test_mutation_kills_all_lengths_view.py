"""The all-length checker's view of a model (kernel/all_lengths/view), pinned where a
mutation survived the end-to-end tests (issue 34): the parity identities of rule PE, the
exact value of a positional combination in a case, the embedding's facts about a
coordinate, rule FFN-BOX through a named linear form, and the models the view refuses."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from flint import fmpq

from attncert.compile import compile_formula
from attncert.kernel.all_lengths.view import (
    PREDICATE_COLUMNS,
    LayerView,
    ModelView,
    NotSupported,
    Val,
    _parity_identity,
    combo_value,
    embedding_val,
    ffn_affine,
)
from attncert.logic import syntax as s
from attncert.model.spec import Temperature

HALF = fmpq(1, 2)


def test_parity_identities_hold_and_a_swapped_column_fails():
    for (name, shift), combo in PREDICATE_COLUMNS.items():
        if name in ("ODD", "EVEN"):
            assert _parity_identity(name, shift, combo)
            flipped = {**combo, "(-1)^i": -combo["(-1)^i"]}
            assert not _parity_identity(name, shift, flipped)
    # [j odd] = 1/2 − (−1)^j/2: the constant part is needed
    assert not _parity_identity("ODD", 0, {"(-1)^i": -HALF})


def test_first_mark_value_in_each_case():
    combo = {"[i=1]": fmpq(3), "1": fmpq(1)}
    assert combo_value(combo, {"first": True}) == 4
    assert combo_value(combo, {"first": False}) == 1
    assert combo_value(combo, {"last": True}) is None


def _fake_view(word, pos):
    return SimpleNamespace(writers={0: set()}, word=[word], pos=[pos], alphabet=("a", "b"))


def test_an_unwritten_coordinate_is_false_and_zero():
    v = embedding_val(_fake_view((fmpq(0), fmpq(0)), {}), 0)
    assert v == Val(0, formula=s.Bottom(), const=fmpq(0), pe=())


def test_a_word_constant_cancelled_by_its_position_part_is_zero():
    v = embedding_val(_fake_view((fmpq(1), fmpq(1)), {"1": fmpq(-1)}), 0)
    assert v == Val(0, formula=None, pe=(), const=fmpq(0))


def test_ffn_box_through_a_named_form_with_unit_pivot():
    # unit ReLU(y0 + y1) writes coordinate 5; the form f = y0 + y1 ranges over [1, 2]
    layer = LayerView((), (({0: fmpq(1), 1: fmpq(1)}, fmpq(0)),), {5: {0: fmpq(3)}}, {})
    forms = {"f": {0: fmpq(1), 1: fmpq(1)}}
    out = ffn_affine(layer, 5, {"f": (fmpq(1), fmpq(2))}, forms)
    assert out == ({"f": fmpq(3)}, fmpq(0))


def _prev_model():
    return compile_formula("prev Q_1", regime="temperature", alphabet="01")


def _with_heads(model, edit):
    layer = model.layers[0]
    heads = tuple(edit(h) for h in layer.heads)
    return dataclasses.replace(model, layers=(dataclasses.replace(layer, heads=heads),))


def test_a_model_with_attention_biases_is_refused_by_name():
    m = _with_heads(_prev_model(), lambda h: dataclasses.replace(h, b_q=np.zeros(2)))
    with pytest.raises(NotSupported, match=r"^the model uses attention biases$"):
        ModelView(m)


def test_a_squared_log_temperature_is_refused():
    t = Temperature(1.375, n_power=1, log_power=2)
    m = _with_heads(_prev_model(), lambda h: dataclasses.replace(h, temperature=t))
    with pytest.raises(NotSupported, match="layer 0 head 0: temperature"):
        ModelView(m)


def test_a_missing_head_is_refused():
    view = ModelView(_prev_model())
    assert view.head(0, 1).index == 1
    with pytest.raises(NotSupported, match="no head 2 in layer 0"):
        view.head(0, 2)
    with pytest.raises(NotSupported, match="no head 0 in layer 1"):
        view.head(1, 0)
