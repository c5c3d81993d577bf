"""Benchmark: a 24-cell sweep on a 2-worker Dask LocalCluster vs the same sweep serially.

    python benchmarks/bench_sweep.py                  # 4 models × n ∈ {128, 256, 512} × 2 seeds
    python benchmarks/bench_sweep.py --quick          # n ∈ {32, 64, 128}: a smoke run
    python benchmarks/bench_sweep.py --json out.json

The grid (``certify``, PARITY, MaxSAT, seeded random leftmost-hard models
``random:L1-H2-d8``, ``random:L2-H1-d16``, ``random:L2-H2-d16``, ``random:L3-H1-d8``) is run
twice in one process: serially (``serial=True``: one cell after another) and on an
embedded LocalCluster of 2 worker processes (``workers=2``), each into a fresh results
file. Both runs execute every cell the same way (a child process per cell), so the
ratio is the speed-up of the scheduling alone; the Dask time includes starting and
stopping the cluster. The two runs must agree cell by cell (the certify search is
deterministic: the same free positions and output dependency set), which is checked.
Target (issue 17): speed-up ≥ 1.7×. Also printed: the *concurrency* of the Dask run (sum
of its cells' wall times over its own wall time), which, unlike the ratio of two runs
made one after the other, does not move with the machine's load between them.
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

from attncert.sweep import grid_cells, run_sweep

MODELS = ["random:L1-H2-d8", "random:L2-H1-d16", "random:L2-H2-d16", "random:L3-H1-d8"]


def _load() -> str:
    try:
        return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "load average n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    ns = [32, 64, 128] if args.quick else [128, 256, 512]
    cells = grid_cells("certify", MODELS, ns, seeds=[0, 1], params={"time_limit": 120.0})
    assert len(cells) == 24
    info = (
        f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, python "
        f"{platform.python_version()}, {datetime.datetime.now().isoformat(timespec='minutes')}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        load0 = _load()
        t0 = time.perf_counter()
        serial = run_sweep(cells, Path(tmp) / "serial.jsonl", serial=True)
        t_serial = time.perf_counter() - t0
        load1 = _load()
        t0 = time.perf_counter()
        dask = run_sweep(cells, Path(tmp) / "dask.jsonl", workers=args.workers)
        t_dask = time.perf_counter() - t0
        load2 = _load()
    for run in (serial, dask):
        assert run.complete, run.summary()
    same = all(
        (a.result["free"], a.result["output_dependency"])
        == (b.result["free"], b.result["output_dependency"])
        for a, b in zip(serial.records, dask.records, strict=True)
    )
    cell_sum = sum(r.seconds for r in serial.records)
    dask_cell_sum = sum(r.seconds for r in dask.records)
    speedup = t_serial / t_dask
    # cells' own times over the wall time: how many cells ran at once on average (≤ workers);
    # unlike the ratio of two runs, it does not move with the machine's load between them
    concurrency = dask_cell_sum / t_dask
    print(info)
    print(f"grid: certify × {MODELS} × n={ns} × seeds [0, 1] = {len(cells)} cells")
    print(f"serial:              {t_serial:7.1f} s  (cells {cell_sum:.1f} s)   [{load0}]")
    print(
        f"LocalCluster({args.workers}):     {t_dask:7.1f} s  (cells {dask_cell_sum:.1f} s)   [{load1}]"
    )
    print(f"speed-up:            {speedup:7.2f}×  (target ≥ 1.7×)   [{load2} after]")
    print(
        f"concurrency on Dask: {concurrency:7.2f}   (cell seconds / wall seconds, ≤ {args.workers})"
    )
    print(f"same certificates in both runs: {same}")
    print()
    print(dask.table())
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "machine": info,
                    "cells": len(cells),
                    "serial_seconds": t_serial,
                    "dask_seconds": t_dask,
                    "workers": args.workers,
                    "speedup": speedup,
                    "dask_cell_seconds": dask_cell_sum,
                    "concurrency": concurrency,
                    "same_results": same,
                    "load": [load0, load1, load2],
                    "records": [r.to_dict() for r in dask.records],
                },
                indent=1,
            )
        )
    if not same:
        raise SystemExit("the serial and the Dask run disagree")


if __name__ == "__main__":
    main()
