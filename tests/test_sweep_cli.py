"""``attncert sweep`` on the command line: a serial run's output, files, and bad input
(exit 2, one line, no traceback, nothing written)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from attncert.cli.main import main

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def _tasks_importable(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), *sys.path]))


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_serial_sweep_prints_summary_table_and_writes_files(tmp_path, capsys):
    out, md, png = tmp_path / "r.jsonl", tmp_path / "t.md", tmp_path / "p.svg"
    args = ["sweep", "sweep_tasks:mixed", "--models", "a", "--n", "1,2", "13", "--seeds", "0", "1"]
    code, text, _ = cli(
        capsys, *args, "--serial", "-o", str(out), "--markdown", str(md), "--plot", str(png)
    )
    assert code == 1  # the planted failure at n = 13
    assert text.startswith("6 cells: 4 ok, 2 failed (6 run now, 0 already in")
    assert "| sweep_tasks:mixed | `a` | 1 | 2/2 | ok ×2 |" in text
    assert md.read_text().strip() in text and png.read_text().lstrip().startswith("<?xml")
    code, text, _ = cli(capsys, *args, "--serial", "-o", str(out), "--json", "--retry-failed")
    rep = json.loads(text)
    assert code == 1 and rep["ran"] == 2 and rep["skipped"] == 4
    assert rep["counts"] == {"ok": 4, "failed": 2, "timeout": 0, "lost": 0, "missing": 0}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sweep"], "nothing to run"),
        (["sweep", "certify", "--models", "zoo:anbn"], "nothing to run"),
        (["sweep", "certfy", "--models", "zoo:anbn", "--n", "8"], "no task 'certfy'"),
        (
            ["sweep", "certify", "--models", "zoo:anbn", "--n", "8", "--param", "x=1"],
            "no parameter",
        ),
        (["sweep", "certify", "--models", "zoo:anbn", "--n", "8", "--param", "x"], "KEY=VALUE"),
        (["sweep", "certify", "--models", "zoo:anbn", "--n", "8x"], "--n"),
        (["sweep", "certify", "--models", "zoo:anbn", "--n", "0"], "grid: n"),
        (["sweep", "certify", "--models", "zoo:anbn", "--n", "8", "--timeout", "-1"], "--timeout"),
        (["sweep", "certify", "--models", "zoo:anbn", "--n", "8", "--workers", "0"], "--workers"),
        (["sweep", "certify", "--models", "zoo:anbn", "--n", "8", "--plot", "p.xyz"], "--plot"),
        (["sweep", "certify", "--grid", "g.yaml"], "alternatives"),
        (["sweep", "--grid", "missing.yaml"], "grid file not found"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_output_that_is_a_directory_is_bad_input(tmp_path, capsys):
    code, _, err = cli(
        capsys,
        "sweep",
        "sweep_tasks:echo",
        "--models",
        "a",
        "--n",
        "1",
        "--serial",
        "-o",
        str(tmp_path),
    )
    assert code == 2 and "is a directory" in err and "Traceback" not in err
