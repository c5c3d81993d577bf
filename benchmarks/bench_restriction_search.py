"""The soft restriction search (issue 22): the margin-guided regula falsi beside plain
bisection (the method before issue 22), measured in one run on the same models.

    python benchmarks/bench_restriction_search.py [--n 1024] [--time-limit 600] [--json out.json]

Each strategy runs to convergence (a generous time limit), so the comparison does not
depend on the machine's load: the free positions reached, the affine propagations it
took, and the CPU seconds of the search (``best_restriction`` with the affine method, the
base probes included); wall seconds for reference.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime

from attncert.model import zoo_model
from attncert.soft.certified.restriction import best_restriction

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
            res = best_restriction(
                model, args.n, time_limit=args.time_limit, method="affine", strategy=strategy
            )
            row = {
                "model": name,
                "n": args.n,
                "strategy": strategy,
                "free": res.free if res else 0,
                "propagations": res.certifications if res else None,
                "wall_s": round(time.perf_counter() - t, 1),
                "cpu_s": round(time.process_time() - c, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="minutes"),
        "machine": platform.processor() or platform.machine(),
        "load": os.getloadavg(),
        "python": sys.version.split()[0],
    }
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
