"""Sweep grids, cell ids, the results file (resume, partial lines) and the report — no Dask.

Cells run serially here (``serial=True``), through the same isolated child process as on
a cluster; the Dask runs are in ``test_sweep_dask.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attncert.errors import AttncertError, SpecError
from attncert.sweep import Cell, ResultsFile, grid_cells, run_sweep
from attncert.sweep.grid import load_grid
from attncert.sweep.results import CellRecord

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def _tasks_importable(monkeypatch):
    """Cell processes import ``sweep_tasks`` from this folder."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), *sys.path]))


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


# ----- cells and grids ---------------------------------------------------------------------------


def test_cell_id_is_stable_and_covers_every_field():
    c = Cell("certify", "zoo:random-L2-H2-d16", 64, 1, (("language", "parity"),))
    key = (
        b'{"model":"zoo:random-L2-H2-d16","model_hash":"","n":64,'
        b'"params":{"language":"parity"},"seed":1,"task":"certify","v":1}'
    )
    assert c.id == hashlib.sha256(key).hexdigest()[:16]
    assert c.id == "247fcdf163d94a30"  # pinned: changing it orphans every results file
    assert Cell.from_dict(c.to_dict()) == c and Cell.from_dict(c.to_dict()).id == c.id
    others = [
        Cell("prove", c.model, 64, 1, c.params),
        Cell(c.task, "zoo:anbn", 64, 1, c.params),
        Cell(c.task, c.model, 65, 1, c.params),
        Cell(c.task, c.model, 64, 2, c.params),
        Cell(c.task, c.model, 64, 1, (("language", "dyck1"),)),
        Cell(c.task, c.model, 64, 1, c.params, model_hash="ab"),
    ]
    assert len({o.id for o in others} | {c.id}) == 7
    assert Cell(c.task, c.model, 64, 1, c.params, timeout=5.0).id == c.id  # how, not what


def test_a_record_whose_id_does_not_match_its_fields_is_refused():
    d = Cell("certify", "zoo:anbn", 8).to_dict()
    d["n"] = 9
    with pytest.raises(SpecError, match="does not match its fields"):
        Cell.from_dict(d)


def test_model_file_content_is_part_of_the_id(tmp_path):
    from attncert.model import random_model, save_model

    path = tmp_path / "m.json"
    save_model(random_model(1, 1, 4, seed=0), path)
    (a,) = grid_cells("certify", [str(path)], [8])
    save_model(random_model(1, 1, 4, seed=1), path)
    (b,) = grid_cells("certify", [str(path)], [8])
    assert a.model_hash and b.model_hash and a.id != b.id


def test_grid_files_yaml_and_json(tmp_path):
    y = tmp_path / "g.yaml"
    y.write_text(
        "task: certify\nmodels: [random:L1-H1-d4, zoo:anbn]\nn: [8, 16]\nseeds: [0, 1]\n"
        "params: {language: parity}\ntimeout: 30\n"
    )
    cells = grid_cells(grid=y)
    assert len(cells) == 8 and all(c.timeout == 30.0 for c in cells)
    assert [(c.model, c.n, c.seed) for c in cells[:3]] == [
        ("random:L1-H1-d4", 8, 0),
        ("random:L1-H1-d4", 8, 1),
        ("random:L1-H1-d4", 16, 0),
    ]
    j = tmp_path / "g.json"
    j.write_text(
        json.dumps(
            {
                "grids": [
                    {"task": "certify", "models": ["zoo:anbn"], "n": [8]},
                    {"task": "prove", "models": ["Q_1 S Q_0"], "n": [3, 4], "seeds": [0, 1, 2]},
                ]
            }
        )
    )
    cells = grid_cells(grid=j)
    # prove does not use the seed: one cell per (formula, n)
    assert [(c.task, c.n, c.seed) for c in cells] == [
        ("certify", 8, 0),
        ("prove", 3, 0),
        ("prove", 4, 0),
    ]


@pytest.mark.parametrize(
    "text, where",
    [
        ("task: certify\nmodels: [zoo:anbn]\n", "missing field 'n'"),
        ("task: certify\nmodels: [zoo:anbn]\nn: [8, x]\n", "g.yaml: n"),
        ("task: certify\nmodels: [zoo:anbn]\nn: [0]\n", "grid: n"),
        ("task: certify\nmodels: [zoo:anbn]\nn: [8]\nsedes: [1]\n", "unknown field"),
        ("task: certify\nmodels: [zoo:anbn]\nn: [8]\nparams: {k: [1, 2]}\n", "params.k"),
        ("task: certify\nmodels: [zoo:anbn]\nn: [8]\ntimeout: -1\n", "timeout"),
        ("task: [certify\n", "malformed YAML"),
    ],
)
def test_bad_grid_files_name_the_field(tmp_path, text, where):
    y = tmp_path / "g.yaml"
    y.write_text(text)
    with pytest.raises(SpecError) as err:
        load_grid(y)
    assert where in str(err.value)


def test_unknown_task_and_parameter_are_refused_before_anything_runs(tmp_path):
    out = tmp_path / "r.jsonl"
    with pytest.raises(AttncertError, match="no task 'certfy'"):
        run_sweep(grid_cells("certfy", ["zoo:anbn"], [8]), out, serial=True)
    with pytest.raises(SpecError, match=r"no parameter\(s\) \['langauge'\]"):
        run_sweep(
            grid_cells("certify", ["zoo:anbn"], [8], params={"langauge": "x"}), out, serial=True
        )
    assert not out.exists()


# ----- running, resuming, partial lines ----------------------------------------------------------


@pytest.mark.slow
def test_failures_are_recorded_and_the_sweep_goes_on(tmp_path):
    out = tmp_path / "r.jsonl"
    cells = grid_cells("sweep_tasks:mixed", ["m"], [1, 2, 13, 17, 3], timeout=2.0)
    res = run_sweep(cells, out, serial=True)
    by_n = {r.cell.n: r for r in res.records}
    assert {n: r.status for n, r in by_n.items()} == {
        1: "ok",
        2: "ok",
        13: "failed",
        17: "timeout",
        3: "ok",
    }
    assert by_n[13].reason == "RuntimeError: planted failure at n=13"
    assert by_n[17].reason == "no result within 2 s (killed)"
    assert by_n[3].result["value"] == 3.0 and res.exit_code == 1
    assert res.counts() == {"ok": 3, "failed": 1, "timeout": 1, "lost": 0, "missing": 0}
    lines = _lines(out)
    assert lines[0] == {"format": "attncert-sweep", "version": 1} and len(lines) == 6


@pytest.mark.slow
def test_resume_skips_finished_cells_and_recomputes_none(tmp_path):
    out = tmp_path / "r.jsonl"
    first = grid_cells("sweep_tasks:echo", ["m"], [1, 2], seeds=[0, 1])
    r1 = run_sweep(first, out, serial=True)
    assert r1.ran == 4 and r1.complete
    before = out.read_bytes()
    r2 = run_sweep(first, out, serial=True)
    assert (r2.ran, r2.skipped) == (0, 4) and out.read_bytes() == before
    assert [r.result["pid"] for r in r2.records] == [r.result["pid"] for r in r1.records]
    # a bigger grid runs only its new cells
    r3 = run_sweep(grid_cells("sweep_tasks:echo", ["m"], [1, 2, 3], seeds=[0, 1]), out, serial=True)
    assert (r3.ran, r3.skipped) == (2, 4) and len(_lines(out)) == 1 + 6
    assert out.read_bytes().startswith(before)


def test_failed_cells_are_kept_unless_retry_failed(tmp_path):
    out = tmp_path / "r.jsonl"
    cells = grid_cells("sweep_tasks:mixed", ["m"], [1, 13])
    run_sweep(cells, out, serial=True)
    again = run_sweep(cells, out, serial=True)
    assert again.ran == 0
    retried = run_sweep(cells, out, serial=True, retry_failed=True)
    assert retried.ran == 1  # only the failed cell
    assert [r.cell.n for r in ResultsFile.open(out).records.values()] == [1, 13]


def test_partial_last_line_is_ignored_and_cut_off(tmp_path):
    out = tmp_path / "r.jsonl"
    cells = grid_cells("sweep_tasks:echo", ["m"], [1, 2, 3])
    run_sweep(cells[:2], out, serial=True)
    whole = out.read_bytes()
    partial = json.dumps(CellRecord.now(cells[2], "ok", result={"verdict": "ok"}).to_dict())
    out.write_bytes(whole + partial[:57].encode())  # a crash in the middle of a write
    rf = ResultsFile.open(out)
    assert rf.dropped_partial == 57 and out.read_bytes() == whole
    assert cells[2].id not in rf.records and len(rf.records) == 2
    res = run_sweep(cells, out, serial=True)
    assert (res.ran, res.skipped) == (1, 2) and res.complete
    assert len(_lines(out)) == 4  # every line parses


def test_a_corrupt_line_in_the_middle_is_refused_with_its_number(tmp_path):
    out = tmp_path / "r.jsonl"
    run_sweep(grid_cells("sweep_tasks:echo", ["m"], [1, 2]), out, serial=True)
    lines = out.read_text().splitlines(keepends=True)
    lines[1] = lines[1][:20] + "\n"
    out.write_text("".join(lines))
    with pytest.raises(SpecError, match=r"r\.jsonl: line 2: malformed line"):
        ResultsFile.open(out)
    other = tmp_path / "other.jsonl"
    other.write_text('{"format": "something-else"}\n')
    with pytest.raises(SpecError, match="not a sweep results file"):
        ResultsFile.open(other)
    with pytest.raises(SpecError, match="is a directory"):
        ResultsFile.open(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SpecError, match="cannot use the results file"):
        ResultsFile.open(blocker / "r.jsonl")


# ----- the built-in tasks agree with a direct call -------------------------------------------------


@pytest.mark.slow
def test_builtin_tasks_match_direct_calls(tmp_path):
    from attncert.hard.pipeline import certify
    from attncert.model import random_model, zoo_model
    from attncert.soft.sensitivity import exhaustive_sensitivity

    out = tmp_path / "r.jsonl"
    cells = (
        grid_cells("certify", ["random:L2-H2-d8"], [32], seeds=[3])
        + grid_cells("sensitivity", ["zoo:soft_parity"], [8])
        + grid_cells("prove", ["Q_1 S Q_0"], [4])
        + grid_cells("prove", ["Q_1 U Q_0"], [3], params={"alphabet": "01"})
    )
    res = run_sweep(cells, out, serial=True)
    cert_rec, sens_rec, prove_rec, prove2_rec = res.records
    direct = certify(random_model(2, 2, 8, seed=3), n=32, language="parity", seed=3)
    from attncert.hard.verdict import assess
    from attncert.kernel.hard.checker import check

    model = random_model(2, 2, 8, seed=3)
    assert cert_rec.result["verdict"] == assess(direct, model, check(direct, model)).verdict.value
    assert cert_rec.result["free"] == direct.final_restriction.num_free
    assert cert_rec.result["model_sha256"] == random_model(2, 2, 8, seed=3).digest
    ex = exhaustive_sensitivity(zoo_model("soft_parity"), 8)
    assert sens_rec.result["value"] == ex.value and sens_rec.result["certified"] is False
    assert sens_rec.result["verdict"] == "MEASURED"
    assert prove_rec.result["verdict"] == "proved" and prove_rec.result["queries"] > 0
    assert prove2_rec.result["verdict"] == "proved"


# ----- report -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_markdown_table_and_plot_formats(tmp_path):
    out = tmp_path / "r.jsonl"
    res = run_sweep(
        grid_cells("sweep_tasks:mixed", ["a", "b"], [1, 2, 13], seeds=[0, 1]), out, serial=True
    )
    table = res.table()
    assert "| sweep_tasks:mixed | `a` | 2 | 2/2 | ok ×2 | – | 2.05 (2–2.1) |" in table
    assert "| sweep_tasks:mixed | `b` | 13 | 0/2 | failed ×2 |" in table
    assert "- sweep_tasks:mixed a n=13 seed=1 — failed: RuntimeError: planted failure" in table
    assert res.plot(tmp_path / "p.pdf").read_bytes()[:5] == b"%PDF-"
    assert res.plot(tmp_path / "p.svg").read_text().lstrip().startswith("<?xml")
    assert res.plot(tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(AttncertError, match=r"extension '\.xyz', so its image format is unknown"):
        res.plot(tmp_path / "p.xyz")
    assert not (tmp_path / "p.xyz").exists()


# ----- packaging ----------------------------------------------------------------------------------


def test_attncert_sweep_is_callable_after_submodule_imports(tmp_path):
    import attncert.sweep.grid  # rebinds attncert.sweep to the package

    res = attncert.sweep("sweep_tasks:echo", ["m"], [5], out=tmp_path / "r.jsonl", serial=True)
    assert res.records[0].result["value"] == 5.0


def test_the_core_install_needs_no_dask(tmp_path, monkeypatch):
    code = (
        "import sys; sys.modules['distributed'] = None\n"
        "import attncert.sweep as S\n"
        "assert 'dask' not in sys.modules\n"
        "r = S.run_sweep(S.grid_cells('sweep_tasks:echo', ['m'], [2]), sys.argv[1], serial=True)\n"
        "assert r.complete\n"
        "try:\n"
        "    S.run_sweep(S.grid_cells('sweep_tasks:echo', ['m'], [3]), sys.argv[1])\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "r.jsonl")], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    assert "UnsupportedError" in p.stdout and "pip install 'attncert[dask]'" in p.stdout


def test_impossible_sizes_are_refused_before_anything_runs(tmp_path):
    from attncert.errors import ParameterError

    out = tmp_path / "r.jsonl"
    for cells in (
        grid_cells("certify", ["random:L2-H2-d8"], [10**13]),
        grid_cells("prove", ["Q_1 S Q_0"], [10**6]),
    ):
        with pytest.raises(ParameterError, match=r"beyond the limit|more than the budget"):
            run_sweep(cells, out, serial=True)
        assert not out.exists()
