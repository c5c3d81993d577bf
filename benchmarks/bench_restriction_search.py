"""The soft restriction search (issue 22): the margin-guided regula falsi beside plain
bisection (the method before issue 22), measured in one run on the same models.

    python benchmarks/bench_restriction_search.py [--n 1024] [--time-limit 600] [--json out.json]

Each strategy runs to convergence (a generous time limit), so the comparison does not
depend on the machine's load: the free positions reached, the affine propagations and CPU
seconds until that count was first certified (the probes included; the search goes on
trying to free more after it), and in all; wall seconds for reference.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from attncert.io import write_json
from attncert.model import zoo_model
from attncert.soft.certified.restriction import best_restriction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_certify import machine

MODELS = ("trained_parity", "trained_first_last", "trained_majority", "trained_dyck1")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name in args.models:
        model = zoo_model(name)
        for strategy in ("midpoint", "falsi"):
            t, c = time.perf_counter(), time.process_time()
            trace: list[tuple[int, int, float]] = []  # (best free, propagations, CPU s)

            def seen(free, calls, c=c, trace=trace):
                trace.append((free, calls, time.process_time() - c))

            res = best_restriction(
                model,
                args.n,
                time_limit=args.time_limit,
                method="affine",
                strategy=strategy,
                progress=seen,
            )
            free = res.free if res else 0
            # when the final count was first certified (the report lags one propagation)
            first = next(((k, s) for f, k, s in trace if f >= free), (None, None))
            row = {
                "model": name,
                "n": args.n,
                "strategy": strategy,
                "free": free,
                "propagations_to_best": first[0],
                "cpu_s_to_best": None if first[1] is None else round(first[1], 1),
                "propagations": trace[-1][1] if trace else 0,
                "wall_s": round(time.perf_counter() - t, 1),
                "cpu_s": round(time.process_time() - c, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:  # the machine record every benchmark writes (CPU, load, versions)
        write_json(args.json, {"meta": machine(), "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
