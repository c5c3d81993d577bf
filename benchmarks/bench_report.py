"""Benchmark: the report of ``trained_hard_first_last`` at n = 16, 64, 256, 1024 on a Dask
LocalCluster of 1 and of 2 workers (issue 33).

    python benchmarks/bench_report.py                       # n = 16,64,256,1024, 60 s per cell
    python benchmarks/bench_report.py --ns 16,64 --cell-time-limit 20    # a smoke run
    python benchmarks/bench_report.py --json out.json

Each run writes a fresh report directory (nothing resumed), so both runs execute every
cell the same way — a child process per cell on a worker, killed at the cell time limit
plus start-up — and the ratio is the speed-up of the scheduling alone; the wall time
includes starting and stopping the cluster and rendering the page. Printed: a table
with each run's wall time, the sum of its cells' times, its concurrency (that sum over
the wall time) and the ratio of the two wall times; then the slowest cells and any cell
that timed out (a cell that hits the limit is reported, not hidden).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import attncert


def _load() -> str:
    try:
        return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "load average n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default="16,64,256,1024")
    ap.add_argument("--cell-time-limit", type=float, default=60.0)
    ap.add_argument("--model", default="zoo:trained_hard_first_last")
    ap.add_argument("--json")
    args = ap.parse_args()
    ns = [int(x) for x in args.ns.split(",")]
    info = (
        f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, python "
        f"{platform.python_version()}, "
        f"{datetime.datetime.now(datetime.UTC).isoformat(timespec='minutes')}"
    )
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            load0 = _load()
            t0 = time.perf_counter()
            rep = attncert.report(
                args.model,
                ns=ns,
                out=Path(tmp) / f"w{workers}",
                workers=workers,
                cell_time_limit=args.cell_time_limit,
            )
            wall = time.perf_counter() - t0
            cells = {k: dict(v) for k, v in rep.cells.items()}
            busy = sum(float(c.get("seconds") or 0) for c in cells.values())
            runs[workers] = {
                "wall": wall,
                "cells_seconds": busy,
                "concurrency": busy / wall,
                "load_before": load0,
                "load_after": _load(),
                "verdicts": {s.key: s.verdict for s in rep.sections},
                "cells": {
                    k: {
                        "status": c["status"],
                        "verdict": c.get("verdict"),
                        "seconds": c.get("seconds"),
                    }
                    for k, c in cells.items()
                },
            }
    one, two = runs[1], runs[2]
    print(f"# report of {args.model}, n = {ns}, cell time limit {args.cell_time_limit:g} s")
    print(f"# {info}")
    print()
    print("| workers | wall s | sum of cell s | concurrency | load before → after |")
    print("|---:|---:|---:|---:|---|")
    for w, r in runs.items():
        print(
            f"| {w} | {r['wall']:.1f} | {r['cells_seconds']:.1f} | {r['concurrency']:.2f} | "
            f"{r['load_before']} → {r['load_after']} |"
        )
    print(f"\nratio (1 worker / 2 workers): {one['wall'] / two['wall']:.2f}×")
    slow = sorted(two["cells"].items(), key=lambda kv: -(kv[1]["seconds"] or 0))[:6]
    print("slowest cells (2 workers): " + ", ".join(f"{k} {v['seconds']:.1f} s" for k, v in slow))
    for w, r in runs.items():
        late = [k for k, c in r["cells"].items() if c["status"] not in ("ok", "not-applicable")]
        if late:
            print(f"{w} worker(s): not finished within the limit: {', '.join(sorted(late))}")
    print("section verdicts: " + ", ".join(f"{k} {v}" for k, v in two["verdicts"].items()))
    same = one["verdicts"] == two["verdicts"]
    print(f"same verdicts with 1 and 2 workers: {same}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"machine": info, "ns": ns, "runs": runs}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()
