"""Issue 19 item 5: an artifact copied out of proofs/ whose manifest claims another result
does not verify — what it claims to exhibit is checked against what it is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attncert.compile import compile_formula
from attncert.proofcheck.exhibits import allowed_results
from attncert.proofcheck.manifest import Exhibits, Manifest
from attncert.proofcheck.results import RESULTS, resolve
from attncert.proofcheck.tree import check_artifact

REPO = Path(__file__).resolve().parents[1]
ART = REPO / "proofs" / "hahn2020" / "theorem1" / "ones_star-n64"


def _copy(tmp_path: Path, results: list[str] | None = None, paper: str | None = None) -> Path:
    d = tmp_path / "copy"
    shutil.copytree(ART, d)
    m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
    if results is not None:
        m["exhibits"]["results"] = results
    if paper is not None:
        m["exhibits"]["paper"] = paper
    (d / "manifest.json").write_text(json.dumps(m, indent=1), encoding="utf-8")
    return d


def test_an_unchanged_copy_verifies(tmp_path):
    r = check_artifact(_copy(tmp_path))
    assert r.ok, r.reasons


@pytest.mark.parametrize(
    "results,paper,expect",
    [
        (["Theorem 7"], None, "a result that paper does not have"),
        (["Theorem 1", "Lemma 5"], None, "does not show"),
        (["Corollary 2"], None, "does not show"),  # ones_star: no misclassified pair
        (["Theorem 26"], "Yang 2024", "exhibits results of Hahn 2020"),
        (["Theorem 1"], "Hahn 2021", "a result that paper does not have"),
    ],
)
def test_overclaiming_copies_are_refused(tmp_path, results, paper, expect):
    r = check_artifact(_copy(tmp_path, results, paper))
    assert r.status == "rejected"
    assert any("overclaims" in x and expect in x for x in r.reasons), r.reasons


def _z3(formula: str, regime: str = "temperature") -> set[str]:
    m = Manifest(
        kind="z3_agreement",
        exhibits=Exhibits("Yang 2024", ()),
        files=(),
        checked_by="",
        checked_means="",
        formula=formula,
        parameters={"regime": regime},
    )
    model = compile_formula(formula, regime=regime, alphabet="ab")
    return allowed_results(Path("."), m, model)[1]


def test_z3_agreement_exhibits_the_theorem_of_its_fragment():
    assert {"Theorem 15", "Corollary 17", "Corollary 22"} <= _z3("Q_a S Q_b")
    assert "Theorem 12" not in _z3("Q_a S Q_b")
    assert "Theorem 12" in _z3("prev Q_a") and "Theorem 15" not in _z3("prev Q_a")
    assert "Theorem 13" in _z3("prev Q_a", "future-masked")
    assert "Theorem 13" not in _z3("next Q_a")  # ▷ looks ahead: not decoder style
    mixed = "Q_b & (true S (Q_a & (Q_a U Q_b)))"
    assert "Corollary 17" in _z3(mixed) and "Theorem 15" in _z3(mixed)


def test_every_manifest_label_resolves():
    for r in RESULTS:
        assert resolve(r.part.paper, r.label) is r
    assert resolve("Hahn 2020", "Definition 5").label == "S1 Definition 5"  # legacy label
    assert resolve("Hahn 2020", "Theorem 7") is None
