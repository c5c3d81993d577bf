"""The committed proofs/ tree re-verifies, and every kind of damage is caught with the
artifact named (issue 8): an edited restriction symbol, a changed model weight (file model
and zoo model), a deleted file or artifact, tampered LLL/constants reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attncert.cli.main import main
from attncert.errors import InputError
from attncert.model import model_from_dict, model_to_dict, zoo_model
from attncert.model import zoo as zoo_module
from attncert.proofcheck import check_artifact, check_tree, kind_names
from attncert.proofcheck.manifest import sha256_file
from attncert.proofcheck.regenerate import write_index

REPO = Path(__file__).resolve().parents[1]
PROOFS = REPO / "proofs"
PARITY = "hahn2020/theorem1/parity-random-L2-H2-d16-n256"
DYCK = "hahn2020/theorem1/dyck1-random-L2-H2-d16-n256"
ONES = "hahn2020/theorem1/ones_star-n64"
LLL = "hahn2020/lemma4-lll/c1-H2-C1-Cp1_2"
CONSTS = "hahn2020/lemma4-lll/constants-L2-H2-C9_10"


@pytest.fixture(scope="module")
def committed_report():
    return check_tree(PROOFS)


SMALL = (PARITY, DYCK, ONES, LLL, CONSTS)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of five committed artifacts (three hard certificates, the LLL and the
    constants reports) with their own index: the damage tests run the same checks as on
    the whole tree, which the committed-tree test and CI's `attncert check proofs/`
    cover once."""
    dst = tmp_path / "proofs"
    for name in SMALL:
        shutil.copytree(PROOFS / name, dst / name)
    write_index(dst)
    return dst


def _rehash(art: Path, name: str) -> None:
    """Update the manifest's sha256 of ``name`` (as a careless editor would)."""
    mpath = art / "manifest.json"
    m = json.loads(mpath.read_text())
    for f in m["files"]:
        if f["path"] == name:
            f["sha256"] = sha256_file(art / name)
    mpath.write_text(json.dumps(m, indent=1) + "\n")


def _flip_fixed_symbol(cert_path: Path) -> int:
    """Flip the first fixed symbol of ρ_L that is free in ρ_{L-1}; return its position."""
    data = json.loads(cert_path.read_text())
    prev, last = data["restrictions"][-2], data["restrictions"][-1]
    i = next(i for i, (a, b) in enumerate(zip(prev, last, strict=True)) if a == "*" and b != "*")
    other = next(s for s in data["alphabet"] if s != last[i])
    data["restrictions"][-1] = last[:i] + other + last[i + 1 :]
    cert_path.write_text(json.dumps(data, indent=1) + "\n")
    return i


@pytest.mark.slow  # 13-18 s; .ci/run runs it, and `attncert check proofs/` as its own step
def test_committed_tree_passes(committed_report) -> None:
    rep = committed_report
    assert rep.ok, [r.reasons for r in rep.failed]
    names = {r.artifact for r in rep.results}
    assert {PARITY, DYCK, ONES, LLL, CONSTS, "hahn2020/theorem1/anbn-n64"} <= names
    kinds = {r.kind for r in rep.results}
    assert {"hard_certificate", "lll_report", "constants_report"} <= kinds <= set(kind_names())
    by = {r.artifact: r for r in rep.results}
    # the checker really established the claims (facts come from the trusted checkers)
    assert any("misclassifies" in f for f in by[PARITY].facts)
    assert any("exactly right" in f for f in by[ONES].facts)
    assert any("minimal" in f for f in by[LLL].facts)
    assert rep.seconds < 60


def test_cli_table_and_json(tree: Path, capsys) -> None:
    assert main(["check", str(tree)]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header == ["artifact", "result", "status", "time"]
    assert PARITY in out and "Theorem 1 / Corollary 2" in out
    assert main(["check", str(tree), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and not data["failed"]
    assert all(a["status"] == "ok" for a in data["artifacts"])


def test_edited_restriction_symbol_is_caught(tree: Path, capsys) -> None:
    art = tree / PARITY
    _flip_fixed_symbol(art / "certificate.json")
    r = check_artifact(art, PARITY)
    assert r.status == "tampered"
    text = " | ".join(r.reasons)
    assert "certificate.json has sha256" in text
    # the trusted checker rejects the content by itself, too
    assert "checker rejected certificate.json" in text
    assert all(reason.startswith(PARITY) for reason in r.reasons)
    # with the manifest's hash updated, only the checker stands between us and the lie
    _rehash(art, "certificate.json")
    r2 = check_artifact(art, PARITY)
    assert r2.status == "rejected"
    assert any("checker rejected certificate.json" in x for x in r2.reasons)
    assert main(["check", str(tree)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {PARITY}" in out


def test_edited_symbol_in_every_certificate_is_rejected(tree: Path) -> None:
    for name in (PARITY, DYCK, ONES):
        art = tree / name
        _flip_fixed_symbol(art / "certificate.json")
        _rehash(art, "certificate.json")
        r = check_artifact(art, name)
        assert r.status == "rejected", (name, r)


def test_changed_weight_of_a_model_file_is_caught(tree: Path) -> None:
    art = tree / DYCK
    data = json.loads((art / "model.json").read_text())
    data["layers"][0]["heads"][0]["w_q"][0][0] += 0.25
    data["sha256"] = model_from_dict(data).digest  # a consistently re-saved, edited model
    (art / "model.json").write_text(json.dumps(data))
    r = check_artifact(art, DYCK)
    assert not r.ok
    text = " | ".join(r.reasons)
    assert "model.json has sha256" in text and "model model.json now hashes to" in text
    _rehash(art, "model.json")
    r2 = check_artifact(art, DYCK)
    assert r2.status == "tampered" and "now hashes to" in r2.reasons[0]


def test_changed_zoo_model_weight_makes_artifact_stale(tree: Path, monkeypatch, capsys) -> None:
    d = model_to_dict(zoo_model("random-L2-H2-d16"))
    d["readout"]["weight"][0] += 1e-3
    changed = model_from_dict(d)
    monkeypatch.setitem(zoo_module.ZOO, "random-L2-H2-d16", lambda: changed)
    rep = check_tree(tree)
    bad = {r.artifact: r for r in rep.failed}
    assert set(bad) == {PARITY}
    assert bad[PARITY].status == "stale"
    assert "zoo:random-L2-H2-d16 now hashes to" in bad[PARITY].reasons[0]
    assert "regenerate" in bad[PARITY].reasons[0]


def test_deleted_file_and_deleted_artifact_are_caught(tree: Path, capsys) -> None:
    (tree / ONES / "certificate.json").unlink()
    (tree / LLL / "lll_report.json").unlink()
    shutil.rmtree(tree / CONSTS)
    rep = check_tree(tree)
    bad = {r.artifact: r for r in rep.failed}
    assert set(bad) == {ONES, LLL, CONSTS}
    assert bad[ONES].status == "missing"
    assert "missing file certificate.json" in bad[ONES].reasons[0]
    assert "missing file lll_report.json" in bad[LLL].reasons[0]
    assert "missing artifact" in bad[CONSTS].reasons[0]
    assert main(["check", str(tree), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert sorted(data["failed"]) == sorted([ONES, LLL, CONSTS])


def test_tampered_lll_report_is_rejected(tree: Path) -> None:
    art = tree / LLL
    rep = json.loads((art / "lll_report.json").read_text())
    rep["constants"]["supplement"]["k_eq12"] += 1
    claims = {c["id"]: c for c in rep["claims"]}
    claims["stage3.independent-events[as written]"]["concrete"] = "proved"
    claims["def5.suggested-choice"]["general_counterexample"] = {"C": "1", "Cp": "1/4"}
    (art / "lll_report.json").write_text(json.dumps(rep))
    _rehash(art, "lll_report.json")
    r = check_artifact(art, LLL)
    assert r.status == "rejected"
    text = " | ".join(r.reasons)
    assert "k_eq12 = " in text and "not the smallest k satisfying (12)" in text
    assert "stage3.independent-events[as written]: report says concrete = 'proved'" in text
    assert "def5.suggested-choice: the stored counterexample" in text


def test_tampered_constants_report_is_rejected(tree: Path) -> None:
    art = tree / CONSTS
    rep = json.loads((art / "constants.json").read_text())
    rep["rows"][0]["N_eq11"] -= 1
    (art / "constants.json").write_text(json.dumps(rep))
    _rehash(art, "constants.json")
    r = check_artifact(art, CONSTS)
    assert r.status == "rejected"
    assert any("N_eq11" in x and "smallest n" in x for x in r.reasons)


def test_edited_manifest_is_caught_by_the_index(tree: Path) -> None:
    mpath = tree / ONES / "manifest.json"
    m = json.loads(mpath.read_text())
    m["exhibits"]["results"] = ["Theorem 6"]
    mpath.write_text(json.dumps(m, indent=1))
    rep = check_tree(tree)
    bad = {r.artifact: r for r in rep.failed}
    assert set(bad) == {ONES}
    assert "manifest.json changed" in " ".join(bad[ONES].reasons)


def test_bad_manifests_and_empty_tree(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no proof artifacts"):
        check_tree(tmp_path)
    art = tmp_path / "a"
    art.mkdir()
    (art / "manifest.json").write_text("{not json")
    r = check_artifact(art, "a")
    assert r.status == "invalid" and "malformed JSON" in r.reasons[0]
    src = json.loads((PROOFS / ONES / "manifest.json").read_text())
    src["kind"] = "no_such_kind"
    (art / "manifest.json").write_text(json.dumps(src))
    r = check_artifact(art, "a")
    assert r.status == "invalid" and "no_such_kind" in r.reasons[0]
    src["kind"] = "hard_certificate"
    src["files"][0]["path"] = "../escape.json"
    (art / "manifest.json").write_text(json.dumps(src))
    r = check_artifact(art, "a")
    assert r.status == "invalid" and "leaves the artifact directory" in r.reasons[0]
