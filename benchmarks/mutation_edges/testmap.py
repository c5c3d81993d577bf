"""Which tests execute which lines of the measured modules: coverage.py with one dynamic
context per test (the pytest node id), collected in one single-process pytest run.

Stored in ``.mutation-edges/map.json`` per *function*: its source hash when collected, and
for each line of its body (relative to the def's first line, so that a function that only
moved keeps its entry) the tests that executed it. A later run re-collects only what went
stale: test files that are new or changed, and the test files whose tests reached a
function whose source changed since (all of them, for a module that has no entry yet).

Before every test attncert's (and the tests') function caches are cleared, so a test is
recorded as reaching the code that fills a cache even when an earlier test filled it.
Code a test reaches only in a subprocess (the CLI tests) is not recorded: a mutant is run
in-process, so those tests would not see it anyway.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .source import ROOT, SRC, Source, module_name, sha

STATE = ROOT / ".mutation-edges"
MAP = STATE / "map.json"
TESTS = ROOT / "tests"
# measured by coverage: the trusted code and the modules sampled for issue 41
MEASURED = [
    "kernel",
    "arith",
    "certificates",
    "languages",
    "logic",
    "model",
    "io.py",
    "restriction.py",
    "errors.py",
    "limits.py",
    "verdicts.py",
]
PYTEST_ARGS = [
    "-o",
    "addopts=",
    "-p",
    "no:xdist",
    "-p",
    "no:cacheprovider",
    "-m",
    "not slow and not notebooks",
    "-q",
]


def clear_caches() -> None:
    """Empty every ``functools`` cache of attncert's and the tests' modules and classes."""
    tests = str(TESTS)
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None) or ""
        if not (name.startswith("attncert") or file.startswith(tests)):
            continue
        for value in list(vars(mod).values()):
            inner = list(vars(value).values()) if isinstance(value, type) else []
            for obj in [value, *inner]:
                if isinstance(obj, functools._lru_cache_wrapper):
                    obj.cache_clear()


def test_files() -> dict[str, str]:
    """tests/**/test_*.py (relative path) → hash of its text."""
    out = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        if "plugin_project" in path.parts:
            continue
        out[path.relative_to(ROOT).as_posix()] = sha(path.read_text())
    return out


def measured_modules() -> list[str]:
    out = []
    for entry in MEASURED:
        path = SRC / entry
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        out += [module_name(p) for p in files if p.exists()]
    return out


# ----- the collecting run (in a subprocess) ---------------------------------------------------


class Collector:
    """pytest plugin: switch coverage's context to each test, clear caches, time it."""

    def __init__(self, cov) -> None:
        self.cov = cov
        self.tests: dict[str, dict] = {}

    def pytest_collection_finish(self, session):
        # measured from the first test on: imports at collection are nobody's (and tracing
        # them would slow the collection of the torch and transformers tests)
        self.cov.start()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        clear_caches()
        self.cov.switch_context(item.nodeid)
        self.tests[item.nodeid] = {
            "file": item.nodeid.split("::")[0],
            "seconds": 0.0,
            "setup": 0.0,
            "order": len(self.tests),
        }

    def pytest_runtest_logreport(self, report):
        entry = self.tests.setdefault(
            report.nodeid, {"file": report.nodeid.split("::")[0], "seconds": 0.0}
        )
        entry["seconds"] += report.duration
        if report.when == "setup":
            entry["setup"] = entry.get("setup", 0.0) + report.duration
        if report.failed:
            entry["outcome"] = "failed"
        elif report.skipped and report.when != "teardown":
            entry.setdefault("outcome", "skipped")
        elif report.when == "call":
            entry.setdefault("outcome", "passed")

    def pytest_runtest_logfinish(self, nodeid, location):
        self.cov.switch_context("")


def collect_main(out: Path, args: list[str]) -> int:
    """Run pytest on ``args`` under coverage; write lines → tests per module to ``out``."""
    import coverage

    modules = measured_modules()
    before = {m: (SRC / f"{m}.py").read_text() for m in modules}
    cov = coverage.Coverage(
        data_file=None,
        source=[str(SRC / m) for m in MEASURED],
        branch=False,
        config_file=False,
    )
    cov.set_option("run:disable_warnings", ["module-not-imported", "no-data-collected"])
    plugin = Collector(cov)
    start = time.perf_counter()
    code = pytest.main([*PYTEST_ARGS, *args], plugins=[plugin])
    seconds = time.perf_counter() - start
    cov.stop()
    data = cov.get_data()
    lines: dict[str, dict[str, list[str]]] = {}
    texts: dict[str, str] = {}
    for m in modules:
        path = SRC / f"{m}.py"
        if not path.exists() or path.read_text() != before[m]:
            continue  # edited during the run: its lines cannot be trusted
        texts[m] = before[m]
        by_line = data.contexts_by_lineno(str(path))
        lines[m] = {str(k): sorted(c for c in v if c) for k, v in by_line.items() if any(v)}
    out.write_text(
        json.dumps(
            {
                "exit": int(code),
                "seconds": seconds,
                "tests": plugin.tests,
                "lines": lines,
                "texts": texts,
            }
        )
    )
    return 0


# ----- the stored map ---------------------------------------------------------------------------


def load() -> dict:
    if MAP.exists():
        return json.loads(MAP.read_text())
    return {"version": 1, "tests": {}, "files": {}, "functions": {}}


def save(state: dict) -> None:
    STATE.mkdir(exist_ok=True)
    tmp = MAP.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, MAP)


def stale_files(state: dict, modules: list[str]) -> tuple[set[str], list[str]]:
    """The test files to collect again for ``modules``, and why (one line per reason)."""
    files = test_files()
    dirty = {f for f, h in files.items() if state["files"].get(f) != h}
    why = [f"{len(dirty)} new or changed test file(s)"] if dirty else []
    for m in modules:
        src = Source.read(SRC / f"{m}.py", m)
        known = state["functions"].get(m)
        if known is None:
            why.append(f"{m}: not in the map yet: every test file")
            return set(files), why
        changed = [f for f in src.functions if known.get(f.qualname, {}).get("hash") != f.hash]
        for f in changed:
            old = known.get(f.qualname)
            if old is None:
                # a new function: the tests of the module's changed functions reach it, or
                # (nothing else changed) those of any function of the module
                others = [g for g in changed if g.qualname in known] or [
                    g for g in src.functions if g.qualname in known
                ]
                reach = {t for g in others for t in known[g.qualname]["tests"]}
            else:
                reach = set(old["tests"])
            dirty |= {t.split("::")[0] for t in reach}
        if changed:
            why.append(f"{m}: {len(changed)} function(s) changed or new")
    return {f for f in dirty if f in files}, why


def collect(files: list[str], log) -> dict:
    """Run the collecting subprocess on ``files``; returns its output."""
    STATE.mkdir(exist_ok=True)
    out = STATE / "collect.json"
    hashes = test_files()  # before the run: a file edited during it is stale next time
    cmd = [sys.executable, "-m", "benchmarks.mutation_edges", "_collect", str(out), *files]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    with (STATE / "collect.log").open("w") as fh:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
    data = json.loads(out.read_text()) if proc.returncode == 0 and out.exists() else None
    # pytest's exit: 0 all passed, 1 some failed (kept: a failing test is not selected),
    # 5 none collected; anything else (an internal error, an interrupt) stores nothing
    if data is None or data["exit"] not in (0, 1, 5):
        raise SystemExit(f"the coverage run failed; see {STATE / 'collect.log'}")
    data["hashes"] = hashes
    out.unlink()  # tens of MB: every line's contexts; the map keeps them per function
    log(f"coverage run: {len(data['tests'])} tests in {data['seconds']:.0f} s")
    return data


def merge(state: dict, data: dict, files: list[str]) -> dict:
    """The map with the tests of ``files`` replaced by the collected ``data``."""
    gone = set(files)
    current = test_files()
    tests = {
        t: v for t, v in state["tests"].items() if v["file"] not in gone and v["file"] in current
    }
    tests.update(data["tests"])
    functions: dict[str, dict] = {}
    for m, entries in state["functions"].items():
        functions[m] = {}
        for q, e in entries.items():
            keep = [t for t in e["tests"] if t in tests and t.split("::")[0] not in gone]
            idx = {t: i for i, t in enumerate(keep)}
            sets = [[idx[e["tests"][i]] for i in s if e["tests"][i] in idx] for s in e["sets"]]
            functions[m][q] = {**e, "tests": keep, "sets": sets}
    for m, text in data["texts"].items():
        src = Source(m, SRC / f"{m}.py", text)
        by_line = data["lines"].get(m, {})
        entries = functions.setdefault(m, {})
        old = entries
        fresh: dict[str, dict] = {}
        owner = _owners(src)
        for f in src.functions:
            prev = old.get(f.qualname)
            if prev is not None and prev["hash"] != f.hash:
                prev = None  # changed: its old lines are void (its tests were re-collected)
            line_tests: dict[int, set[str]] = {}
            if prev is not None:
                for rel, s in prev["lines"].items():
                    line_tests[int(rel)] = {prev["tests"][i] for i in prev["sets"][s]}
            for line in range(f.body[0], f.body[1] + 1):
                if owner.get(line) is f:
                    got = by_line.get(str(line))
                    if got:
                        line_tests.setdefault(line - f.first, set()).update(got)
            fresh[f.qualname] = _pack(f, line_tests)
        functions[m] = fresh
    hashes = data.get("hashes") or test_files()
    file_hashes = {f: h for f, h in state["files"].items() if f in current and f not in gone}
    file_hashes.update({f: hashes[f] for f in files if f in hashes})
    return {"version": 1, "tests": tests, "files": file_hashes, "functions": functions}


def _owners(src: Source) -> dict:
    """line → the innermost function whose body holds it."""
    out = {}
    for f in sorted(src.functions, key=lambda f: f.first):  # outer before inner
        for line in range(f.body[0], f.body[1] + 1):
            out[line] = f
    return out


def _pack(f, line_tests: dict[int, set[str]]) -> dict:
    tests = sorted(set().union(*line_tests.values())) if line_tests else []
    idx = {t: i for i, t in enumerate(tests)}
    sets: list[list[int]] = []
    where: dict[tuple[int, ...], int] = {}
    lines = {}
    for rel, ts in sorted(line_tests.items()):
        key = tuple(sorted(idx[t] for t in ts))
        if key not in where:
            where[key] = len(sets)
            sets.append(list(key))
        lines[str(rel)] = where[key]
    return {"hash": f.hash, "tests": tests, "sets": sets, "lines": lines}


def tests_for(state: dict, module: str, qualname: str, first: int, lines, fn_hash: str):
    """(node ids that executed any of ``lines``, stale) for the function at ``first``."""
    e = state["functions"].get(module, {}).get(qualname)
    if e is None:
        return [], True
    if e["hash"] != fn_hash:
        return list(e["tests"]), True
    got: set[str] = set()
    for line in lines:
        s = e["lines"].get(str(line - first))
        if s is not None:
            got.update(e["tests"][i] for i in e["sets"][s])
    return sorted(got), False
