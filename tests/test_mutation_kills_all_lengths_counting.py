"""The all-length checker's counting gadgets (kernel/all_lengths/counting), pinned where a
mutation survived the end-to-end tests (issue 34): edited certificates and models rejected
naming the gadget field and the exact reason — the lookup's predicate columns, value
budget and count FFN, the threshold's counts, offset and FFN on the counts' whole range."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from all_lengths_edits import first_failure as _failure

from attncert.compile import compile_formula
from attncert.kernel.all_lengths import checker as K
from attncert.prove.all_lengths import prove_all_lengths
from attncert.prove.all_lengths_certificate import certificate_to_dict

MIXED = "2*#<[Q_a] - #>[Q_b] >= 1 | HALF(#>[Q_a])"
MAJORITY = "#<[Q_1] > #<[Q_0]"


@pytest.fixture(scope="module")
def mixed():
    m = compile_formula(MIXED, regime="temperature", alphabet="ab")
    return m, prove_all_lengths(MIXED, m).certificate


@pytest.fixture(scope="module")
def majority():
    m = compile_formula(MAJORITY, regime="future-masked", alphabet="01")
    return m, prove_all_lengths(MAJORITY, m).certificate


def _index(cert, kind, pred=lambda g: True):
    return next(
        k
        for k, g in enumerate(certificate_to_dict(cert)["gadgets"])
        if g["kind"] == kind and pred(g)
    )


def _with_ffn(model, layer, **edits):
    """The model with entries of a layer's FFN arrays replaced: name → {index: value}."""
    layers = list(model.layers)
    ffn = layers[layer].ffn
    arrays = {}
    for name, entries in edits.items():
        a = np.array(getattr(ffn, name))
        for idx, v in entries.items():
            a[idx] = v
        arrays[name] = a
    layers[layer] = dataclasses.replace(layers[layer], ffn=dataclasses.replace(ffn, **arrays))
    return dataclasses.replace(model, layers=tuple(layers))


def test_the_certificates_are_accepted(mixed, majority):
    for m, c in (mixed, majority):
        assert K.check(c, m).accepted


def test_lookup_predicate_columns_are_named(mixed):
    m, c = mixed
    k = _index(c, "lookup", lambda g: bool(g["preds"]))
    f = _failure(m, c, lambda d: d["gadgets"][k].__setitem__("preds", [["HALF", 22, 20]]))
    assert f.where == f"gadget {k} (lookup): preds"
    assert f.reason == "coordinate 22 does not receive HALF(j − 1)"


def test_lookup_value_budget_must_be_a_rational(mixed):
    m, c = mixed
    k = _index(c, "lookup", lambda g: g["value"] == 7)
    f = _failure(m, c, lambda d: d["gadgets"][k].__setitem__("value_budget", "x"))
    assert f.where == f"gadget {k} (lookup): value_budget"
    assert f.reason == "value_budget: 'x' (expected a rational 'p/q' or an integer)"


def test_lookup_count_ffn_reading_an_unbounded_coordinate(mixed):
    m, c = mixed
    k = _index(c, "lookup", lambda g: g["value"] == 7)
    f = _failure(m, c, new_model=_with_ffn(m, 1, w1={(0, 20): 1.0}))
    assert f.where == f"gadget {k} (lookup): FFN of layer 1 → count 7"
    assert f.reason == "FFN unit 0 reads coordinate 20, which the case does not bound"


def test_lookup_count_ffn_adding_twice_phi(mixed):
    m, c = mixed
    k = _index(c, "lookup", lambda g: g["value"] == 7)
    f = _failure(m, c, new_model=_with_ffn(m, 1, w2={(7, 0): 2.0}))
    assert f.where == f"gadget {k} (lookup): FFN of layer 1 → count 7"
    assert f.reason == "does not add [φ_i]/n (case φ_i = 1)"


def test_lookup_mean_of_the_wrong_formula(mixed):
    m, c = mixed
    k = _index(c, "lookup", lambda g: g["value"] == 7)
    f = _failure(m, c, lambda d: d["gadgets"][k].__setitem__("mean", 4))
    assert f.where == f"gadget {k} (lookup): mean"
    assert f.reason.startswith("coordinate 4 holds the mean of first over future_strict, not of")


def test_threshold_counts_in_the_wrong_order(mixed):
    m, c = mixed
    k = _index(c, "threshold-sign")
    f = _failure(m, c, lambda d: d["gadgets"][k]["counts"].reverse())
    assert f.where == f"gadget {k} (threshold-sign): counts"
    assert f.reason.startswith("coordinate 14 counts ")


def test_a_clamp_on_counts_per_n_is_refused(mixed):
    m, c = mixed
    k = _index(c, "threshold-sign")
    f = _failure(m, c, lambda d: d["gadgets"][k].__setitem__("kind", "threshold-clamp"))
    assert f.where == f"gadget {k} (threshold-clamp): counts"
    assert f.reason == "the clamp needs unscaled looked-up counts"


def test_threshold_sign_offset_of_means_is_named(majority):
    m, c = majority
    k = _index(c, "threshold-sign")
    f = _failure(m, c, lambda d: d["gadgets"][k].__setitem__("offset", 6))
    assert f.where == f"gadget {k} (threshold-sign): offset"
    assert f.reason == "coordinate 6 is not 1/den for the means' side"


def test_threshold_sign_ffn_is_checked_on_the_counts_whole_range(mixed):
    # unit 2 reads −16·count₇ + 8·count₁₄ + 4·offset (+44·flag): with bias −10.45 its
    # pre-activation is positive only where count₇ < 0 or count₁₄ > 1 — values within the
    # lookups' error r/n ≤ 1/48 of [0, 1] that the counts do take
    m, c = mixed
    k = _index(c, "threshold-sign")
    f = _failure(m, c, new_model=_with_ffn(m, 2, b1={2: -10.45}))
    case = "case two or more visible keys, [x > 0] = 0 ± budget 1/4"
    assert f.where == f"gadget {k} (threshold-sign): FFN of layer 2 → coordinate 17, {case}"
    assert "takes both signs" in f.reason
