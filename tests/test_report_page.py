"""A report page that says plainly what the theory says (issue 42, items 1–5 and 7), checked
on the page text without a browser (tests/test_report_browser.py renders the pages):

1. the summary is there, first, on the page, in report.md and in the CLI's closing lines,
   derived from the verdicts (a model proved wrong → its witness; correct → the count);
   every link in it reaches a definition on the page;
2. each section's badge follows from its rows by the rule written next to it; each names
   its language; Theorem 6's floor is "for comparison" when the language is not PARITY;
   exact counts as fractions, measured values over every string at small n; no ``None`` /
   ``nan`` on any page;
3. pairs with the positions where they differ marked, long strings in run-length form;
4. a constant model is called constant (from its zero readout and from verify's tree, both
   bound), and the analyses that are vacuous for it say so;
5. every badge styled, tables in a scrolling wrapper, separate axes for logit units and
   nats, zero-width intervals drawn above everything, one n axis per page;
7. each cell shows its budget and what it used; one that ran out names the flag.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import attncert
from attncert.cli.main import main
from attncert.kernel.verdict import section as kernel_section
from attncert.report import text as T
from attncert.report.document import build_report
from attncert.report.html import BADGES, CSS
from attncert.report.sections.common import UNFINISHED
from attncert.report.terms import VERDICTS
from attncert.verdicts import Verdict

# a generous budget: every cell here finishes in a few seconds, but a loaded machine must not
# turn one into a timeout (a timed-out cell is made on purpose below, without waiting)
LIMIT = 20.0
FAST = {"ns": (8,), "dask": False, "cell_time_limit": LIMIT, "lengths": (1, 8)}


def constant_model():
    """trained_hard_first_last with its readout weights zeroed and bias −1: it rejects every
    string (the weights' own statement), and verify's tree is one bound leaf."""
    from attncert.model import zoo_model
    from attncert.model.spec import Readout

    m = zoo_model("trained_hard_first_last")
    r = m.readout
    zero = Readout(np.zeros_like(r.weight), -1.0, position=r.position)
    return dataclasses.replace(m, name="constant_first_last", meta={}, readout=zero)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Three reports at n = 8, in this process: first_last (the model's own language: proved
    correct), PARITY (proved wrong), and a constant model."""
    d = tmp_path_factory.mktemp("pages")
    return {
        "first_last": attncert.report("zoo:trained_hard_first_last", out=d / "fl", **FAST),
        "parity": attncert.report(
            "zoo:trained_hard_first_last", out=d / "par", language="parity", **FAST
        ),
        "constant": attncert.report(
            constant_model(), out=d / "const", language="first_last", **FAST
        ),
    }


class Page(HTMLParser):
    """The page's visible text, the summary's text and links, ids, marks per table cell,
    badge classes, and whether every table sits in a scrolling wrapper."""

    def __init__(self):
        super().__init__()
        self.text: list[str] = []
        self.ids: set[str] = set()
        self.summary: list[str] = []
        self.summary_links: list[str] = []
        self.badges: set[str] = set()
        self.cells: list[tuple[str, list[str]]] = []  # (cell text, marked symbols)
        self.tables_unwrapped = 0
        self._stack: list[tuple[str, dict]] = []
        self._cell: list[str] | None = None
        self._marks: list[str] = []
        self._in_style = False

    def _inside(self, tag, **attrs) -> bool:
        return any(
            t == tag and all(a.get(k) == v for k, v in attrs.items()) for t, a in self._stack
        )

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "table" and not any("scroll" in (x.get("class") or "") for _, x in self._stack):
            self.tables_unwrapped += 1
        if tag == "span" and "verdict" in (a.get("class") or ""):
            self.badges.update(c for c in a["class"].split() if c.startswith("v-"))
        if tag == "a" and self._inside("div", id="summary"):
            self.summary_links.append(a.get("href", ""))
        if tag == "td":
            self._cell, self._marks = [], []
        self._in_style = tag == "style"
        if tag not in ("br", "meta"):
            self._stack.append((tag, a))

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.cells.append(("".join(self._cell), self._marks))
            self._cell = None
        while self._stack:
            t, _ = self._stack.pop()
            if t == tag:
                break
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            return
        self.text.append(data)
        if self._inside("div", id="summary"):
            self.summary.append(data)
        if self._cell is not None:
            self._cell.append(data)
            if self._stack and self._stack[-1][0] == "mark":
                self._marks.append(data)


def page(rep) -> Page:
    p = Page()
    p.feed((Path(rep.directory) / "index.html").read_text(encoding="utf-8"))
    return p


LEAKS = re.compile(r"\b(None|nan|NaN|inf)\b")


# ----- 1. the summary ------------------------------------------------------------------------


@pytest.mark.slow
def test_the_summary_comes_first_everywhere_and_is_the_same(pages):
    for name, rep in pages.items():
        d = Path(rep.directory)
        assert rep.lead, name
        html = (d / "index.html").read_text()
        # on the page: right under the title, before the contents and every section
        assert html.index('id="summary"') < html.index('<section id="model"')
        md = (d / "report.md").read_text()
        assert md.splitlines()[2].startswith("**In short.**"), name
        assert json.loads((d / "report.json").read_text())["summary"] == [
            T.plain(s) for s in rep.lead
        ]
        # the CLI's closing lines are the same sentences
        tail = rep.summary().split("In short:\n", 1)[1]
        assert tail.splitlines() == [f"  {T.plain(s)}" for s in rep.lead]


@pytest.mark.slow
def test_the_cli_closes_with_the_summary(pages, tmp_path, capsys):
    import shutil

    d = tmp_path / "r"  # the parity report again: resumed, every cell re-bound, none re-run
    shutil.copytree(pages["parity"].directory, d)
    code = main(["report", "zoo:trained_hard_first_last", "--language", "parity", "--n", "8",
                 "--lengths", "1:8", "--workers", "0", "--cell-time-limit", "20", "--quiet",
                 "-o", str(d)])  # fmt: skip
    out = capsys.readouterr().out.rstrip().splitlines()
    assert code == 0
    start = out.index("In short:")
    assert out[start - 2].startswith("written: ") and out[start + 1].startswith(
        "  Proved wrong on parity at n = 8"
    )
    assert len(out) - start - 1 == len(json.loads((d / "report.json").read_text())["summary"])


def test_a_model_proved_wrong_is_said_wrong_with_its_witness(pages):
    rep = pages["parity"]
    ver = rep.cells["verify-n8"]
    assert ver["verdict"] == "REFUTED"
    w = ver["data"]["witnesses"][0]
    text = rep.summary_text
    assert "Proved wrong on parity at n = 8" in text and w in text
    # what the model does on the witness is what the language does not
    member = w.count("1") % 2 == 0
    assert ("rejects it, a member" if member else "accepts it, not a member") in text
    assert "128/256 = 0.5" in text  # the exact count, not an interval
    # Theorem 1's misclassified pair, both strings, with the differing positions marked
    x, y = rep.cells["certify-n8"]["data"]["misclassified"]["strings"]
    marked = T.plain(T.pair(x, y))
    assert marked.split(" (differ")[0].replace("✗ ", "").replace("✓ ", "") in text.replace(
        "✗ ", ""
    ).replace("✓ ", "")
    p = page(rep)
    assert w in "".join(p.summary) and "Proved wrong" in "".join(p.summary)


@pytest.mark.slow
def test_the_summary_is_derived_from_the_verdicts(pages):
    """Change what the cells say and the summary changes with them: it has no verdict of
    its own."""
    rep = pages["first_last"]
    assert rep.cells["verify-n8"]["verdict"] == "CERTIFIED"
    assert "Proved correct on first_last on every string of length 8" in rep.summary_text
    assert "256/256 = 1" in rep.summary_text and "Proved wrong" not in rep.summary_text
    cells = {k: v for k, v in rep.cells.items() if k != "verify-n8"}
    again = build_report(rep.model, rep.language, rep.ns, cells)
    assert "Proved correct" not in again.summary_text
    # a verify cell that timed out: the summary says so, with the flag that raises it
    cells["verify-n8"] = {"status": "timeout", "verdict": None, "reason": "no result",
                          "time_limit": 8.0, "seconds": 8.0, "data": {}}  # fmt: skip
    again = build_report(rep.model, rep.language, rep.ns, cells)
    assert "Did not finish: " in again.summary_text
    assert "verify-n8 TIMEOUT (ran out of its budget of 8 s" in again.summary_text
    assert "--cell-time-limit" in again.summary_text


def test_every_link_of_the_summary_reaches_a_definition_on_the_page(pages):
    for name, rep in pages.items():
        p = page(rep)
        assert p.summary_links, name
        for href in p.summary_links:
            assert href.startswith("#") and href[1:] in p.ids, (name, href)
        md = (Path(rep.directory) / "report.md").read_text()
        for anchor in re.findall(r"\]\(#([\w-]+)\)", md):
            assert f'<a id="{anchor}"></a>' in md, (name, anchor)


# ----- 2. sections -----------------------------------------------------------------------------


def _rule(words) -> str:
    rows = [Verdict.UNDECIDED if w in UNFINISHED else Verdict(w) for w in words
            if w in UNFINISHED or w in {v.value for v in Verdict}]  # fmt: skip
    return kernel_section(rows)[0].value


def test_each_badge_follows_from_its_rows_by_the_rule_written_next_to_it(pages):
    for name, rep in pages.items():
        for s in rep.sections:
            if s.key == "model" or "verdict" not in s.columns:
                continue
            assert s.rule, (name, s.key)
            col = s.columns.index("verdict")
            words = [r[col] for r in s.rows]
            if s.verdict != "MEASURED":
                assert s.verdict == _rule(words), (name, s.key, words)
            # the summary names each row verdict it speaks of, no other
            for w in re.findall(r"\b(CERTIFIED-TRIVIAL|CERTIFIED|OUTSIDE-THEOREM|REFUTED)\b",
                                s.summary):  # fmt: skip
                assert w in words, (name, s.key, w, s.summary)


def test_each_section_names_its_language(pages):
    for name, rep in pages.items():
        for s in rep.sections:
            assert s.about, (name, s.key)
            if s.key in ("certify", "verify", "soft"):
                assert rep.language in s.about
        assert "Language" in (Path(rep.directory) / "index.html").read_text()


def test_the_parity_floor_is_for_comparison_on_first_last(pages):
    fl, par = pages["first_last"].section("lemma5"), pages["parity"].section("lemma5")
    assert "PARITY floor, for comparison (nats)" in fl.columns
    assert "measured cross-entropy on PARITY, for comparison (nats)" in fl.columns
    assert any("shown for comparison" in n for n in fl.notes if isinstance(n, str))
    assert "PARITY, for comparison" in fl.about
    assert "Theorem 6 floor on parity (nats)" in par.columns
    assert not any("for comparison" in c for c in par.columns)
    # the summary states the floor only where the language is PARITY
    assert "Theorem 6: on parity" in pages["parity"].summary_text
    assert "Theorem 6" not in pages["first_last"].summary_text


def test_small_lengths_are_exact_and_counts_are_fractions(pages):
    rep = pages["parity"]
    h = rep.cells["harden-n8"]["data"]
    assert h["exact"] and h["strings"] == 256
    assert rep.section("harden").rows[0][3].endswith("(all 256 strings)")
    s = rep.cells["verify-n8"]["data"]["sampled"]
    assert s["exact"] and s["strings"] == 256 and s["right"] == 128  # = the certified count
    ce = rep.cells["sensitivity-n8"]["data"]["ce"]
    assert ce["exact"] and ce["strings"] == 256 and ce["language"] == "parity"
    # the exact cross-entropy is the mean over all 256 strings of transformers-free float
    from attncert.model import forward

    model = __import__("attncert.model", fromlist=["zoo_model"]).zoo_model(
        "trained_hard_first_last"
    )
    strings = ["".join(p) for p in itertools.product("01", repeat=8)]
    z = forward(model, strings).logits
    y = np.array([s.count("1") % 2 == 0 for s in strings])
    want = float(np.mean(np.logaddexp(0.0, -np.where(y, z, -z))))
    assert ce["mean"] == pytest.approx(want, rel=1e-9)
    assert T.wilson(187, 200)[0] < 187 / 200 < T.wilson(187, 200)[1]


def test_no_python_none_or_nan_on_any_page(pages):
    for name, rep in pages.items():
        d = Path(rep.directory)
        visible = " ".join(page(rep).text)
        assert not LEAKS.search(visible), (name, LEAKS.search(visible))
        md = (d / "report.md").read_text()
        assert not LEAKS.search(md), (name, LEAKS.search(md))
        js = json.loads((d / "report.json").read_text())
        shown = json.dumps([js["summary"], js["sections"]], ensure_ascii=False)
        assert not LEAKS.search(shown), name


def test_sensitivity_cli_labels_the_floor_parity_s_and_is_exact_at_small_n(capsys):
    argv = ["sensitivity", "zoo:trained_hard_first_last", "--n", "8", "--certify",
            "--time-budget", "0.5"]  # fmt: skip
    main(argv)
    out = capsys.readouterr().out
    assert "Theorem 6 on PARITY" in out and "PARITY's" in out
    assert "(all 256 strings)" in out and not LEAKS.search(out)
    main([*argv, "--json"])
    row = json.loads(capsys.readouterr().out)["certified"][0]
    assert row["measured_cross_entropy_exact"] is True
    assert row["measured_cross_entropy_strings"] == 256
    assert row["cross_entropy_language"] == "parity"


# ----- 3. strings a person can compare ---------------------------------------------------------


def _expand(line: str) -> str:
    """Undo the plain run-length form: tokens joined by ·, ``(b)^k`` / ``b^k``, ``[x]``."""
    out = []
    for tok in line.split("·"):
        tok = tok.strip().replace("[", "").replace("]", "")
        m = re.fullmatch(r"\(?([^()^]+)\)?\^(\d+)", tok)
        out.append(m.group(1) * int(m.group(2)) if m else tok)
    return "".join(out)


@pytest.mark.parametrize("n", [8, 33, 64, 200])
def test_a_pair_marks_where_it_differs_and_long_strings_read_back(n):
    rng = np.random.default_rng(n)
    x = "1" * (n // 2) + "".join(rng.choice(["0", "1"], n - n // 2))
    y = list(x)
    for p in sorted(rng.choice(n, size=min(3, n), replace=False)):
        y[p] = "1" if y[p] == "0" else "0"
    y = "".join(y)
    diff = T.differing(x, y)
    text = T.plain(T.pair(x, y))
    a, b = text.split(" (differ")[0].split(" / ")
    marks_a = re.findall(r"\[(.)\]", a)
    assert marks_a == [x[p - 1] for p in diff] and re.findall(r"\[(.)\]", b) == [
        y[p - 1] for p in diff
    ]
    assert T.positions(diff) in text
    assert _expand(a) == x and _expand(b) == y
    if n >= 64:  # half of it one run: the run-length form is shorter
        assert len(a) < n and "^" in a
    # a wrong rendering is caught: the marks are the differing symbols, nothing else
    assert T.plain(T.pair(x, x)).count("[") == 0


def test_the_pairs_on_the_page_mark_exactly_the_differing_positions(pages):
    rep = pages["parity"]
    x, y = rep.cells["certify-n8"]["data"]["misclassified"]["strings"]
    p = page(rep)
    cell = next(c for c, _ in p.cells if "differ at" in c and x[:3] in c)
    marks = next(m for c, m in p.cells if c == cell)
    want = [x[i - 1] for i in T.differing(x, y)] + [y[i - 1] for i in T.differing(x, y)]
    assert marks == want
    assert T.string("0" + "1" * 485) == T.inline(
        T.code("0"), T.Span("·"), T.code("1"), T.Span("485", "sup"), " (length 486)"
    )


# ----- 4. a constant model ---------------------------------------------------------------------


def test_a_constant_model_is_called_constant_at_the_top(pages):
    rep = pages["constant"]
    assert rep.summary_text.startswith("The model is constant")
    assert rep.model["readout_zero"] and "constant" in rep.section("model").summary
    # verify's tree, re-derived by the kernel, gives every string one decision
    assert rep.cells["verify-n8"]["data"]["one_decision"] == "reject"
    for key in ("harden", "certify", "lemma5", "soft"):
        notes = [n for n in rep.section(key).notes if isinstance(n, str)]
        assert any(n.startswith("vacuous at every n: the model is constant") for n in notes), key
    assert any("accuracy is only the share" in n for n in rep.section("verify").notes)
    # the Theorem 1 and Lemma 5 sentences about a constant model are not made
    assert "does not compute" not in rep.summary_text
    for name in ("first_last", "parity"):
        assert "constant" not in pages[name].summary_text.lower(), name
        assert pages[name].cells["verify-n8"]["data"]["one_decision"] is None


@pytest.mark.slow
def test_one_decision_is_bound_to_the_certificate(pages, tmp_path, capsys):
    import shutil

    from attncert.report.directory import check_report

    d = tmp_path / "r"
    shutil.copytree(pages["constant"].directory, d)
    rc = check_report(d)  # rebuilt byte for byte from the re-derived cells
    assert rc.cells and not rc.problems, rc.lines()
    cell = d / "cells" / "verify-n8.json"
    rec = json.loads(cell.read_text())
    rec["data"]["one_decision"] = "accept"
    cell.write_text(json.dumps(rec))
    problems = check_report(d).problems
    assert any("data.one_decision" in f.reason for f in problems), problems


# ----- 5. the page's form ----------------------------------------------------------------------


def test_every_badge_is_styled_and_every_table_scrolls_in_its_wrapper(pages):
    styled = set(re.findall(r"\.(v-[\w-]+) \{", CSS))
    assert {"v-" + w.replace(" ", "-") for w in VERDICTS} <= styled
    assert {"v-" + w.replace(" ", "-") for w in BADGES} == styled
    for name, rep in pages.items():
        p = page(rep)
        assert p.badges and p.badges <= styled, (name, p.badges - styled)
        assert p.tables_unwrapped == 0, name
    assert ".scroll { overflow-x: auto" in CSS and "overflow-wrap: anywhere" in CSS


def test_plots_have_one_unit_per_axis_one_n_range_and_visible_exact_intervals(pages):
    from attncert.report.plots import accuracy_figure, lemma5_figure

    rep = pages["parity"]
    ns = (8, 64)  # a page's lengths: every plot gets the same n axis, with or without data
    acc = accuracy_figure(rep.cells, ns, rep.language)
    l5 = lemma5_figure(rep.cells, ns, rep.language)
    axes = acc.axes + l5.axes
    assert len(l5.axes) == 2
    assert "logit" in l5.axes[0].get_ylabel() and l5.axes[1].get_ylabel() == "nats"
    assert "parity" in l5.axes[1].get_title()
    assert {ax.get_xlim() for ax in axes} == {axes[0].get_xlim()}
    assert all(list(ax.get_xticks()) == list(ns) for ax in axes)
    fl = lemma5_figure(pages["first_last"].cells, (8,), "first_last")
    assert "PARITY, for comparison" in fl.axes[1].get_title()
    # [0.5, 0.5] is an exact count: a diamond drawn above every other mark
    (ax,) = acc.axes
    from matplotlib.markers import MarkerStyle

    d = MarkerStyle("D")
    shape = d.get_path().transformed(d.get_transform()).vertices
    diamonds = [
        c for c in ax.collections
        if hasattr(c, "get_paths") and c.get_paths()
        and c.get_paths()[0].vertices.shape == shape.shape
        and np.allclose(c.get_paths()[0].vertices, shape)
    ]  # fmt: skip
    assert diamonds and list(diamonds[0].get_offsets()[0]) == [8, 0.5]
    top = max(a.get_zorder() for a in ax.get_children() if a is not diamonds[0])
    assert diamonds[0].get_zorder() > top


# ----- 7. budgets ------------------------------------------------------------------------------


def test_each_cell_shows_its_budget_and_what_it_used(pages):
    rep = pages["first_last"]
    for s in rep.sections:
        if "time used / budget" not in s.columns:
            continue
        col = s.columns.index("time used / budget")
        for r in s.rows:
            assert re.fullmatch(r"[\d.]+ s of 20 s(, ran out)?", r[col]), (s.key, r[col])
    for name, c in rep.cells.items():
        assert c["time_limit"] == LIMIT and c["seconds"] <= LIMIT + 1, name


def test_a_cell_that_ran_out_names_the_flag(pages):
    rep = pages["first_last"]
    cells = dict(rep.cells)
    cells["certify-n8"] = {"cell": "certify-n8", "status": "timeout", "verdict": None,
                           "reason": "no result within the cell time limit of 8 s",
                           "time_limit": 8.0, "seconds": 8.0, "data": {}}  # fmt: skip
    v = dict(cells["verify-n8"])
    v["data"] = {**v["data"], "stopped": "time limit (2.8 s)", "search_limit": 2.8}
    cells["verify-n8"] = v
    again = build_report(rep.model, rep.language, rep.ns, cells)
    cert = again.section("certify")
    assert cert.verdict == "UNDECIDED" and cert.rows[0][1] == "TIMEOUT"
    assert cert.rows[0][-1] == "8 s of 8 s, ran out"
    assert any("--cell-time-limit" in n for n in cert.notes)
    ver = again.section("verify")
    assert any("its own time limit, 2.8 s of the cell's 20 s" in n and "--cell-time-limit" in n
               for n in ver.notes if isinstance(n, str))  # fmt: skip
    assert "v-TIMEOUT" in again.to_html() and ".v-TIMEOUT {" in CSS


@pytest.mark.slow
def test_check_rebuilds_every_page_byte_for_byte(pages):
    """The pages are a function of the bound cells: ``attncert check DIR`` rebuilds them
    and finds nothing that differs (the summary, budgets and marks included)."""
    from attncert.report.directory import check_report

    for name in ("first_last", "parity"):  # the constant one: the test above
        rc = check_report(pages[name].directory)
        assert rc.cells and not rc.problems, (name, rc.lines())
