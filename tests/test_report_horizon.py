"""The report's length-horizon section (issue 40, item 5): on a test bed whose first failure
is known in closed form (first_symbol_model(3.0): right on every string of length n exactly
when n − 1 < e³, first wrong at n* = ⌊e³⌋ + 2 = 22 on 0·1²¹), the report over
``--lengths 1:512`` shows proved [1, 21], the first refuted length 22 with its witness in
run-length form, the sampled accuracy (measured, cross-checked against the model's closed
form) and one plot; ``attncert check DIR`` re-derives it and catches an edited cell, an
edited certificate and an edited page, naming the file; a model or language the horizon
refuses shows the section as NOT APPLICABLE with the reason; the default range is 64× the
longest trained (else reported) length; a bad range is refused before any work."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import attncert
from attncert.cli.main import main
from attncert.errors import InputError, UnsupportedError
from attncert.model.testbeds import first_failure, first_symbol_model
from attncert.report import cells as C
from attncert.report import run as R
from attncert.report.directory import check_report
from attncert.report.document import build_report, describe_model
from attncert.report.horizon_cell import default_span, parse_span, sample_lengths
from attncert.report.sampling import random_strings
from attncert.report.text import plain

DELTA = 3.0
LIMIT = 30.0  # generous: the horizon cell needs ≈ 3 s here, a loaded machine more
LEAKS = re.compile(r"\b(None|nan|NaN|inf)\b")


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    """The report of first_symbol_model(3.0) at n = 8 over the lengths 1:512."""
    d = tmp_path_factory.mktemp("horizon") / "report"
    rep = attncert.report(
        first_symbol_model(DELTA), ns=(8,), lengths="1:512", out=d, dask=False,
        cell_time_limit=LIMIT,
    )  # fmt: skip
    return rep, d


def horizon(rep):
    return rep.cells["horizon-n8"]


@pytest.mark.slow
def test_the_known_first_failure_is_certified_with_its_witness(bed):
    rep, d = bed
    star = first_failure(DELTA)
    assert star == math.floor(math.exp(DELTA)) + 2 == 22
    rec = horizon(rep)
    assert rec["status"] == "ok" and rec["verdict"] == "REFUTED"
    data = rec["data"]
    assert data["lengths"] == [1, 512]
    assert data["proved"] == [[1, star - 1]] and data["proved_up_to"] == star - 1
    assert data["refuted"] == [[star, 512]] and data["undecided"] == []
    assert data["first_refuted"] == star
    assert data["witness"] == "0" + "1" * (star - 1)
    assert rec["certificate"] == "certs/horizon-n8.json"
    # the section: one row per interval, by the kernel's section rule, the witness run-length
    s = rep.section("horizon")
    assert s.verdict == "REFUTED" and s.plot == "horizon" and s.about == "first_last"
    rows = [[plain(c) for c in r] for r in s.rows]
    assert [r[:2] for r in rows] == [["[1, 21]", "CERTIFIED"], ["[22, 512]", "REFUTED"]]
    assert rows[1][3] == "0·1^21 (model accepts it, not a member of first_last)"
    assert "wrong first at n = 22 (witness 0·1^21, decided in arb)" in s.summary
    assert "certs/horizon-n8.json" in s.certificates
    # the summary paragraph, in one sentence
    assert (
        "Length horizon on first_last over n ∈ [1, 512]: proved right on every string of every "
        "length up to 21; wrong first at n = 22 (witness 0·1^21, decided in arb)."
    ) in rep.summary_text
    # the manifest records the range: check DIR rebuilds the same page from it
    manifest = json.loads((d / "report-manifest.json").read_text())
    assert manifest["lengths"] == [1, 512] and "horizon-n8" in manifest["cells"]


def test_sampled_accuracy_is_measured_and_matches_the_closed_form(bed):
    """The sampled numbers are the model's: on the same strings, the closed form of the test
    bed (accept iff e^Δ·v₁ + Σ_{j≥2} v_j has the sign of v_n, v = ±1) gives the same count."""
    rep, _ = bed
    model = first_symbol_model(DELTA)
    rows = horizon(rep)["data"]["sampled"]
    assert [r["n"] for r in rows] == sample_lengths(1, 512)[: len(rows)]
    assert len(rows) >= 3  # 2, 8, 32 at least: each a fraction of a second
    for r in rows:
        n = r["n"]
        if r["exact"]:
            strings = ["".join(p) for p in itertools.product("01", repeat=n)]
        else:
            strings = random_strings(model, n, 0)
        v = np.array([[1 if c == "1" else -1 for c in s] for s in strings])
        score = math.exp(DELTA) * v[:, 0] + v[:, 1:].sum(axis=1)
        accept = score * v[:, -1] > 0
        right = int(np.sum(accept == (v[:, 0] == v[:, -1])))
        assert (r["strings"], r["right"]) == (len(strings), right), n
        if n < first_failure(DELTA):
            assert right == len(strings)  # proved right there: no sample can be wrong
    s = rep.section("horizon")
    assert s.columns[-1] == "measured accuracy (float, sampled)"
    assert any("sampled; 95 % Wilson" in plain(r[-1]) for r in s.rows)


def test_one_plot_band_first_refuted_and_points(bed):
    from attncert.report.plots import horizon_figure

    rep, d = bed
    fig = horizon_figure(rep.cells, rep.ns, rep.language)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "n"
    assert "sampled accuracy" in ax.get_ylabel() and ax.get_ylim() == (-0.04, 1.04)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "proved right on every string (certified)" in labels
    assert "first refuted: n = 22" in labels
    assert any(lb.startswith("sampled accuracy (float, measured") for lb in labels)
    # the band covers the lengths 1..21 as [1, 22); the first refuted length is marked at 22
    spans = [p for p in ax.patches if p.get_facecolor()[1] > 0.4]  # the green band
    xs = sorted({round(x, 6) for p in spans for x in p.get_path().transformed(
        p.get_patch_transform()).vertices[:, 0]})  # fmt: skip
    assert xs[0] == 1 and xs[-1] == 22
    assert [ln.get_xdata()[0] for ln in ax.lines if ln.get_linestyle() == "--"] == [22]
    page = (d / "index.html").read_text()
    assert '<section id="horizon">' in page and (d / "plots" / "horizon.svg").is_file()
    assert page.count("<svg") == len(rep.plots)


@pytest.mark.slow
def test_check_dir_re_derives_the_horizon(bed):
    _, d = bed
    rc = check_report(d)
    assert not rc.problems, rc.lines()
    cell = next(f for f in rc.cells if f.path == "cells/horizon-n8.json")
    assert cell.verdict == "REFUTED" and "certs/horizon-n8.json" in cell.reason
    assert rc.verdict == "REFUTED" and rc.exit_code == 1  # the worst re-derived verdict
    assert not LEAKS.search((d / "report.md").read_text())
    js = json.loads((d / "report.json").read_text())
    assert not LEAKS.search(json.dumps([js["summary"], js["sections"]], ensure_ascii=False))


def test_check_takes_the_horizon_certificate_alone(bed, capsys):
    """``attncert check certs/horizon-n8.json``: the kernel's re-derivation of the one file
    (the model found from the certificate's source, the report's model.json)."""
    _, d = bed
    assert main(["check", str(d / "certs" / "horizon-n8.json")]) == 1  # REFUTED
    out = capsys.readouterr().out
    assert "(horizon): re-derived by kernel.horizon over n ∈ [1, 512]" in out
    assert "proved up to 21, wrong first at n = 22" in out


def _copy(d: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(d, out)
    return out


def _rewrite(root: Path, rel: str, text: str) -> None:
    """Write a file of the report and update its hash in the manifest, so that only the
    re-derivation can catch it."""
    (root / rel).write_text(text)
    m = json.loads((root / "report-manifest.json").read_text())
    m["files"][rel] = hashlib.sha256((root / rel).read_bytes()).hexdigest()
    (root / "report-manifest.json").write_text(json.dumps(m))


@pytest.mark.slow
def test_an_edited_horizon_cell_is_caught_naming_the_file(bed, tmp_path):
    _, d = bed
    root = _copy(d, tmp_path)
    rel = "cells/horizon-n8.json"
    rec = json.loads((root / rel).read_text())
    rec["data"]["proved_up_to"] = 512
    _rewrite(root, rel, json.dumps(rec, indent=1))
    problems = check_report(root).problems
    assert any(p.path == rel and "data.proved_up_to" in p.reason for p in problems), problems
    # the verdict said better than the certificate
    rec = json.loads((d / rel).read_text())
    rec["verdict"] = "CERTIFIED"
    root2 = tmp_path / "copy2"
    shutil.copytree(d, root2)
    _rewrite(root2, rel, json.dumps(rec, indent=1))
    problems = check_report(root2).problems
    assert any(p.path == rel and "verdict" in p.reason and "'REFUTED'" in p.reason
               for p in problems), problems  # fmt: skip


@pytest.mark.slow
def test_an_edited_horizon_certificate_is_refused_by_the_kernel(bed, tmp_path):
    _, d = bed
    rel = "certs/horizon-n8.json"
    # a summary that claims more than the tree
    root = _copy(d, tmp_path)
    data = json.loads((root / rel).read_text())
    data["summary"]["proved_up_to"] = 30
    _rewrite(root, rel, json.dumps(data, indent=1))
    problems = check_report(root).problems
    assert any(p.path == rel and "proved_up_to" in p.reason for p in problems), problems
    # a wrong leaf turned into a right one, and the summary to match: the bound refuses it
    root2 = tmp_path / "copy2"
    shutil.copytree(d, root2)
    data = json.loads((root2 / rel).read_text())
    k, leaf = next((k, nd["leaf"]) for k, nd in enumerate(data["nodes"])
                   if (nd.get("leaf") or {}).get("claim") == "wrong")  # fmt: skip
    leaf.update(claim="right", decision=not leaf["decision"])
    data["summary"].update(proved=[[1, 512]], refuted_intervals=[], proved_up_to=512,
                           first_refuted=None)  # fmt: skip
    _rewrite(root2, rel, json.dumps(data, indent=1))
    rc = check_report(root2)
    assert rc.verdict == "REFUTED"
    assert any(p.path == rel and f"nodes[{k}]" in p.reason for p in rc.problems), rc.problems


def _dfa_language(tmp_path: Path) -> str:
    from attncert.languages.dfa import DFA
    from attncert.languages.save import save_dfa

    ends_in_1 = DFA(("a", "b"), ("0", "1"), ((0, 1), (0, 1)), 0, frozenset({1}))
    return "dfa:" + str(save_dfa(ends_in_1, tmp_path / "ends1.json"))


def _mean_readout():
    m = first_symbol_model(DELTA)
    return replace(m, readout=replace(m.readout, position="mean"))


def _position_table():
    m = first_symbol_model(DELTA)
    d = m.embedding.word.shape[1]
    return replace(m, embedding=replace(m.embedding, table=np.zeros((64, d))))


@pytest.mark.parametrize(
    ("make", "language", "why"),
    [
        (lambda tmp: _mean_readout(), "first_last", "mean pooling"),
        (lambda tmp: _position_table(), "first_last", "learned position table"),
        (lambda tmp: first_symbol_model(DELTA), _dfa_language, "pins membership down"),
    ],
    ids=["mean-readout", "position-table", "dfa"],
)
def test_what_the_horizon_refuses_is_not_applicable_with_the_reason(make, language, why, tmp_path):
    model = make(tmp_path)
    lang = language(tmp_path) if callable(language) else language
    spec = C.CellSpec("horizon", 8, lang, 10.0, 0, (8,), (1, 512))
    rec = C.run_cell(spec, model, {})
    assert rec["status"] == "not-applicable" and why in rec["reason"]
    assert rec["certificate"] is None and rec["seconds"] < 5  # refused before any work
    rep = build_report(describe_model(model), lang, (8,), {"horizon-n8": rec})
    s = rep.section("horizon")
    assert s.verdict == "NOT APPLICABLE" and why in s.summary
    assert "Length horizon" in rep.summary_text and why in rep.summary_text
    assert "horizon" not in rep.plots


def test_the_default_range_is_64x_the_trained_or_reported_length(monkeypatch, tmp_path):
    from attncert.model import zoo_model

    hard = zoo_model("trained_hard_first_last")
    assert hard.meta["training"]["recipe"]["max_len"] == 32
    assert default_span(hard, (8, 16)) == (1, 64 * 32)  # the record, beyond the n's
    assert default_span(hard, (8, 1024)) == (1, 64 * 1024)  # an n beyond the record
    assert default_span(first_symbol_model(DELTA), (8, 16)) == (1, 64 * 16)  # no record
    # report() plans the horizon with it and records it: every analysis stubbed out
    seen = {}

    def stub(spec, model, source):
        seen[spec.analysis] = spec
        raise UnsupportedError("stubbed")

    for a in C.ANALYSES:
        monkeypatch.setitem(C._ANALYSIS, a, stub)
    for model, ns, want in (
        ("zoo:trained_hard_first_last", (8,), [1, 2048]),
        (first_symbol_model(DELTA), (4, 8), [1, 512]),
    ):
        out = tmp_path / str(len(seen))
        attncert.report(model, ns=ns, out=out, dask=False, cell_time_limit=5)
        assert seen["horizon"].span == tuple(want)
        manifest = json.loads((out / "report-manifest.json").read_text())
        assert manifest["lengths"] == want
        cell = json.loads((out / "cells" / f"horizon-n{ns[0]}.json").read_text())
        assert cell["key"]["lengths"] == want


def test_the_range_travels_to_a_dask_worker_as_a_sweep_parameter(monkeypatch):
    """The horizon's range in the sweep task's params (how a cell runs on Dask) comes back
    as the same span, ∞ included."""
    from attncert.sweep.grid import Cell

    seen = {}

    def stub(spec, model, source):
        seen["span"] = spec.span
        return "MEASURED", {}, None

    monkeypatch.setitem(C._ANALYSIS, "horizon", stub)
    for span in ((1, None), (3, 700)):
        params = {"analysis": "horizon", "language": "first_last", "time_limit": 5.0,
                  "lengths": "8", "span": R._span_text(span),
                  "source": json.dumps({"zoo": "trained_hard_first_last"})}  # fmt: skip
        cell = Cell("attncert.report.cells:report_task", "zoo:trained_hard_first_last", 8, 0,
                    tuple(sorted(params.items())))  # fmt: skip
        assert C.report_task(cell)["status"] == "ok"
        assert seen["span"] == span


@pytest.mark.parametrize("bad", ["5:2", "0:8", "1:x", "8", "-1:4", "1:2.5"])
def test_a_bad_range_is_refused_before_any_work(bad, tmp_path, capsys):
    out = tmp_path / "r"
    code = main(["report", "zoo:trained_hard_first_last", "--n", "8", "--lengths", bad,
                 "--no-dask", "-o", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--lengths" in err and "Traceback" not in err
    assert not out.exists()
    with pytest.raises(InputError, match="--lengths"):
        attncert.report("zoo:trained_hard_first_last", ns=(8,), lengths=bad, out=out)
    assert not out.exists()


def test_parse_span_takes_both_forms():
    assert parse_span("1:512") == parse_span((1, 512)) == (1, 512)
    assert parse_span("4:inf") == parse_span((4, None)) == parse_span([4, "inf"]) == (4, None)
    for bad in ((2, 1), (0, 3), (True, 3), (1.5, 3), (1, 2, 3), None):
        with pytest.raises(InputError):
            parse_span(bad)
    assert sample_lengths(1, 512) == [2, 8, 32, 128, 512]
    assert sample_lengths(5, 7) == [5, 7] and sample_lengths(1, None)[-1] == 4096


@pytest.mark.slow
def test_right_at_every_length_over_an_unbounded_range(tmp_path):
    """A leftmost-hard head on position 1 is right at every n: over [1, ∞] the cell, bound
    to its certificate by the kernel, is CERTIFIED, the section and the summary say so, and
    no page prints "inf" (the JSON's word for ∞)."""
    from attncert.report.binding import bind

    model = first_symbol_model(DELTA, kind="leftmost")
    spec = C.CellSpec("horizon", 8, "first_last", 15.0, 0, (8,), parse_span("1:inf"))
    rec = R.store(tmp_path, spec, C.run_cell(spec, model, {"path": "../model.json"}))
    b = bind("horizon", rec, model, tmp_path, 8, (8,))
    assert b["verdict"] == "CERTIFIED" and "rejected" not in b, b
    assert b["data"]["proved"] == [[1, "inf"]] and b["data"]["proved_up_to"] == "inf"
    assert b["data"]["lengths"] == [1, "inf"] == b["key"]["lengths"]
    rep = build_report(describe_model(model), "first_last", (8,), {"horizon-n8": b})
    s = rep.section("horizon")
    assert s.verdict == "CERTIFIED"
    assert [plain(c) for c in s.rows[0][:2]] == ["[1, ∞]", "CERTIFIED"]
    assert "proved right on every string of every length from 1 on" in rep.summary_text
    assert "horizon" in rep.plots
    assert not LEAKS.search(rep.to_markdown())
    js = json.loads(rep.to_json())
    assert not LEAKS.search(json.dumps([js["summary"], js["sections"]], ensure_ascii=False))


@pytest.mark.slow
def test_a_search_that_overruns_is_cut_and_the_report_still_completes(monkeypatch, tmp_path):
    """One bound can take longer than the search's own time limit: search and check are cut
    at 0.6 of the cell's limit by a timer (the cell's own timer re-armed after); the cell is
    UNDECIDED without a certificate, with the flag that raises the budget, and the sampled
    accuracy is still measured."""
    import signal
    import time

    import attncert.soft.horizon as H
    from attncert.report.binding import bind
    from attncert.report.horizon_cell import CUT

    def stuck(*args, **kwargs):
        time.sleep(60)

    monkeypatch.setattr(H, "verify_lengths", stuck)
    model = first_symbol_model(DELTA)
    spec = C.CellSpec("horizon", 8, "first_last", 4.0, 0, (8,), (1, 512))
    t0 = time.perf_counter()
    with R._time_limit(30.0):
        out = C.run_cell(spec, model, {})
        left = signal.getitimer(signal.ITIMER_REAL)[0]
    took = time.perf_counter() - t0
    assert CUT * 4.0 <= took < 4.0 and 30.0 - took - 1 < left <= 30.0 - took + 0.1
    assert out["status"] == "ok" and out["verdict"] == "UNDECIDED" and out["certificate"] is None
    assert "cut at its time limit" in out["data"]["no_certificate"]
    assert out["data"]["sampled"] and out["data"]["sampled"][0]["n"] == 2
    b = bind("horizon", R.store(tmp_path, spec, out), model, tmp_path, 8, (8,))
    assert b["verdict"] == "UNDECIDED" and b["data"]["lengths"] == [1, 512]
    s = build_report(describe_model(model), "first_last", (8,), {"horizon-n8": b}).section(
        "horizon"
    )
    assert s.verdict == "UNDECIDED" and "Nothing certified" in s.summary
    assert any("--cell-time-limit" in plain(n) for n in s.notes)


def test_a_cut_horizon_cell_reads_the_same_when_re_bound():
    """A horizon cell cut at its time limit has no certificate; binding it says why once
    ("no certificate: …"), and binding its own output again gives the same fields — the
    page rebuilt by `check` is byte-for-byte the one `report` wrote (it once grew a
    "no certificate: " per pass, and `check` refused the page)."""
    from attncert.report.binding import _without_certificate

    model = first_symbol_model(DELTA)
    why = "no certificate: the horizon's search and check were cut at its time limit, 5 s"
    rec = {"data": {"no_certificate": why}, "key": {"lengths": [1, 512]}}
    a1, f1 = _without_certificate("horizon", model, rec)
    a2, f2 = _without_certificate("horizon", model, {**rec, "data": {**rec["data"], **f1}})
    assert (a1, f1) == (a2, f2)
    assert a1.verdict.value == "UNDECIDED" and f1["no_certificate"] == why
    assert f1["reasons"] == [why] and f1["lengths"] == [1, 512]
