"""Every certificate carries a verdict from a fixed set (issue 19): CERTIFIED only when
it is non-trivial and inside the theorem; the same word in --json and in the exit code."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import pytest

from attncert.cli.main import main
from attncert.hard.pipeline import certify
from attncert.hard.verdict import assess
from attncert.kernel.hard.checker import check
from attncert.model import random_model, zoo_model
from attncert.verdicts import Verdict


def _verdict(model, n, language):
    cert = certify(model, n=n, language=language)
    return cert, assess(cert, model, check(cert, model))


def test_exit_codes_are_distinct_and_documented():
    codes = {v: v.exit_code for v in Verdict}
    assert len(set(codes.values())) == len(codes)
    assert codes[Verdict.CERTIFIED] == 0 and codes[Verdict.REFUTED] == 1
    assert codes[Verdict.UNDECIDED] == 3 and 2 not in codes.values()  # 2 = bad input


def test_dyck2_program_is_outside_the_theorem_and_says_why():
    _cert, a = _verdict(zoo_model("dyck2_program"), 16, "dyck2")
    assert a.verdict is Verdict.OUTSIDE_THEOREM
    text = " ".join(a.reasons)
    assert "average-hard heads" in text
    assert "no free position" in text  # the vacuity is said too, not hidden


def test_the_default_model_is_certified_non_trivially(capsys):
    """Issue 24: the main job's default model gets CERTIFIED (exit 0) with a checked
    non-constancy witness and a checked misclassified pair."""
    code = main(["certify", "--n", "256", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "CERTIFIED" and code == 0, out["summary"]["reasons"]
    s = out["summary"]
    assert s["nonconstant"] and s["witness"] and s["misclassified"]
    assert s["output_dependency"] or s["fixed_dependence"]


def test_the_old_random_default_gets_its_honest_verdict(capsys):
    """The old default (a random model that answers the same on every string tried) stays
    available by name, and is CERTIFIED-TRIVIAL: no non-constancy witness."""
    code = main(["certify", "zoo:random-L2-H2-d16", "--n", "64", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "CERTIFIED-TRIVIAL" and code == 4
    assert out["summary"]["output_dependency"] == [] and not out["summary"]["nonconstant"]
    assert any("no non-constancy witness" in r for r in out["summary"]["reasons"])


def test_a_non_constant_model_is_certified():
    model = random_model(1, 1, 8, seed=6)
    cert, a = _verdict(model, 64, "parity")
    assert a.verdict is Verdict.CERTIFIED, a.reasons
    assert cert.output_dependency and cert.final_restriction.num_free > 0
    assert cert.misclassified is not None


def test_a_trace_invariant_is_a_note_and_the_re_derived_free_fraction_decides():
    """The verdict is the kernel's, from checked facts only (issue 41): a paper invariant
    that fails in the search's trace is a note saying so, never the verdict; the free
    fraction after each layer, re-derived from the restrictions and the stated η, q, δ,
    makes the certificate OUTSIDE-THEOREM when it falls short of the Depth Reduction
    Lemma's bound."""
    model = random_model(1, 1, 8, seed=6)
    cert, a = _verdict(model, 16, "parity")
    assert any("paper invariant" in r and "not part of the verdict" in r for r in a.reasons)
    assert a.verdict is not Verdict.OUTSIDE_THEOREM
    cert, a = _verdict(model, 64, "parity")
    rho = cert.restrictions
    need = Fraction(rho[1].num_free, rho[0].num_free)  # the layer's kept fraction
    assert need < 1  # the search fixed positions: a guaranteed fraction near 1 misses it
    # parameters whose guaranteed fraction (1 − 2η)(1 − (1 + δ)q) is just above / at it
    for eta, outside in (
        (Fraction(1, 10**6), need < 1),
        (Fraction(1, 2) - Fraction(1, 10**6), False),
    ):
        t = {**cert.trace, "eta": str(eta), "q": "1/1000000", "delta": "1/1000000"}
        forged = dataclasses.replace(cert, trace=t)
        got = assess(forged, model, check(forged, model))
        assert (got.verdict is Verdict.OUTSIDE_THEOREM) is outside, got
        if outside:
            assert any("Depth Reduction Lemma" in r for r in got.reasons)


def test_refuted_and_undecided():
    model = random_model(1, 1, 8, seed=6)
    cert, _ = _verdict(model, 16, "parity")
    bad = dataclasses.replace(cert, output_dependency=())
    a = assess(bad, model, check(bad, model))
    assert a.verdict is Verdict.REFUTED and "output" in a.reasons[0]


@pytest.mark.parametrize("verdict", list(Verdict))
def test_readme_lists_every_verdict(verdict):
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert f"`{verdict.value}`" in readme
