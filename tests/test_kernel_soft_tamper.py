"""The soft-certificate checker (attncert.kernel.soft.checker) names the failed claim, the field and
the reason exactly — every edit of tests/test_kernel_soft.py again, checked strictly — and
its language memberships agree with brute-force definitions on every short string; the
2-Dyck floor's parameter range and a readout functional are checked (issue 25's mutation
analysis: the older test looked for two substrings of the summary)."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import re
import sys
from pathlib import Path

import pytest

from attncert.certificates.soft import FloorClaim, certificate_from_dict, z_range
from attncert.errors import InputError, SpecError
from attncert.kernel.soft import checker as K
from attncert.model.zoo import zoo_model

sys.path.insert(0, str(Path(__file__).parent))
import test_kernel_soft as older

EDITS = next(
    m
    for m in older.test_every_edited_field_is_rejected_with_a_reason.pytestmark
    if m.name == "parametrize"
).args[1]

# (claim, where, reason pattern) of each edit, in the order of EDITS
EXPECTED = [
    ("sensitivity", "sensitivity.bound", r"claimed B\(n\) \S+ is not sound: re-derived \S+"),
    (
        "sensitivity",
        "sensitivity.bound",
        r"claimed B\(n\) \S+ is not what the propagation gives .*",
    ),
    (
        "sensitivity",
        "sensitivity.per_symbol[0]",
        r"claimed propagated bound 0\.001 is not sound: .*",
    ),
    (
        "sensitivity",
        "sensitivity.per_symbol[1]",
        r"claimed z_hi -10\.0 is not sound: re-derived .*",
    ),
    (
        "sensitivity",
        "sensitivity.per_symbol[1]",
        r"claimed z_lo -100\.0 is not what the propagation .*",
    ),
    (
        "sensitivity",
        "sensitivity.per_symbol",
        r"one entry per readout symbol \['0', '1'\] is needed",
    ),
    ("floor", "sensitivity.floor", r"claimed floor 0\.5 nats exceeds the certified \S+"),
    ("floor", "sensitivity.floor", r"claimed floor 0\.0 is not what B gives \(\S+\)"),
    (
        "floor",
        "sensitivity.floor",
        r"the 2-Dyck floor needs a model over \(\)\[\] and the readout .*",
    ),
    (
        "restriction",
        "restriction.decision",
        r"the re-derived range \[\S+, \S+\] does not exclude 0 .*",
    ),
    ("restriction", "restriction.z_range", r"claimed z_lo \S+ is not sound: re-derived \S+"),
    ("restriction", "restriction.z_range", r"claimed z_hi \S+ is not sound: re-derived \S+"),
    ("restriction", "restriction.rho", r"not a length-24 restriction over Σ ∪ \{\*\}"),
    (
        "restriction",
        "restriction.z_range",
        r"claimed z_lo \S+ is not what the propagation gives .*",
    ),
    ("method", "method.tolerance", r"0\.5 is outside \[0, 1e-3\]"),
    ("format", "method", r"field 'lp' has the wrong type str"),
    ("model", "model.sha256", r"certificate is for model 000000000000…, this model's hash is .*"),
    ("sensitivity", "sensitivity.per_symbol[0]", r"claimed z_lo \S+ is not sound: re-derived \S+"),
    ("format", "format/version", r"expected 'attncert-soft-certificate' version 1"),
    ("pair", "pair.precisions[0]", r"the sign is decided at 53 bits, not 106"),
    ("pair", "pair", r"two precisions and two logit enclosures are needed"),
    ("pair", "pair.logits[0]", r"the recorded enclosure is not the evaluation at 53 bits \(.*\)"),
    ("pair", "pair.strings", r"the two strings are equal"),
    ("pair", "pair.membership", r"the strings' membership is \[False, True\]"),
    ("pair", "pair.membership", r"the strings' membership is \[True, False\]"),
    ("pair", "pair.decision", r"the restriction's certified decision is False"),
    (
        "pair",
        "pair.language",
        r"anbn is over 'ab', the model over '01'",
    ),
    ("pair", "pair", r"a pair needs a restriction whose decision it inherits"),
]


@pytest.fixture(scope="module")
def cert():
    out = older.certify_soft(zoo_model("soft_parity_lm"), 24, restriction=True, time_limit=30)
    assert out.check.accepted
    return out.certificate.to_dict()


@pytest.mark.slow
def test_every_edit_names_its_claim_field_and_reason(cert):
    assert len(EDITS) == len(EXPECTED)
    model = zoo_model("soft_parity_lm")
    for (edit, claim, _), (want_claim, where, reason) in zip(EDITS, EXPECTED, strict=True):
        data = copy.deepcopy(cert)
        edit(data)
        report = K.check(data, model)
        assert not report.accepted and report.failures, (claim, where)
        f = report.failures[0]
        assert (f.claim, f.where) == (want_claim, where), f
        assert re.fullmatch(reason, f.reason), f.reason
        assert report.summary() == "REJECTED: " + "; ".join(str(x) for x in report.failures)
        assert report.facts is not None


MORE = [
    (
        lambda d: d["restriction"].__setitem__("method", "box"),
        ("restriction", "restriction.z_range", r"claimed z_lo \S+ is not what the propagation .*"),
    ),
    (
        lambda d: d["restriction"].__setitem__("method", "lp"),
        ("restriction", "restriction.method", r"'lp': expected 'box' or 'affine'"),
    ),
    (
        lambda d: d.__setitem__("sensitivity", 3),
        ("format", "sensitivity", r"expected a list of claims"),
    ),
    (
        lambda d: d["sensitivity"][0].__setitem__("per_symbol", 3),
        ("format", "sensitivity", r"field 'per_symbol' has the wrong type int"),
    ),
    (
        lambda d: d["sensitivity"][0].__setitem__("bound", "x"),
        ("format", "sensitivity", r"field 'bound' has the wrong type str"),
    ),
    (
        lambda d: d["restriction"].__setitem__("rho", 5),
        ("format", "restriction", r"field 'rho' has the wrong type int"),
    ),
    (
        lambda d: d["restriction"].__setitem__("base", "0" * 23),
        ("restriction", "restriction.base", r"the base string has length 23, the restriction 24"),
    ),
]


def test_more_edits_name_their_claim_field_and_reason(cert):
    model = zoo_model("soft_parity_lm")
    accepted = K.check(cert, model)
    assert accepted.accepted and accepted.failures == ()
    assert accepted.summary() == "CHECKED: " + "; ".join(accepted.facts)
    for edit, (claim, where, reason) in MORE:
        data = copy.deepcopy(cert)
        edit(data)
        f = K.check(data, model).failures[0]
        assert (f.claim, f.where) == (claim, where), f
        assert re.fullmatch(reason, f.reason), f.reason


def _dyck(s: str, pairs: dict[str, str]) -> bool:
    """Balanced brackets by the grammar S → ε | (S)S [| [S]S]: depth-first on the string."""
    depth = []
    for c in s:
        if c in pairs.values():
            depth.append(c)
        elif not depth or depth.pop() != pairs[c]:
            return False
    return not depth


def test_memberships_agree_with_their_definitions_on_every_short_string():
    for n in range(7):
        for s in map("".join, itertools.product("01", repeat=n)):
            assert K._language("parity").contains(s) == (s.count("1") % 2 == 0)
            assert K._language("parity-odd").contains(s) == (s.count("1") % 2 == 1)
        for s in map("".join, itertools.product("()[]", repeat=n)):
            assert K._language("dyck2").contains(s) == _dyck(s, {")": "(", "]": "["}), s
        for s in map("".join, itertools.product("()", repeat=n)):
            assert K._language("dyck1").contains(s) == _dyck(s, {")": "("}), s
    with pytest.raises(InputError, match="unknown symbol"):  # [ is not a dyck1 symbol (the
        K._language("dyck1").contains("[]")  # checker compares the alphabets first)
    assert K._language("klingon") is None
    for s in map("".join, itertools.product("01", repeat=4)):  # soft-certify's other two
        assert K._language("first_last").contains(s) == (s[0] == s[-1])
        assert K._language("majority").contains(s) == (s.count("1") > s.count("0"))


def test_the_2dyck_floor_parameter_must_lie_in_the_open_half_interval():
    def floor(p: str) -> FloorClaim:
        return FloorClaim("dyck2-bracket-type", 0.0, p=p, p_u=0.0)

    for p, bad in (("1/2", True), ("1/3", False), ("0", True), ("2/5", False), ("x", True)):
        got = K._check_floor(floor(p), 1.0, 8, 1e-6)
        if bad:
            assert got is not None and ("outside (0, 1/2)" in got or "not a fraction" in got), p
        else:
            assert got is None or "P(U_n)" in got, (p, got)
    assert K._check_floor(floor("3"), 1.0, 8, 1e-6) == "p = 3 is outside (0, 1/2)"


def test_a_readout_functional_is_checked(cert):
    """Its shape by the reader (``certificates.soft``), its symbols against the model's by
    the checker; both name the sensitivity claim."""
    model = zoo_model("soft_parity_lm")
    assert K._readout_model(model, "accept") == (model, 0.0)
    with pytest.raises(SpecError, match="readout") as err:
        K._readout_model(model, ("0", "x"))  # x is not one of the model's lm symbols
    assert err.value.where == "sensitivity"
    for bad in ({"lm_difference": ["0"]}, {"other": 1}, "reject"):
        data = copy.deepcopy(cert)
        data["sensitivity"][0]["readout"] = bad
        with pytest.raises(SpecError, match="readout") as err:
            certificate_from_dict(data)
        assert err.value.where == "sensitivity"
        f = K.check(data, model).failures[0]
        assert (f.claim, f.where) == ("format", "sensitivity"), f
    with pytest.raises(SpecError, match=r"field 'z_range' has the wrong type int"):
        z_range({"z_range": 3}, "restriction")


@pytest.mark.slow
@pytest.mark.parametrize("position", ["mean", "first"])
def test_a_readout_without_a_readout_symbol_has_one_sensitivity_entry(position):
    """A mean readout, or one at BOS, reads no input symbol: the sensitivity claim has a
    single entry (no readout symbol), accepted; one entry per symbol is rejected."""
    base = zoo_model("soft_parity_lm")
    model = dataclasses.replace(base, readout=dataclasses.replace(base.readout, position=position))
    out = older.certify_soft(model, 24, restriction=True, time_limit=30)
    data = out.certificate.to_dict()
    per = data["sensitivity"][0]["per_symbol"]
    assert [e.get("symbol") for e in per] == [None]
    assert K.check(data, model).accepted
    bad = copy.deepcopy(data)
    bad["sensitivity"][0]["per_symbol"] = [
        {**per[0], "symbol": "0"},
        {**per[0], "symbol": "1"},
    ]
    f = K.check(bad, model).failures[0]
    assert (f.claim, f.where) == ("sensitivity", "sensitivity.per_symbol"), f
    assert f.reason == "one entry per readout symbol [None] is needed"


def test_a_per_symbol_bound_below_the_rederived_one_is_not_sound(cert):
    model = zoo_model("soft_parity_lm")
    data = copy.deepcopy(cert)
    entry = data["sensitivity"][0]["per_symbol"][1]
    entry["bound"] = entry["bound"] * (1 - 1e-9)
    f = K.check(data, model).failures[0]
    assert (f.claim, f.where) == ("sensitivity", "sensitivity.per_symbol[1]"), f
    assert re.fullmatch(r"claimed bound \S+ is not sound: re-derived \S+", f.reason), f.reason


@pytest.mark.slow
@pytest.mark.parametrize("lp", [True, False])
def test_one_shared_propagation_serves_every_readout_symbol_after_a_final_norm(lp):
    """With a final LayerNorm the readout back-substitution does not apply: one propagation
    in which every free position may change serves all readout symbols (with or without
    the LP bounds). The certificate is accepted; a propagated bound of 0 (what a pass in which nothing may change gives)
    is rejected as not sound."""
    from test_model_v2 import v2_model

    from attncert.kernel.soft.propagate import readout_index, split_by_symbol

    model = v2_model(5, readout="last", activation="relu")
    assert not split_by_symbol(model, readout_index(model, 12))
    data = older.certify_soft(model, 12, lp=lp).certificate.to_dict()
    assert data["method"]["lp"] is lp
    assert [e["symbol"] for e in data["sensitivity"][0]["per_symbol"]] == ["0", "1"]
    assert K.check(data, model).accepted
    for k in (0, 1):
        bad = copy.deepcopy(data)
        bad["sensitivity"][0]["per_symbol"][k]["propagated"] = 0.0
        f = K.check(bad, model).failures[0]
        assert (f.claim, f.where) == ("sensitivity", f"sensitivity.per_symbol[{k}]"), f
        assert re.fullmatch(
            r"claimed propagated bound 0\.0 is not sound: re-derived \S+", f.reason
        ), f.reason


def test_an_affine_restriction_on_a_model_outside_the_method_is_refused_with_the_reason(cert):
    """A soft certificate presented for a model the affine method does not cover (here its
    head made hard, the model hash updated): the restriction claim is refused with the
    method's reason, not re-derived by another method."""
    from attncert.model.spec import AttentionKind

    model = zoo_model("soft_parity_lm")
    layer = model.layers[0]
    hard_head = dataclasses.replace(layer.heads[0], kind=AttentionKind.LEFTMOST, temperature=None)
    hard = dataclasses.replace(model, layers=(dataclasses.replace(layer, heads=(hard_head,)),))
    data = copy.deepcopy(cert)
    assert data["restriction"]["method"] == "affine"
    data["model"]["sha256"] = hard.digest
    data["sensitivity"] = []
    report = K.check(data, hard)
    assert not report.accepted
    assert report.failures == (
        K.Failure(
            "restriction",
            "restriction.method",
            "layers[0].heads[0] is a leftmost hard-attention head (affine forms bound softmax "
            "heads)",
        ),
    )
