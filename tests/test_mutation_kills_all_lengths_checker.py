"""The all-length checker's verdict (kernel/all_lengths/checker), pinned where a mutation
survived the end-to-end tests (issue 34): every rejection's claim, place and reason for an
edited identity, inequality list, atom, proof or root formula, an unsupported model, and
the first failing length when the inequalities fail from a lowered N0."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

from attncert.certificates.all_lengths import certificate_from_dict
from attncert.compile import compile_formula
from attncert.kernel.all_lengths import checker as K
from attncert.model.spec import Temperature
from attncert.prove.all_lengths import prove_all_lengths
from attncert.prove.all_lengths_certificate import certificate_to_dict


def _prev(coef=None):
    m = compile_formula("prev Q_1", regime="temperature", alphabet="01")
    if coef is None:
        return m
    layer = m.layers[0]
    t = Temperature(coef, n_power=1)
    heads = tuple(dataclasses.replace(h, temperature=t) for h in layer.heads)
    return dataclasses.replace(m, layers=(dataclasses.replace(layer, heads=heads),))


@pytest.fixture(scope="module")
def prev():
    m = _prev()
    return m, prove_all_lengths("prev Q_1", m).certificate


@pytest.fixture(scope="module")
def tight():
    """β = 0.85·N: the bound holds from n = 3 on (N0 = 3), not at n = 2."""
    m = _prev(0.85)
    res = prove_all_lengths("prev Q_1", m)
    assert res.n0 == 3
    return m, res.certificate


def _report(model, cert, edit):
    d = copy.deepcopy(certificate_to_dict(cert))
    edit(d)
    rep = K.check(certificate_from_dict(d), model)
    assert not rep.accepted
    return rep


def _first(model, cert, edit):
    f = _report(model, cert, edit).failures[0]
    return f.claim, f.where, f.reason


def test_identity_failures_are_named(prev):
    m, c = prev
    other = _prev(2.0)
    rep = K.check(c, other)
    assert [(f.claim, f.where) for f in rep.failures] == [("identity", "model")]
    assert rep.failures[0].reason == (
        f"content hash {other.digest[:12]}… is not the certificate's {c.model_sha256[:12]}…"
    )
    got = _first(m, c, lambda d: d.__setitem__("N0", 3))
    assert got == ("identity", "bounded", "the bounded proof covers n ≤ 1 (proved), not n < N0 = 3")


def test_an_unsupported_model_is_a_construction_failure(prev):
    m, c = prev
    layer = m.layers[0]
    heads = tuple(dataclasses.replace(h, b_q=np.zeros(2)) for h in layer.heads)
    biased = dataclasses.replace(m, layers=(dataclasses.replace(layer, heads=heads),))
    got = _first(biased, c, lambda d: d["model"].__setitem__("sha256", biased.digest))
    assert got == ("construction", "model", "the model uses attention biases")


def test_a_missing_inequality_is_counted(prev):
    m, c = prev
    got = _first(m, c, lambda d: d["inequalities"].pop())
    assert got == ("inequalities", "count", "1 stored, 2 derived from the model")


def test_atoms_are_compared_and_parsed_by_name(prev):
    m, c = prev
    name = "inequality g0:L0H0"
    got = _first(m, c, lambda d: d["inequalities"][0]["atoms"].__setitem__(0, {}))
    assert got == (name, "atoms[0]", "atoms[0]: not an atom (expected {P, Phi, k[, Psi]})")
    edit = lambda d: d["inequalities"][0]["atoms"][1]["Phi"]["a"][0].__setitem__(1, "3")  # noqa: E731
    got = _first(m, c, edit)
    assert got == (
        name,
        "atoms[1]",
        "stored exponent Phi differs from the one derived from the model's weights",
    )


def test_a_malformed_proof_is_named(prev):
    m, c = prev
    got = _first(m, c, lambda d: d["inequalities"][0]["proof"].__setitem__("x1", 0))
    assert got == (
        "inequality g0:L0H0",
        "proof",
        "g0:L0H0.proof.x1: x1 = 0 (expected an integer ≥ 1)",
    )


def test_the_root_coordinate_must_hold_the_formula(prev):
    m, c = prev
    edit = lambda d: d.update(formula=["atom", "1"], formula_text="Q_1")  # noqa: E731
    got = _first(m, c, edit)
    assert got == ("readout", "coordinate 2", "holds prev Q_1, not Q_1")


def _lower_n0(d):
    d["N0"], d["bounded"]["max_len"] = 2, 1
    for e in d["inequalities"]:
        e["start"], e["text"] = 2, e["text"].replace("n >= 3", "n >= 2")


def test_the_first_failing_length_over_several_failures(tight):
    m, c = tight
    rep = _report(m, c, _lower_n0)
    assert [(f.where, f.n) for f in rep.failures] == [("R1 n = 2", 2), ("R1 n = 2", 2)]
    assert rep.first_failing_n == 2


def test_a_failure_without_a_length_keeps_the_first_failing_length(tight):
    m, c = tight

    def edit(d):
        _lower_n0(d)
        d["inequalities"][1]["proof"]["log_lower"] = "100"

    rep = _report(m, c, edit)
    assert [(f.where, f.n) for f in rep.failures] == [("R1 n = 2", 2), ("R3 log_lower", None)]
    assert rep.first_failing_n == 2
