"""The default test run against a baseline revision, in one run (issue 34 item 4).

Each revision is checked out in a scratch git worktree and its tests run with *this*
virtual environment's interpreter, ``PYTHONPATH`` pointing at that worktree's ``src``;
the runs alternate (baseline, head, baseline, head, …) so that load on a shared machine
hits both alike. Reported per revision: the wall time and the CPU time of pytest and its
workers (``resource.getrusage(RUSAGE_CHILDREN)``), median over the repeats, and the
head/baseline ratios.

    python benchmarks/bench_test_suite.py --baseline 8413ff8                 # the whole run
    python benchmarks/bench_test_suite.py --baseline 8413ff8 -- tests/test_compile_dyck.py -n0

Arguments after ``--`` go to pytest (default: none, i.e. the default run with its addopts).
The worktrees are left under ``.bench-suite/`` (git-ignored) for re-runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".bench-suite"


def worktree(rev: str) -> Path:
    path = WORK / rev
    if not path.exists():
        WORK.mkdir(exist_ok=True)
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), rev],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    return path


def run(tree: Path, pytest_args: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of pytest and its workers, pytest's last line)."""
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-200:]
    return wall, cpu, last


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        k = argv.index("--")
        argv, extra = argv[:k], argv[k + 1 :]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="git revision to compare against")
    ap.add_argument("--head", default="HEAD", help="git revision measured (default HEAD)")
    ap.add_argument("--repeat", type=int, default=1, help="alternating runs per revision")
    args = ap.parse_args(argv)
    revs = {}
    for label, rev in (("baseline", args.baseline), ("head", args.head)):
        sha = subprocess.run(
            ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        revs[label] = (sha, worktree(sha))
    results: dict[str, list[tuple[float, float]]] = {"baseline": [], "head": []}
    for i in range(args.repeat):
        for label, (sha, tree) in revs.items():
            wall, cpu, last = run(tree, extra)
            results[label].append((wall, cpu))
            print(
                f"[{i + 1}/{args.repeat}] {label} {sha}: {wall:.1f} s wall, {cpu:.1f} s CPU — {last}"
            )
    med = {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in results.items()
    }
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"\n{stamp}, {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}; pytest args: {' '.join(extra) or '(default run)'}"
    )
    for label, (sha, _) in revs.items():
        print(f"  {label:8} {sha}: {med[label][0]:7.1f} s wall  {med[label][1]:7.1f} s CPU")
    (bw, bc), (hw, hc) = med["baseline"], med["head"]
    print(f"  head/baseline: wall {hw / bw:.2f}, CPU {hc / bc:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
