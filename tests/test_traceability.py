"""docs/traceability.md is generated and up to date (issue 8); its links are found in the
right places and its gaps are listed."""

from __future__ import annotations

from pathlib import Path

from attncert.proofcheck.traceability import ITEMS, main, render

REPO = Path(__file__).resolve().parents[1]


def _row(text: str, section: str, label: str) -> str:
    part = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return next(line for line in part.splitlines() if line.startswith(f"| {label} |"))


def test_generated_file_is_up_to_date() -> None:
    current = (REPO / "docs" / "traceability.md").read_text(encoding="utf-8")
    assert current == render(REPO), (
        "docs/traceability.md is out of date: run python -m attncert.proofcheck.traceability"
    )
    assert main(["--root", str(REPO), "--check"]) == 0


def test_links_and_gaps() -> None:
    text = render(REPO)
    for item in ITEMS:
        assert f"| {item.label} | {item.title} |" in text
    t1 = _row(text, "Hahn 2020, §5", "Theorem 1")
    assert "`attncert.hard." in t1 and "proofs/hahn2020/theorem1/parity-random" in t1
    eq12 = _row(text, "Hahn 2020, §5", "eq. (12)")
    assert "attncert.symbolic" in eq12 and "proofs/hahn2020/lemma4-lll/c1-H2-C1-Cp1_2" in eq12
    # Hahn's S1 Lemma 6 and Yang's Lemma 6 are different results, searched in different code
    assert "attncert.compile" not in _row(text, "Hahn 2020 supplement, S1", "Lemma 6")
    assert "attncert.hard" not in _row(text, "Yang, Strobl, Chiang, Angluin, §3", "Lemma 6")
    gaps = text.split("## Gaps", 1)[1]
    assert "**eq. (4)**: no code" in gaps  # an honest gap stays visible


def test_check_mode_detects_staleness(tmp_path: Path, capsys) -> None:
    for name in ("src", "tests", "notebooks", "proofs"):
        (tmp_path / name).symlink_to(REPO / name)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "traceability.md").write_text("stale\n", encoding="utf-8")
    assert main(["--root", str(tmp_path), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["--root", str(tmp_path)]) == 0
    assert main(["--root", str(tmp_path), "--check"]) == 0
