"""The mutation-edges tool (benchmarks/mutation_edges, issue 41 item 5) does what its report
claims: the exact neighbour mutants of each comparison, and a fork runner that reports a
mutant killed (by the right test), survived, timed out or crashed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.mutation_edges import schedule, testmap  # noqa: E402
from benchmarks.mutation_edges.mutants import SLACK_NAME, comparison_mutants, shift  # noqa: E402
from benchmarks.mutation_edges.source import Source  # noqa: E402

TOY = textwrap.dedent(
    """\
    import numpy as np


    def decide(x, a, kind, top, s, e):
        if x > 0:
            return "accept"
        if len(a) < 3:
            return "short"
        if kind == "soft" or x is None or x in (1, 2) or type(x) == int:
            return "format"
        near = s >= (top - 2 * e)[:, None]
        return [v for v in a if v != x], near


    def fidelity(claimed, derived, tol):
        return claimed <= derived


    def ranged(t, b=1 < 2):
        return 0 <= t < 10, f"{t > 1}"


    LIMIT = 3 > 2
    """
)


def _mutants():
    return comparison_mutants(Source("toy", Path("toy.py"), TOY))


def _changes(mutants, line: int) -> set[str]:
    return {m.change for m in mutants if m.line == line}


OTHERS = {
    ">": {">=", "<", "<=", "==", "!="},
    "<": {"<=", ">", ">=", "==", "!="},
    ">=": {">", "<", "<=", "==", "!="},
    "<=": {"<", ">", ">=", "==", "!="},
    "!=": {"<", "<=", ">", ">=", "=="},
}


def _ops(op: str) -> set[str]:
    return {f"{op}→{o}" for o in OTHERS[op]}


def test_every_neighbour_operator_bound_and_no_format_check():
    ms = _mutants()
    # x > 0: the five other operators (== 0 → >= 0 / <= 0 among them) and 0 ± 1
    assert _changes(ms, 5) == _ops(">") | {"+1", "-1"}
    assert {m.mutated for m in ms if m.line == 5 and m.kind == "bound"} == {
        "if x > 1:",
        "if x > -1:",
    }
    # len(a) < 3: both operands are bounds, each moved by one
    assert {m.mutated for m in ms if m.line == 7 and m.kind == "bound"} == {
        "if (len(a) + 1) < 3:",
        "if (len(a) - 1) < 3:",
        "if len(a) < 4:",
        "if len(a) < 2:",
    }
    # string, None, membership, type checks: no mutant
    assert _changes(ms, 9) == set()
    # a numpy comparison inside an expression, and one in a comprehension
    assert _changes(ms, 11) == _ops(">=")
    assert _changes(ms, 12) == _ops("!=")
    # no tolerance in scope in decide(): no slack mutant
    assert not [m for m in ms if m.function == "decide" and m.kind == "slack"]
    # a chained comparison: each operator, and the integer ends ± 1; not the default
    # value, the f-string nor the module-level constant
    chained = {m.change for m in ms if m.function == "ranged"}
    assert chained == _ops("<=") | _ops("<") | {"+1", "-1"}
    assert len([m for m in ms if m.function == "ranged"]) == 10 + 4
    assert all(m.line != 23 for m in ms)
    assert len(ms) == 7 + 9 + 5 + 5 + 5 + 4 + 14


def test_ids_name_module_function_line_column_and_change():
    ms = {m.id for m in _mutants()}
    assert "toy:decide:5:10:>→>=" in ms
    assert "toy:decide:7:17:+1" in ms  # the column of the literal 3
    assert "toy:fidelity:16:23:slack right+ (looser)" in ms  # of the operand `derived`


def test_tolerance_slack_on_either_side_in_the_fidelity_form():
    ms = [m for m in _mutants() if m.kind == "slack"]
    got = {m.change: m.mutated for m in ms}
    assert got == {
        "slack left+ (tighter)": f"return {SLACK_NAME}(tol, claimed, +1) <= derived",
        "slack left- (looser)": f"return {SLACK_NAME}(tol, claimed, -1) <= derived",
        "slack right+ (looser)": f"return claimed <= {SLACK_NAME}(tol, derived, +1)",
        "slack right- (tighter)": f"return claimed <= {SLACK_NAME}(tol, derived, -1)",
    }
    # the looser mutants accept a claim above the derived value by less than the
    # tolerance — in floats and in exact Fractions — the original does not
    for m in ms:
        space = {SLACK_NAME: shift}
        exec(compile(m.apply(TOY), "toy.py", "exec"), space)
        for claimed, derived in ((1.0 + 1e-4, 1.0), (Fraction(10001, 10000), Fraction(1))):
            accepted = space["fidelity"](claimed, derived, 1e-3)
            assert accepted == m.change.endswith("(looser)"), (m.change, claimed)
    assert shift(1e-3, Fraction(-2000), +1) == Fraction(-2000) + 2 * Fraction(1e-3) * 1000


def test_every_mutant_compiles_and_keeps_every_line_number():
    for m in _mutants():
        text = m.apply(TOY)
        compile(text, "toy.py", "exec")
        assert text.count("\n") == TOY.count("\n")


def test_the_map_selects_the_tests_that_ran_the_mutated_line():
    text = "def f(x):\n    y = x + 1\n    if y > 2:\n        return 1\n    return 0\n"
    data = {
        "tests": {
            "tests/t.py::a": {"file": "tests/t.py", "seconds": 0.1, "outcome": "passed"},
            "tests/t.py::b": {"file": "tests/t.py", "seconds": 0.1, "outcome": "passed"},
        },
        "lines": {"toy/m": {"2": ["tests/t.py::a", "tests/t.py::b"], "4": ["tests/t.py::b"]}},
        "texts": {"toy/m": text},
    }
    state = testmap.merge({"tests": {}, "files": {}, "functions": {}}, data, [])
    fn = Source("toy/m", Path("m.py"), text).functions[0]
    assert testmap.tests_for(state, "toy/m", "f", fn.first, [4], fn.hash) == (
        ["tests/t.py::b"],
        False,
    )
    assert testmap.tests_for(state, "toy/m", "f", fn.first, [3], fn.hash) == ([], False)
    # a function edited since: every test that reached it, flagged stale
    assert testmap.tests_for(state, "toy/m", "f", fn.first, [4], "other") == (
        ["tests/t.py::a", "tests/t.py::b"],
        True,
    )


RUNNER_MODULE = textwrap.dedent(
    """\
    import os


    def accept(x):
        if x > 0:
            return True
        return False


    def big(x):
        return x >= 10


    def steps(n):
        i = 0
        while i < n:
            i += 2
        return i


    def guard(x):
        if x < 0:
            os.kill(os.getpid(), 9)
        return x


    class Box:
        def __init__(self, hi):
            self.hi = hi

        def inside(self, x):
            def check(v):
                return v <= self.hi

            return check(x)
    """
)

RUNNER_TESTS = textwrap.dedent(
    """\
    from toymod import Box, accept, big, guard, steps


    def test_far_from_the_edge():
        assert accept(5) and not accept(-5)
        assert big(100) and not big(-100)


    def test_at_the_edge():
        assert accept(1) and not accept(0)


    def test_steps():
        assert steps(3) == 4


    def test_guard():
        assert guard(1) == 1


    def test_box_edge(tmp_path):
        (tmp_path / "seen").write_text("a fixture works in the child")
        assert Box(5).inside(5) and not Box(5).inside(6)
    """
)

DRIVER = textwrap.dedent(
    """\
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import pytest
    from benchmarks.mutation_edges.mutants import comparison_mutants
    from benchmarks.mutation_edges.runner import ForkServer, Job
    from benchmarks.mutation_edges.source import Source

    here = Path(sys.argv[2])
    src = Source.read(here / "toymod.py", "toymod")
    want = json.loads(sys.argv[3])
    tests = [f"test_toy.py::{t}" for t in
             ("test_far_from_the_edge", "test_at_the_edge", "test_steps", "test_guard",
              "test_box_edge")]
    units = {f.qualname: f for f in src.functions}
    jobs, out = [], {}
    for m in comparison_mutants(src):
        if m.id in want:
            u = units[m.unit]
            # only the looping mutant meets its deadline; the others finish in milliseconds
            timeout = 1.5 if m.function == "steps" else 60.0
            jobs.append(Job(key=m.id, tests=tests, timeout=timeout, module="toymod",
                            import_name="toymod", path=str(src.path), unit=m.unit,
                            first=u.first, text=m.apply(src.text)))
    def done(job):
        out[job.key] = [job.result["status"], job.result.get("test")]
    server = ForkServer([(lambda: jobs.pop(0) if jobs else None, done)], 2, ["toymod"],
                        {("toymod", u.qualname): (str(src.path), src.text, u.first)
                         for u in src.functions})
    pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts=",
                 "--rootdir", str(here), str(here / "test_toy.py")], plugins=[server])
    print("RESULT " + json.dumps(out))
    """
)


@pytest.mark.slow
def test_the_fork_runner_reports_killed_survived_timeout_and_crash(tmp_path):
    (tmp_path / "toymod.py").write_text(RUNNER_MODULE)
    (tmp_path / "test_toy.py").write_text(RUNNER_TESTS)
    want = {
        "toymod:accept:5:10:>→>=": ["killed", "test_toy.py::test_at_the_edge"],
        "toymod:accept:5:10:>→<": ["killed", "test_toy.py::test_far_from_the_edge"],
        # x > 10 agrees with x >= 10 on every input the tests use
        "toymod:big:11:14:>=→>": ["survived", None],
        # 0, 2, 4, … never equals 3
        "toymod:steps:16:13:<→!=": ["timeout", "test_toy.py::test_steps"],
        "toymod:guard:22:10:<→>": ["crash", "test_toy.py::test_guard"],
        # a nested function inside a method: swapped through the method's code
        "toymod:Box.inside.check:33:22:<=→<": ["killed", "test_toy.py::test_box_edge"],
    }
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(ROOT), str(tmp_path), json.dumps(list(want))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, proc.stdout + proc.stderr
    assert json.loads(line.removeprefix("RESULT ")) == want
    # the mutants ran in children: the module on disk and in the parent are untouched
    assert (tmp_path / "toymod.py").read_text() == RUNNER_MODULE


@pytest.mark.parametrize("value", [1.5, Fraction(3, 2), -4])
def test_shift_keeps_the_number_type(value):
    up, down = shift(1e-3, value, +1), shift(1e-3, value, -1)
    assert down < value < up
    if not isinstance(value, float):
        assert isinstance(up, Fraction) and up - value == Fraction(1e-3) * max(1, abs(value))


def test_tests_run_killers_first_then_the_cheapest_counting_fixtures_once():
    # a.py's first test paid a 10 s module fixture; b.py has none
    own, fixture = schedule.costs(
        [
            ("a.py::t1", 0, 10.5, 10.1),
            ("a.py::t2", 1, 0.2, 0.1),
            ("a.py::t3", 2, 0.3, 0.1),
            ("b.py::u1", 3, 1.0, 0.1),
            ("b.py::u2", 4, 2.0, 0.1),
        ]
    )
    assert fixture == {"a.py": pytest.approx(10.0), "b.py": 0.0}
    assert own["a.py::t1"] == pytest.approx(0.5)
    tests = ["a.py::t1", "a.py::t2", "a.py::t3", "b.py::u1", "b.py::u2"]
    assert schedule.order_tests(tests, Counter(), own, fixture) == [
        "b.py::u1",
        "b.py::u2",
        "a.py::t2",
        "a.py::t3",
        "a.py::t1",
    ]
    # a test that killed other mutants of the function goes first; its file is then open
    assert schedule.order_tests(tests, Counter({"a.py::t3": 2}), own, fixture)[:3] == [
        "a.py::t3",
        "a.py::t2",
        "a.py::t1",
    ]
