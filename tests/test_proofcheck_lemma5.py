"""The Lemma 5 artifact: re-verified from the weights, and tampering is rejected."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attncert.proofcheck import check_artifact
from attncert.proofcheck.manifest import sha256_file

ART = Path(__file__).resolve().parents[1] / "proofs" / "hahn2020" / "lemma5" / "soft_parity"
NAME = "hahn2020/lemma5/soft_parity"


@pytest.fixture
def art(tmp_path: Path) -> Path:
    dst = tmp_path / "soft_parity"
    shutil.copytree(ART, dst)
    return dst


def _edit(art: Path, change) -> None:
    path = art / "lemma5.json"
    rep = json.loads(path.read_text())
    change(rep)
    path.write_text(json.dumps(rep, indent=1))
    m = json.loads((art / "manifest.json").read_text())
    for f in m["files"]:
        f["sha256"] = sha256_file(art / f["path"])  # a careless editor rehashes
    (art / "manifest.json").write_text(json.dumps(m, indent=1))


def test_committed_artifact_passes():
    r = check_artifact(ART, NAME)
    assert r.ok, r.reasons
    assert any("measured logit change ≤ Lemma 5 bound" in f for f in r.facts)


def test_lowered_bound_is_rejected(art):
    def lower(rep):
        rep["rows"][0]["bound"] = "1e-30"

    _edit(art, lower)
    r = check_artifact(art, NAME)
    assert not r.ok and "≠ recomputed" in " ".join(r.reasons)


def test_inflated_measurement_is_rejected(art):
    def inflate(rep):
        rep["rows"][-1]["measured"] = (2 * float.fromhex(rep["rows"][-1]["measured"])).hex()

    _edit(art, inflate)
    r = check_artifact(art, NAME)
    assert not r.ok and "the witness pair changes the logit by" in " ".join(r.reasons)
