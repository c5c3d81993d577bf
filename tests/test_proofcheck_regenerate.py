"""Regeneration is deterministic and reproduces the committed artifacts byte for byte
(issue 8): if this fails after a change to a search or a report format, run
``attncert proofs regenerate`` and commit the result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attncert.cli.main import main
from attncert.proofcheck import check_tree, regenerate
from attncert.proofcheck.catalog import CATALOG

REPO = Path(__file__).resolve().parents[1]
PROOFS = REPO / "proofs"
CHEAP = ("hahn2020/theorem1/ones_star-n64", "hahn2020/lemma4-lll/constants-L2-H2-C9_10")


def _files(d: Path) -> dict[str, bytes]:
    return {
        p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
    }


def test_catalog_is_committed() -> None:
    for spec in CATALOG:
        assert (PROOFS / spec.path / "manifest.json").is_file(), spec.path


@pytest.mark.slow
@pytest.mark.parametrize("path", CHEAP)
def test_regeneration_reproduces_committed_bytes(tmp_path: Path, path: str) -> None:
    written, skipped = regenerate(tmp_path, only=[path])
    assert [w.relative_to(tmp_path).as_posix() for w in written] == [path]
    assert not skipped
    new, old = _files(tmp_path / path), _files(PROOFS / path)
    assert new.keys() == old.keys()
    stale = [name for name in new if new[name] != old[name]]
    assert not stale, (
        f"{path}: {stale} differ from a fresh regeneration (run attncert proofs regenerate)"
    )
    assert check_tree(tmp_path).ok


@pytest.mark.slow
def test_regenerate_cli_and_module(tmp_path: Path, capsys) -> None:
    only = "hahn2020/theorem1/anbn"
    assert main(["proofs", "regenerate", str(tmp_path / "a"), "--only", only]) == 0
    assert "wrote" in capsys.readouterr().out
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "attncert.proofcheck.regenerate",
            str(tmp_path / "b"),
            "--only",
            only,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wrote" in proc.stdout
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert main(["proofs", "list", str(tmp_path / "a")]) == 0
    assert "hahn2020/theorem1/anbn-n64  [hard_certificate]" in capsys.readouterr().out
