"""The all-length checker's temporal gadgets (kernel/all_lengths/gadgets), pinned where a
mutation survived the end-to-end tests (issue 34): each edited certificate or model is
rejected naming the gadget field and the reason, the facts carry the layer they hold
from, and a FFN that is wrong only between the marks of Proposition 11 is caught."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from all_lengths_edits import first_failure as _failure

from attncert.compile import compile_formula
from attncert.compile.first_last import first_last_model
from attncert.kernel.all_lengths import checker as K
from attncert.prove.all_lengths import prove_all_lengths

PREV_NEXT = "prev Q_1 & next Q_0"


@pytest.fixture(scope="module")
def prev_parity():
    m = compile_formula("prev Q_1", regime="temperature", alphabet="01")
    return m, prove_all_lengths("prev Q_1", m).certificate


@pytest.fixture(scope="module")
def prev_shift():
    m = compile_formula(PREV_NEXT, regime="unbounded", alphabet="01")
    return m, prove_all_lengths(PREV_NEXT, m).certificate


@pytest.fixture(scope="module")
def last():
    m = first_last_model("last", "ab")
    return m, prove_all_lengths("last", m).certificate


def _with_ffn(model, **arrays):
    layers = list(model.layers)
    ffn = layers[-1].ffn
    layers[-1] = dataclasses.replace(layers[-1], ffn=dataclasses.replace(ffn, **arrays))
    return dataclasses.replace(model, layers=tuple(layers))


def test_the_certificates_are_accepted(prev_parity, prev_shift, last):
    for m, c in (prev_parity, prev_shift, last):
        assert K.check(c, m).accepted


def test_prev_parity_formula_heads_and_budget_are_named(prev_parity):
    m, c = prev_parity

    def gadget(key, value):
        return lambda d: d["gadgets"][0].__setitem__(key, value)

    f = _failure(m, c, gadget("formula", ["atom", "1"]))
    assert (f.where, f.reason) == ("gadget 0 (prev-parity): formula", "Q_1 is not ◁φ or ▷φ")
    f = _failure(m, c, gadget("heads", [0]))
    assert (f.where, f.reason) == (
        "gadget 0 (prev-parity): heads",
        "[0] is not a list of 2 integers",
    )
    f = _failure(m, c, gadget("budget", "1/2"))
    assert (f.where, f.reason) == ("gadget 0 (prev-parity): budget", "1/2 is not in (0, 1/2)")


def test_prev_parity_checks_the_ffn_where_no_key_is_visible_first(prev_parity):
    m, c = prev_parity
    b2 = np.array(m.layers[0].ffn.b2)
    b2[2] += 1.0  # the output is 1 too high in every case
    f = _failure(m, c, new_model=_with_ffn(m, b2=b2))
    case = "{'first': True, 'last': False, 'parity': 1}"
    assert (
        f.where
        == f"gadget 0 (prev-parity): FFN of layer 0 → coordinate 2, case no visible key, {case}"
    )


def test_prev_shift_formula_is_named_and_its_fact_holds_from_the_next_layer(prev_shift):
    m, c = prev_shift
    f = _failure(m, c, lambda d: d["gadgets"][0].__setitem__("formula", ["atom", "1"]))
    assert (f.where, f.reason) == ("gadget 0 (prev-shift): formula", "Q_1 is not ◁φ or ▷φ")
    st = K._run_gadgets(c, m)
    assert st.known[2].level == 1 and st.known[7].level == 1 and st.known[9].level == 2
    # the connective read in layer 0, where ◁Q_1 does not hold yet
    f = _failure(m, c, lambda d: d["gadgets"][2].__setitem__("layer", 0))
    assert f.where == "gadget 2 (bool): coordinate 2"
    assert f.reason == "holds prev Q_1 only from layer 1 on"


def test_a_connective_not_fixed_by_its_inputs_is_refused_at_formula(prev_shift):
    m, c = prev_shift
    formula = ["and", ["prev", ["atom", "1"]], ["atom", "0"]]
    f = _failure(m, c, lambda d: d["gadgets"][2].__setitem__("formula", formula))
    assert f.where == "gadget 2 (bool): formula"
    assert "is not determined by the inputs (it depends on Q_0)" in f.reason


def test_proposition11_formula_is_named(last):
    m, c = last
    f = _failure(m, c, lambda d: d["gadgets"][0].__setitem__("formula", ["atom", "a"]))
    assert (f.where, f.reason) == (
        "gadget 0 (proposition11): formula",
        "Q_a is not 'first' or 'last'",
    )


def test_proposition11_last_checks_the_positive_half_of_the_other_positions(last):
    # unit 0 becomes ReLU(3m/4 − 1/4): still 1/2 at the mark m = 1 and ≤ 0 for m ≤ 0, but
    # positive for m ∈ (1/3, 1/2], which past-masked other positions reach
    m, c = last
    w1, b1 = np.array(m.layers[0].ffn.w1), np.array(m.layers[0].ffn.b1)
    w1[0, 1], b1[0] = 0.75, -0.25
    f = _failure(m, c, new_model=_with_ffn(m, w1=w1, b1=b1))
    assert f.where.startswith("gadget 0 (proposition11): FFN of layer 0 → coordinate 2, case other")
    assert "takes both signs" in f.reason
