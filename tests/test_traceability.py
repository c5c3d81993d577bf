"""docs/traceability.md is generated from explicit annotations and up to date; every numbered
result has code and a test or a reasoned "not applicable" entry; no annotation names an
unknown result; no row loses a link the baseline records (issue 16 item 3)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from attncert.proofcheck.results import RESULTS
from attncert.proofcheck.traceability import main, problems, render, scan

REPO = Path(__file__).resolve().parents[1]


def _row(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {label} |"))


@pytest.mark.slow
def test_generated_file_is_up_to_date() -> None:
    current = (REPO / "docs" / "traceability.md").read_text(encoding="utf-8")
    assert current == render(REPO), (
        "docs/traceability.md is out of date: run python -m attncert.proofcheck.traceability"
    )
    assert main(["--root", str(REPO), "--check"]) == 0


def test_every_result_is_covered_or_reasoned_and_no_row_regresses() -> None:
    assert problems(REPO) == []
    text = render(REPO)
    for r in RESULTS:
        assert f"| {r.label} | {r.title} |" in text
    assert "(100.0 %)" in text or "have code and a test" in text


def test_links_come_from_annotations() -> None:
    links = scan(REPO)
    row = links.row(next(r for r in RESULTS if r.name == "Yang Proposition 11"))
    assert "attncert.compile.first_last" in row["code"]
    assert any("test_yang_section3_4.py::test_proposition11" in t for t in row["tests"])
    assert "proofs/yang2024/proposition11/first-future-masked" in row["artifacts"]
    # Hahn's S1 Lemma 6 and Yang's Lemma 6 are different results with different code
    s1 = links.row(next(r for r in RESULTS if r.name == "Hahn S1 Lemma 6"))["code"]
    y6 = links.row(next(r for r in RESULTS if r.name == "Yang Lemma 6"))["code"]
    assert not set(s1) & set(y6)
    t1 = _row(render(REPO), "Theorem 1")
    assert "attncert.hard.pipeline" in t1


def _tree(tmp_path: Path) -> Path:
    for name in ("src", "notebooks", "proofs"):
        (tmp_path / name).symlink_to(REPO / name)
    shutil.copytree(
        REPO / "tests", tmp_path / "tests", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "traceability-baseline.json", tmp_path / "docs")
    return tmp_path


def test_a_lost_test_link_and_an_unknown_name_fail(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    lemmas = root / "tests" / "test_yang_lemmas.py"
    lemmas.write_text(
        lemmas.read_text(encoding="utf-8").replace('@implements("Yang Lemma 7")', ""),
        encoding="utf-8",
    )
    extra = root / "tests" / "test_zz_unknown.py"
    extra.write_text('__implements__ = ("Hahn Theorem 7",)\n', encoding="utf-8")
    found = problems(root)
    assert any("Yang Lemma 7" in p and "neither code + test" in p for p in found)
    assert any("Yang Lemma 7" in p and "lost its tests" in p for p in found)
    assert any("unknown result 'Hahn Theorem 7'" in p for p in found)


def test_check_mode_detects_staleness(tmp_path: Path, capsys) -> None:
    for name in ("src", "tests", "notebooks", "proofs"):
        (tmp_path / name).symlink_to(REPO / name)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "traceability.md").write_text("stale\n", encoding="utf-8")
    assert main(["--root", str(tmp_path), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["--root", str(tmp_path)]) == 0
    assert main(["--root", str(tmp_path), "--check"]) == 0
