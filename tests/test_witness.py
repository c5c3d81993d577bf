"""Issue 24: the non-constancy witness. CERTIFIED needs two strings of length n with
different decisions, decided by the kernel; a constant model can never be CERTIFIED; a
witness that is swapped, edited or forged is rejected with a precise reason; old
certificates still load (no witness); brute force over all strings re-derives every
witness claim."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from attncert.certificates.hard import FixedDependence, Witness, certificate_from_dict
from attncert.errors import SpecError
from attncert.hard.bruteforce import confirm_by_enumeration, confirm_witness_by_enumeration
from attncert.hard.certificate import certificate_to_dict
from attncert.hard.pipeline import certify
from attncert.hard.verdict import assess
from attncert.kernel.hard.checker import check
from attncert.kernel.hard.decide import decide
from attncert.languages import language
from attncert.model import harden, random_model, zoo_model
from attncert.model.spec import Readout
from attncert.verdicts import Verdict

PROOFS = Path(__file__).parents[1] / "proofs" / "hahn2020" / "theorem1"


def _constant(model, bias: float):
    """``model`` with a readout that ignores every activation: logit = bias."""
    return dataclasses.replace(
        model, readout=Readout(weight=np.zeros(model.d), bias=bias), name="constant"
    )


def _verdict(model, n, lang="parity"):
    cert = certify(model, n=n, language=lang)
    report = check(cert, model)
    return cert, report, assess(cert, model, report)


@pytest.fixture(scope="module")
def first_last():
    model = harden(zoo_model("trained_first_last"))
    cert, report, a = _verdict(model, 64)
    return model, cert, report, a


# --------------------------------------------------------------------- constant models
@pytest.mark.slow
@pytest.mark.parametrize(
    ("base", "bias", "n"),
    [
        ("random", 1.0, 12),
        ("random", -0.5, 64),
        ("ones_star", 2.0, 16),
        ("first_last", -1.0, 128),
    ],
)
def test_a_constant_model_is_never_certified(base, bias, n):
    source = {
        "random": lambda: random_model(2, 2, 8, seed=3),
        "ones_star": lambda: zoo_model("ones_star"),
        "first_last": lambda: harden(zoo_model("trained_first_last")),
    }[base]()
    model = _constant(source, bias)
    cert, report, a = _verdict(model, n)
    assert report.accepted and not report.nonconstant and cert.witness is None
    assert a.verdict is not Verdict.CERTIFIED
    # at small n a paper invariant may fail too (OUTSIDE-THEOREM); the vacuity is said
    assert a.verdict in (Verdict.CERTIFIED_TRIVIAL, Verdict.OUTSIDE_THEOREM)
    assert n < 64 or a.verdict is Verdict.CERTIFIED_TRIVIAL
    assert any("no non-constancy witness" in r and f"n = {n}" in r for r in a.reasons)
    assert cert.trace["witness_search"]["found"] is None


def test_a_forged_witness_on_a_constant_model_is_rejected():
    model = _constant(random_model(1, 1, 8, seed=6), 0.25)
    n = 16
    cert = certify(model, n=n, language="parity")
    a, b = "0" * n, "1" * n
    lie = dataclasses.replace(cert, witness=Witness((a, b), (True, False)))
    report = check(lie, model)
    assert not report.accepted
    f = report.failures[0]
    assert (f.claim, f.where) == ("witness", "decisions[1]")
    assert "rigorous forward pass gives True on strings[1], not False" in f.reason
    honest = dataclasses.replace(cert, witness=Witness((a, b), (True, True)))
    f = check(honest, model).failures[0]
    assert (f.claim, f.where) == ("witness", "decisions")
    assert "answers True on both strings" in f.reason


# --------------------------------------------------------------------- non-constant models
def test_first_last_is_certified_with_its_fixed_positions(first_last):
    """The hardened first = last model: its decision is constant on the restriction (ρ_L
    fixes the first and the last symbol), the model is not — the verdict is CERTIFIED and
    the dependence on positions 1 and n is checked."""
    _model, cert, report, a = first_last
    assert a.verdict is Verdict.CERTIFIED, a.reasons
    assert report.nonconstant and not cert.output_dependency
    assert report.fixed_dependence == (0, 63)
    assert cert.witness is not None and cert.misclassified is not None
    assert any("not constant at n = 64" in f for f in report.facts)
    assert any("fixed position(s) {1, 64}" in f for f in report.facts)


def test_the_check_decides_each_named_string_once(first_last, monkeypatch):
    """A string named by two claims (the witness's changed string is also a fixed
    position's) is decided once by the check; every claim still gets its decision (a
    tampered fixed-position decision on that very string is rejected)."""
    import attncert.kernel.hard.checker as kh

    model, cert, _report, _a = first_last
    calls: list[str] = []

    def counting(m, s):
        calls.append(s)
        return decide(m, s)

    monkeypatch.setattr(kh, "decide", counting)
    base = cert.witness.strings[0]
    named = [*cert.misclassified.strings, *cert.witness.strings]
    named += [base[: f.position] + f.symbol + base[f.position + 1 :] for f in cert.fixed_dependence]
    assert len(set(named)) < len(named)  # the case this is about
    report = check(cert, model)
    assert report.accepted and sorted(calls) == sorted(set(named))
    fd = cert.fixed_dependence[0]
    bad = dataclasses.replace(
        cert, fixed_dependence=(dataclasses.replace(fd, decision=not fd.decision),)
    )
    f = check(bad, model).failures[0]
    assert f.claim == "fixed_dependence" and "gives" in f.reason


def test_a_witness_from_the_output_table():
    """When the decision depends on a free input, the witness is two ρ_L-compatible
    strings that differ only there (read off the collapsed output table)."""
    model = random_model(1, 1, 8, seed=6)
    cert, report, a = _verdict(model, 64)
    assert a.verdict is Verdict.CERTIFIED and report.nonconstant
    s, t = cert.witness.strings
    differ = [i for i in range(64) if s[i] != t[i]]
    assert len(differ) == 1 and differ[0] in cert.output_dependency
    assert cert.trace["witness_search"]["found"].startswith("output table")


def test_swapped_witness_strings_are_rejected(first_last):
    model, cert, _report, _a = first_last
    w = cert.witness
    swapped = dataclasses.replace(cert, witness=Witness(w.strings[::-1], w.decisions))
    f = check(swapped, model).failures[0]
    assert (f.claim, f.where) == ("witness", "decisions[0]")
    assert f"gives {w.decisions[1]} on strings[0], not {w.decisions[0]}" in f.reason


def test_edited_witness_strings_are_rejected(first_last):
    model, cert, _report, _a = first_last
    w = cert.witness
    s, t = w.strings
    u = next(i for i in range(cert.n) if s[i] != t[i])
    undone = t[:u] + s[u] + t[u + 1 :]  # the one change undone: the same decision as s
    cases = {
        "decisions[1]": (s, undone),
        "strings[1]": (s, t[:-1]),
        "strings[0] position 3": (s[:2] + "x" + s[3:], t),
    }
    for where, strings in cases.items():
        f = check(dataclasses.replace(cert, witness=Witness(strings, w.decisions)), model)
        assert not f.accepted
        got = f.failures[0]
        assert got.claim == "witness" and got.where == where, got
    f = check(dataclasses.replace(cert, witness=Witness((s, undone), w.decisions)), model)
    assert "not " + str(w.decisions[1]) in f.failures[0].reason
    f = check(dataclasses.replace(cert, witness=Witness((s, t[:-1]), w.decisions)), model)
    assert f.failures[0].reason == f"has length {cert.n - 1}, not n = {cert.n}"


def test_edited_fixed_dependence_is_rejected(first_last):
    model, cert, _report, _a = first_last
    rho = cert.final_restriction
    base = cert.witness.strings[0]
    free = rho.free_positions[0]
    idle = next(
        u
        for u in range(cert.n)
        if rho.fixed[u] is not None
        and u not in (0, cert.n - 1)
        and decide(model, base[:u] + ("1" if base[u] == "0" else "0") + base[u + 1 :])
        == cert.witness.decisions[0]
    )
    flip = "1" if base[idle] == "0" else "0"
    cases = [
        (FixedDependence(free, "1" if base[free] == "0" else "0", True), "is free under ρ_L"),
        (FixedDependence(idle, flip, not cert.witness.decisions[0]), "gives"),
        (FixedDependence(idle, flip, cert.witness.decisions[0]), "leaves the decision"),
        (FixedDependence(0, base[0], True), "is not another symbol"),
        (FixedDependence(cert.n, "0", True), "beyond n"),
    ]
    for entry, reason in cases:
        bad = dataclasses.replace(cert, fixed_dependence=(entry,))
        f = check(bad, model).failures[0]
        assert f.claim == "fixed_dependence" and reason in f.reason, (entry, f)
    # the base string must be ρ_L-compatible: change a fixed position that does not
    # change the decision
    moved = base[:idle] + flip + base[idle + 1 :]
    w = Witness((moved, cert.witness.strings[1]), cert.witness.decisions)
    f = check(dataclasses.replace(cert, witness=w), model).failures[0]
    assert (f.claim, f.where) == ("fixed_dependence", "witness.strings[0]")


# --------------------------------------------------------------------- the format
def test_version_3_round_trip_and_field_errors(first_last):
    _model, cert, _report, _a = first_last
    data = certificate_to_dict(cert)
    assert data["version"] == 3 and data["witness"]["strings"] == list(cert.witness.strings)
    assert [e["position"] for e in data["fixed_dependence"]] == [
        f.position + 1 for f in cert.fixed_dependence
    ]
    back = certificate_from_dict(json.loads(json.dumps(data)))
    assert back.witness == cert.witness and back.fixed_dependence == cert.fixed_dependence
    broken = json.loads(json.dumps(data))
    broken["witness"]["strings"] = broken["witness"]["strings"][:1]
    with pytest.raises(SpecError, match=r"witness\.strings"):
        certificate_from_dict(broken)
    broken = json.loads(json.dumps(data))
    broken["fixed_dependence"][0]["position"] = 0
    with pytest.raises(SpecError, match="1-based"):
        certificate_from_dict(broken)
    broken = json.loads(json.dumps(data))
    del broken["witness"]
    with pytest.raises(SpecError, match="needs a witness"):
        certificate_from_dict(broken)


def test_an_old_certificate_loads_and_has_no_witness():
    """Version-1 and version-2 certificates (what the stored proofs held before issue 24)
    still load and check; they carry no witness, so their verdict is CERTIFIED-TRIVIAL,
    saying why."""
    path = PROOFS / "parity-random-L2-H2-d16-n256" / "certificate.json"
    data = json.loads(path.read_text())
    data["trace"].pop("witness_search", None)  # as a version-2 writer left it
    model = zoo_model("random-L2-H2-d16")
    for version in (2, 1):
        if version == 1:
            data["model"].pop("source", None)
        data["version"] = version
        cert = certificate_from_dict(data)
        assert cert.witness is None and certificate_to_dict(cert)["version"] == version
        report = check(cert, model)
        assert report.accepted and not report.nonconstant
        a = assess(cert, model, report)
        assert a.verdict is Verdict.CERTIFIED_TRIVIAL
        assert any("format version ≤ 2" in r for r in a.reasons)


# --------------------------------------------------------------------- brute force
BRUTE = [
    ("ones_star", lambda: zoo_model("ones_star"), 10, "parity"),
    ("first_last", lambda: harden(zoo_model("trained_first_last")), 12, "parity"),
    ("random-1-1-8", lambda: random_model(1, 1, 8, seed=6), 12, "parity"),
    ("random-2-2-16", lambda: zoo_model("random-L2-H2-d16"), 12, "parity"),
    ("constant", lambda: _constant(random_model(2, 2, 8, seed=3), 1.0), 10, "parity"),
    *(
        (f"{name}-{lang}", lambda name=name: harden(zoo_model(name)), n, lang)
        for name, n, lang in (
            ("trained_hard_first_last", 14, "parity"),
            ("trained_hard_first_last", 12, "first_last"),
            ("trained_hard_ones_star", 14, "parity"),
            ("trained_hard_ones_star", 12, "ones_star"),
            ("trained_hard_majority", 14, "majority"),
            ("trained_hard_majority", 12, "parity"),
            ("trained_hard_parity", 14, "parity"),
            ("trained_hard_dyck1", 14, "dyck1"),
        )
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "factory", "n", "lang"), BRUTE, ids=[b[0] for b in BRUTE])
def test_brute_force_agrees_with_the_certificate(name, factory, n, lang):
    """Every string of length n: the kernel's witness decisions are the model's, a
    witness exists exactly when the model is not constant, and every reported fixed
    position is one the decision depends on."""
    model = factory()
    cert, report, a = _verdict(model, n, lang)
    assert report.accepted
    bf = confirm_witness_by_enumeration(model, cert)
    assert report.nonconstant == (not bf.constant), name
    if cert.witness is not None:
        assert bf.witness_decisions == cert.witness.decisions
    assert set(report.fixed_dependence) <= bf.fixed_dependence
    assert confirm_by_enumeration(model, cert, language(lang)).decision_is_function
    assert (a.verdict is Verdict.CERTIFIED) == (
        not bf.constant and cert.misclassified is not None and a.verdict.checked
    ) or a.verdict is Verdict.OUTSIDE_THEOREM


# --------------------------------------------------------------------- the soft model
def test_the_misclassified_pair_on_the_soft_model():
    """A hardened model's pair is decided on the soft model too (arb): wrong there as
    well for a trained hard model; right on the WRONG string for a soft-trained Dyck-1
    model whose hardened version rejects everything — and the output says which."""
    from attncert.hard.soft_pair import confirm_on_soft
    from attncert.model.forward import accepts

    soft = zoo_model("trained_hard_first_last")
    cert = certify(harden(soft), n=48, language="parity")
    pair = confirm_on_soft(soft, cert)
    assert pair.misclassified is True and pair.precisions == (53, 53)
    assert list(pair.decisions) == list(accepts(soft, list(cert.misclassified.strings)))
    assert "misclassifies the WRONG string too" in pair.sentence("parity")

    soft = zoo_model("trained_dyck1")
    cert = certify(harden(soft), n=64, language="dyck1")
    pair = confirm_on_soft(soft, cert)
    assert pair.misclassified is False
    assert cert.misclassified.decisions == (False, False)  # the hardened model rejects both
    assert pair.decisions[pair.wrong] is True  # the soft network accepts the Dyck word
    assert "the error is the hardened model's" in pair.sentence("dyck1")


def test_certify_cli_reports_the_soft_pair_only_when_asked_or_small(capsys):
    from attncert.cli.main import main

    assert main(["certify", "--n", "32", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["soft_pair"]["soft_misclassifies"] is True
    assert main(["certify", "--n", "32", "--json", "--soft-pair", "off"]) == 0
    assert "soft_pair" not in json.loads(capsys.readouterr().out)["summary"]
