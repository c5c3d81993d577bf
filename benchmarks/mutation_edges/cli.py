"""Command line of the mutation-edges tool (see the package docstring)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from datetime import date
from pathlib import Path

from . import results as R
from . import schedule, testmap
from .general import general_mutants, sample
from .mutants import Mutant, comparison_mutants
from .source import ROOT, SRC, Source, dotted, module_name

DEFAULT = ["kernel", "arith", "certificates", "languages/counting", "restriction", "verdicts"]
# issue 41: the trusted modules that were never mutation-measured (sampling is fine there)
SAMPLED = [
    "certificates",
    "model/spec",
    "model/serialize",
    "model/positional",
    "model/validate",
    "model/kinds",
    "languages",
    "logic/syntax",
    "logic/numpred",
    "io",
    "restriction",
    "errors",
    "limits",
    "verdicts",
]


def expand(names: list[str]) -> list[str]:
    """Module names (arith/filter) from names, directories or paths; __init__ files kept
    only when they hold a function."""
    out: list[str] = []
    for name in names:
        path = Path(name)
        if not path.is_absolute():
            path = (ROOT / name) if (ROOT / name).exists() else SRC / name
        if path.is_dir():
            files = sorted(path.rglob("*.py"))
        elif path.suffix == ".py":
            files = [path]
        else:
            files = [path.with_suffix(".py")]
        for f in files:
            if not f.exists():
                raise SystemExit(f"no module {name!r} ({f} does not exist)")
            m = module_name(f)
            if m not in out:
                out.append(m)
    return out


def mutants_of(modules: list[str], size: int | None) -> tuple[dict[str, Source], list[Mutant]]:
    sources, out = {}, []
    for m in modules:
        src = Source.read(SRC / f"{m}.py", m)
        sources[m] = src
        out += sample(general_mutants(src), size) if size is not None else comparison_mutants(src)
    return sources, out


OUT = [sys.stdout]  # progress; a copy of fd 1 while pytest captures it


def _log(msg: str) -> None:
    print(msg, file=OUT[0], flush=True)


class Session:
    """One run: selects each mutant's tests, reuses cached results, feeds the fork server."""

    def __init__(self, args, modules: list[str], sources, mutants: list[Mutant]) -> None:
        self.args, self.modules, self.sources, self.mutants = args, modules, sources, mutants
        self.map = testmap.load()
        self.results = R.load()
        self.files = testmap.test_files()
        self.units = {(m, f.qualname): f for m, s in sources.items() for f in s.functions}
        self.selected: dict[str, list[str]] = {}
        self.keys: dict[str, str] = {}
        self.stale: set[str] = set()
        self.seconds = {t: v["seconds"] for t, v in self.map["tests"].items()}
        self.own, self.fixture = schedule.costs(
            (t, v.get("order", 0), v["seconds"], v.get("setup", 0.0))
            for t, v in self.map["tests"].items()
        )
        self.failing: set[str] = set()
        self.kills: dict[tuple[str, str], Counter] = defaultdict(Counter)
        self.overheads: list[float] = []
        self.ran = 0

    def select(self) -> list[Mutant]:
        """Each mutant's tests (those that executed its lines); the mutants to run."""
        pending = []
        for m in self.mutants:
            fn = self.units[(m.module, m.qualname)]
            unit = self.units[(m.module, m.unit)]
            src = self.sources[m.module]
            tests, stale = testmap.tests_for(
                self.map, m.module, m.qualname, fn.first, m.lines, fn.hash
            )
            tests = [t for t in tests if self.map["tests"].get(t, {}).get("outcome") != "failed"]
            if stale:
                self.stale.add(f"{m.module}:{m.qualname}")
            self.selected[m.id] = tests
            key = R.mutant_key(m, unit.text, src.offset(unit.first, 0))
            self.keys[m.id] = key
            entry = self.results["mutants"].get(key)
            if entry and entry.get("status") in R.KILLED and entry.get("test"):
                self.kills[(m.module, m.qualname)][entry["test"]] += 1
            sig = R.tests_signature(tests, self.files)
            if not tests:
                self.results["mutants"][key] = {
                    "status": "survived",
                    "tests_selected": 0,
                    "tests_sig": sig,
                    "id": m.id,
                }
            elif self.args.rerun or not R.reusable(entry, tests, sig, self.files):
                pending.append(m)
        return pending

    def order(self, m: Mutant) -> list[str]:
        tests = [t for t in self.selected[m.id] if t not in self.failing]
        return schedule.order_tests(
            tests, self.kills[(m.module, m.qualname)], self.own, self.fixture
        )

    def job_for(self, m: Mutant):
        from .runner import Job

        tests = self.order(m)
        files = {schedule.file_of(t) for t in tests}
        expected = sum(self.own.get(t, 1.0) for t in tests) + sum(
            self.fixture.get(f, 0.0) for f in files
        )
        unit = self.units[(m.module, m.unit)]
        return Job(
            key=self.keys[m.id],
            tests=tests,
            timeout=max(self.args.timeout_min, self.args.timeout_factor * expected + 10),
            module=m.module,
            import_name=dotted(m.module),
            path=str(self.sources[m.module].path),
            unit=m.unit,
            first=unit.first,
            text=m.apply(self.sources[m.module].text),
            result={"mutant": m},
        )

    def record(self, job) -> None:
        m: Mutant = job.result.pop("mutant")
        res = job.result
        if res["status"] == "stale":
            self.results["mutants"][job.key] = {"id": m.id, "status": "stale", "why": res["why"]}
            _log(f"{m.id}: not run: {res['why']}")
            return
        self.ran += 1
        tests = job.tests
        entry = {
            "id": m.id,
            "status": res["status"],
            "test": res.get("test"),
            "why": res.get("why", ""),
            "wall": round(res.get("wall", 0.0), 3),
            "tests_run": res.get("tests_run", 0),
            "tests_selected": len(tests),
            "missing": res.get("missing", []),
            "tests_sig": R.tests_signature(self.selected[m.id], self.files),
            "date": date.today().isoformat(),
        }
        if entry["test"]:
            entry["test_file_hash"] = self.files.get(entry["test"].split("::")[0])
            if entry["status"] in R.KILLED:
                self.kills[(m.module, m.qualname)][entry["test"]] += 1
        self.results["mutants"][job.key] = entry
        if res.get("setup") is not None:
            self.overheads.append(res["wall"] - res["test_seconds"])
        mark = {"killed": "killed", "survived": "SURVIVED"}.get(entry["status"], entry["status"])
        _log(
            f"[{self.ran}] {m.id}: {mark}"
            + (f" by {entry['test']}" if entry["status"] == "killed" else "")
            + f" ({entry['tests_run']}/{len(tests)} tests, {entry['wall']:.1f} s)"
        )
        if self.ran % 20 == 0:
            R.save(self.results)


def remap(args, modules: list[str]) -> None:
    """Collect again what is stale in the test map for ``modules`` (testmap docstring)."""
    state = testmap.load()
    files, why = testmap.stale_files(state, modules)
    if args.full_map:
        files, why = set(testmap.test_files()), ["--full-map"]
    if args.recollect_failed:
        failed = {v["file"] for v in state["tests"].values() if v.get("outcome") == "failed"}
        files |= failed & set(testmap.test_files())
        why.append(f"{len(failed)} file(s) with tests that failed when collected")
    if not files:
        _log("the test map is up to date")
        return
    _log(f"collecting the test map again ({len(files)} test files): " + "; ".join(why))
    data = testmap.collect(sorted(files), _log)
    testmap.save(testmap.merge(state, data, sorted(files)))
    failing = sum(1 for v in data["tests"].values() if v.get("outcome") == "failed")
    if failing:
        _log(f"{failing} test(s) failed in the coverage run: not selected (--recollect-failed)")


def _baseline_jobs(session: Session, tests: list[str], workers: int):
    from .runner import Job

    by_file: dict[str, list[str]] = defaultdict(list)
    for t in sorted(tests):
        by_file[t.split("::")[0]].append(t)
    chunks: list[list[str]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for _file, ts in sorted(
        by_file.items(), key=lambda p: -sum(session.seconds.get(t, 1) for t in p[1])
    ):
        i = loads.index(min(loads))
        chunks[i] += ts
        loads[i] += sum(session.seconds.get(t, 1.0) for t in ts)
    return [
        Job(key=f"baseline-{i}", tests=c, timeout=10 * loads[i] + 120, stop_at_failure=False)
        for i, c in enumerate(chunks)
        if c
    ]


def run(args) -> int:
    import pytest

    from .runner import ForkServer

    os.chdir(ROOT)  # node ids and test paths are relative to the repository root
    modules = expand(args.modules or (SAMPLED if args.sample else DEFAULT))
    sources, mutants = mutants_of(modules, args.sample)
    _log(f"{len(modules)} module(s), {len(mutants)} mutants")
    start = time.time()
    if not args.no_remap:
        remap(args, modules)
    map_seconds = time.time() - start
    session = Session(args, modules, sources, mutants)
    pending = session.select()
    if session.stale:
        _log(f"warning: the map is stale for {len(session.stale)} function(s) (--no-remap?)")
    _log(f"{len(pending)} mutants to run, {len(mutants) - len(pending)} reused or without tests")
    if args.dry_run:
        return 0
    union = sorted({t for m in pending for t in session.selected[m.id]})
    OUT[0] = os.fdopen(os.dup(1), "w", buffering=1)
    base = [] if args.no_baseline else _baseline_jobs(session, union, args.workers)
    queue = list(base)

    measured: list[tuple[str, int, float, float]] = []

    def done_baseline(job) -> None:
        per_test = job.result.get("per_test", {})
        order = {t: i for i, t in enumerate(job.tests)}
        measured.extend((t, order[t], s, setup) for t, (s, setup, _) in per_test.items())
        session.own, session.fixture = schedule.costs(measured)
        for t, (_s, _setup, why) in per_test.items():
            if why:
                session.failing.add(t)
                _log(f"baseline: {t} fails on the unmutated code ({why}): not used")
        for t in job.result.get("missing", []):
            session.failing.add(t)
            _log(f"baseline: {t} is no longer collected: not used")
        if job.result.get("status") not in ("survived",):
            _log(f"baseline chunk {job.key}: {job.result.get('status')} {job.result.get('why')}")

    todo = list(pending)

    def next_mutant():
        return session.job_for(todo.pop(0)) if todo else None

    server = ForkServer(
        phases=[
            (lambda: queue.pop(0) if queue else None, done_baseline),
            (next_mutant, session.record),
        ],
        workers=args.workers,
        modules=[dotted(m) for m in modules],
        units={
            (m.module, m.unit): (
                str(sources[m.module].path),
                sources[m.module].text,
                session.units[(m.module, m.unit)].first,
            )
            for m in pending
        },
    )
    files = sorted({t.split("::")[0] for t in union})
    if files:
        pytest.main([*testmap.PYTEST_ARGS, *files], plugins=[server])
    wall = time.time() - start
    run_info = {
        "date": date.today().isoformat(),
        "machine": R.machine(),
        "workers": args.workers,
        "modules": modules,
        "mode": f"sample {args.sample}" if args.sample else "comparisons",
        "wall": round(wall, 1),
        "map_seconds": round(map_seconds, 1),
        "mutants": len(mutants),
        "ran": session.ran,
        "overhead_ms": 1000 * statistics.median(session.overheads) if session.overheads else 0.0,
        "baseline_failing": sorted(session.failing),
    }
    session.results["runs"].append(run_info)
    R.save(session.results)
    _log(json.dumps({k: v for k, v in run_info.items() if k != "baseline_failing"}))
    report(args, modules, sources, mutants, session)
    return 0


def report(args, modules, sources, mutants, session: Session | None = None) -> int:
    if session is None:
        session = Session(args, modules, sources, mutants)
        session.select()
    entries = {m.id: session.results["mutants"].get(session.keys[m.id]) for m in mutants}
    table = R.rows(mutants, entries, R.equivalents())
    runs = [r for r in session.results["runs"] if set(r["modules"]) & set(modules)]
    title = (
        f"Sampled general mutants ({args.sample} per module)"
        if args.sample
        else "Exhaustive neighbour mutants of the kernel's comparisons"
    )
    text = R.markdown(table, runs[-1] if runs else None, title=title)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"runs": runs, "mutants": table}, indent=1, default=str)
        )
    c = Counter(r["result"] for r in table)
    _log(", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    for r in table:
        if r["result"] in ("survived", "no tests", "not run", "error", "stale"):
            _log(f"  {r['result']}: {r['id']}  |  {r['original']}  →  {r['mutated']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_collect"]:
        return testmap.collect_main(Path(argv[1]), argv[2:])
    p = argparse.ArgumentParser(prog="python -m benchmarks.mutation_edges", description=__doc__)
    p.add_argument("command", choices=["run", "list", "report", "map"])
    p.add_argument("modules", nargs="*", help="arith/filter, kernel/hard, src/attncert/io.py …")
    p.add_argument("--sample", type=int, default=None, help="N general mutants per module")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout-factor", type=float, default=4.0)
    p.add_argument("--timeout-min", type=float, default=30.0)
    p.add_argument("--rerun", action="store_true", help="ignore cached results")
    p.add_argument("--no-remap", action="store_true", help="use the test map as it is")
    p.add_argument("--full-map", action="store_true", help="collect the whole test map again")
    p.add_argument(
        "--recollect-failed",
        action="store_true",
        help="collect again the test files whose tests failed in the coverage run",
    )
    p.add_argument("--no-baseline", action="store_true")
    p.add_argument("--dry-run", action="store_true", help="select, do not run")
    p.add_argument("--markdown", help="write the Markdown section to this file")
    p.add_argument("--json", help="write the results of these modules to this JSON file")
    args = p.parse_args(argv)
    if args.command == "run":
        return run(args)
    modules = expand(args.modules or (SAMPLED if args.sample else DEFAULT))
    sources, mutants = mutants_of(modules, args.sample)
    if args.command == "list":
        for m in mutants:
            print(f"{m.id}\t{m.original}\t→\t{m.mutated}")
        print(
            f"{len(mutants)} mutants of {len({m.site for m in mutants})} sites in "
            f"{len(modules)} modules",
            file=sys.stderr,
        )
        return 0
    if args.command == "map":
        remap(args, modules)
        return 0
    return report(args, modules, sources, mutants)
