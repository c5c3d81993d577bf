"""z3 agreement artifacts: re-verified by a fresh z3 and by re-deriving the queries;
changing the formula, a query or the model is rejected (issue 8, "Must show")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attncert.proofcheck import check_artifact
from attncert.proofcheck.manifest import sha256_file

ROOT = Path(__file__).resolve().parents[1] / "proofs" / "yang2024"
SINCE = "theorem15/since-temperature"
PARITY = "theorem20/parity-counting-temperature"


@pytest.fixture
def since(tmp_path: Path) -> Path:
    dst = tmp_path / "since"
    shutil.copytree(ROOT / SINCE, dst)
    return dst


def _rehash(art: Path) -> None:
    m = json.loads((art / "manifest.json").read_text())
    for f in m["files"]:
        f["sha256"] = sha256_file(art / f["path"])
    (art / "manifest.json").write_text(json.dumps(m, indent=1))


@pytest.mark.slow
@pytest.mark.parametrize("name", [SINCE, PARITY])
def test_committed_z3_artifacts_pass(name):
    r = check_artifact(ROOT / name, name)
    assert r.ok, r.reasons
    assert any("fresh process" in f for f in r.facts)


def test_changed_formula_is_rejected(since):
    m = json.loads((since / "manifest.json").read_text())
    m["formula"] = "Q_a U Q_b"  # since → until
    (since / "manifest.json").write_text(json.dumps(m, indent=1))
    r = check_artifact(since, SINCE)
    assert not r.ok
    assert "proves 'Q_a S Q_b', the manifest says 'Q_a U Q_b'" in " ".join(r.reasons)


@pytest.mark.slow
def test_changed_formula_in_both_places_is_rejected(since):
    """Even a consistent edit (manifest and proof object) fails: the stored queries are not
    the encoding of the new formula, and the re-derived proof finds a counterexample."""
    for name in ("manifest.json", "proof.json"):
        d = json.loads((since / name).read_text())
        d["formula"] = "Q_b S Q_a"
        (since / name).write_text(json.dumps(d, indent=1))
    _rehash(since)
    r = check_artifact(since, SINCE)
    text = " ".join(r.reasons)
    assert not r.ok
    assert "re-deriving the proof" in text or "not the encoding" in text


@pytest.mark.slow
def test_edited_query_is_rejected(since):
    q = sorted((since / "smt2").glob("*.smt2"))[0]
    q.write_text(q.read_text().replace("(check-sat)", "(assert false)\n(check-sat)"))
    _rehash(since)
    r = check_artifact(since, SINCE)
    assert not r.ok
    assert "not the encoding of this formula and model" in " ".join(r.reasons)
