"""A report bound to its certificates (issue 41, item 3): ``attncert check DIR`` re-derives
every cell's verdict from its certificate, rebuilds the pages and compares them, and names
the file when anything differs; nothing edited, and nothing unchecked, is ever CERTIFIED."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import attncert
from attncert.cli.main import main
from attncert.report import cells as C
from attncert.report.directory import check_report

FAST = {"ns": (8,), "dask": False, "cell_time_limit": 8.0, "language": "parity", "lengths": (1, 8)}


def cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    d = tmp_path_factory.mktemp("bound") / "r"
    rep = attncert.report("zoo:trained_hard_first_last", out=d, **FAST)
    return d, rep


@pytest.fixture
def copy(sealed, tmp_path):
    d = tmp_path / "r"
    shutil.copytree(sealed[0], d)
    return d


def _reseal(d: Path, rel: str) -> None:
    """Update the manifest's hash of ``rel``, as a careful forger would."""
    m = json.loads((d / "report-manifest.json").read_text())
    m["files"][rel] = hashlib.sha256((d / rel).read_bytes()).hexdigest()
    (d / "report-manifest.json").write_text(json.dumps(m))


@pytest.mark.slow
def test_a_sealed_report_checks_with_the_kernel_s_verdicts(sealed, capsys):
    d, rep = sealed
    rc = check_report(d)
    assert rc.complete and not rc.problems, rc.lines()
    # every cell's verdict is the one the page shows, re-derived from its certificate
    want = {name: c["verdict"] for name, c in rep.cells.items() if c["status"] == "ok"}
    got = {Path(f.path).stem: f.verdict for f in rc.cells if f.verdict not in ("NOT APPLICABLE",)}
    assert got == want
    # verify at n = 8 on PARITY: the model is proved wrong — check says so (not CERTIFIED)
    assert want["verify-n8"] == "REFUTED"
    code, out, _ = cli(capsys, "check", str(d))
    assert code == 1 and out.rstrip().endswith("verdict: REFUTED")
    assert "cells/verify-n8.json" in out and "certs/verify-n8.json" in out


def test_check_on_a_verify_tree_prints_the_verify_verdict(sealed, capsys):
    d, _ = sealed
    code, out, _ = cli(capsys, "check", str(d / "certs" / "verify-n8.json"))
    assert code == 1 and out.startswith("REFUTED") and "proved wrong" in out


@pytest.mark.slow
def test_an_edited_page_is_refused_naming_it_even_with_its_hash_updated(copy, capsys):
    page = copy / "index.html"
    text = page.read_text()
    assert "REFUTED" in text
    page.write_text(text.replace(">REFUTED<", ">CERTIFIED<", 1))
    code, out, _ = cli(capsys, "check", str(copy))
    assert code == 1 and "index.html: edited" in out and "CERTIFIED" not in out.splitlines()[-1]
    _reseal(copy, "index.html")
    code, out, _ = cli(capsys, "check", str(copy))
    assert code == 1 and "index.html: differs from the page rebuilt" in out


def test_an_edited_cell_file_is_refused_naming_it_and_the_field(copy, capsys):
    cell = copy / "cells" / "verify-n8.json"
    rec = json.loads(cell.read_text())
    rec["verdict"] = "CERTIFIED"
    cell.write_text(json.dumps(rec))
    _reseal(copy, "cells/verify-n8.json")
    code, out, _ = cli(capsys, "check", str(copy))
    assert code == 1
    line = next(ln for ln in out.splitlines() if "the cell says" in ln)
    assert line.startswith("REFUTED") and "cells/verify-n8.json: verdict: the cell says " in line
    assert "'CERTIFIED', the kernel re-derives 'REFUTED'" in line
    # a certified number edited instead of the verdict
    rec["verdict"] = "REFUTED"
    rec["data"]["upper"] = 1.0
    cell.write_text(json.dumps(rec))
    _reseal(copy, "cells/verify-n8.json")
    code, out, _ = cli(capsys, "check", str(copy))
    assert code == 1 and "data.upper: the cell says 1.0" in out


def test_a_stale_added_or_missing_certificate_is_named(copy, capsys):
    shutil.copy(copy / "certs" / "certify-n8.json", copy / "certs" / "certify-n64.json")
    code, out, _ = cli(capsys, "check", str(copy))
    assert code == 1 and "certs/certify-n64.json: not part of this report" in out
    (copy / "certs" / "certify-n64.json").unlink()
    (copy / "certs" / "verify-n8.json").unlink()
    code, out, _ = cli(capsys, "check", str(copy))
    assert code == 1 and "certs/verify-n8.json: listed in the manifest, missing" in out


def test_an_edited_certificate_is_refused_by_the_kernel(copy, capsys):
    cert = copy / "certs" / "verify-n8.json"
    data = json.loads(cert.read_text())
    data["totals"]["wrong"] = str(int(data["totals"]["wrong"]) + 1)
    cert.write_text(json.dumps(data, indent=1))
    _reseal(copy, "certs/verify-n8.json")
    code, out, _ = cli(capsys, "check", str(copy), "--json")
    rec = json.loads(out)
    assert code == 1 and rec["verdict"] == "REFUTED"
    bad = [p for p in rec["problems"] if p["path"] == "certs/verify-n8.json"]
    assert bad and "the kernel rejects it" in bad[0]["reason"] and "totals" in bad[0]["reason"]


def test_an_empty_or_unfinished_report_is_never_certified(copy, capsys):
    m = json.loads((copy / "report-manifest.json").read_text())
    # an interrupted run: the manifest is rewritten at the start, without hashes
    for p in (copy / "cells").iterdir():
        p.unlink()
    del m["files"]
    (copy / "report-manifest.json").write_text(json.dumps(m))
    code, out, _ = cli(capsys, "check", str(copy))
    assert code == 3 and out.rstrip().splitlines()[-1].startswith("verdict: INCOMPLETE")
    # a sealed report of no cell at all: nothing was checked
    m["cells"], m["files"] = [], {}
    for folder in ("certs", "plots"):
        shutil.rmtree(copy / folder, ignore_errors=True)
    for name in ("report.json", "report.md", "index.html", "model.json"):
        (copy / name).unlink(missing_ok=True)
    (copy / "report-manifest.json").write_text(json.dumps(m))
    code, out, _ = cli(capsys, "check", str(copy))
    assert code == 3 and "verdict: UNDECIDED" in out and "nothing was checked" in out


def test_a_report_whose_cells_all_failed_is_undecided(tmp_path, monkeypatch, capsys):
    def boom(spec, model, source):
        raise RuntimeError("planted failure")

    for name in C.ANALYSES:
        monkeypatch.setitem(C._ANALYSIS, name, boom)
    d = tmp_path / "r"
    rep = attncert.report("zoo:trained_hard_first_last", out=d, **FAST)
    assert {s.verdict for s in rep.sections if s.key != "model"} == {"UNDECIDED"}
    code, out, _ = cli(capsys, "check", str(d))
    assert code == 3 and "verdict: UNDECIDED" in out and "CERTIFIED" not in out


@pytest.mark.slow
def test_the_report_rebinds_an_edited_cell_it_resumes(sealed, tmp_path):
    """The report never trusts a cell file it did not just re-check: a resumed cell whose
    verdict was edited gets the kernel's verdict back."""
    d = tmp_path / "r"
    shutil.copytree(sealed[0], d)
    cell = d / "cells" / "verify-n8.json"
    rec = json.loads(cell.read_text())
    rec["verdict"] = "CERTIFIED"
    rec["data"]["lower"] = 1.0
    cell.write_text(json.dumps(rec))
    again = attncert.report("zoo:trained_hard_first_last", out=d, **FAST)
    assert again.ran == 0
    assert again.cells["verify-n8"]["verdict"] == "REFUTED"
    assert again.cells["verify-n8"]["data"]["lower"] < 1.0
    assert json.loads(cell.read_text())["verdict"] == "REFUTED"
    assert check_report(d).problems == ()


@pytest.mark.slow
def test_a_rerun_with_other_lengths_leaves_no_stale_file(sealed, tmp_path, capsys):
    d = tmp_path / "r"
    shutil.copytree(sealed[0], d)
    attncert.report("zoo:trained_hard_first_last", out=d, **{**FAST, "ns": (4,)})
    assert sorted(p.stem for p in (d / "cells").iterdir()) == sorted(f"{a}-n4" for a in C.ANALYSES)
    assert not list((d / "certs").glob("*-n8.json"))
    rc = check_report(d)
    assert rc.complete and not rc.problems, rc.lines()
