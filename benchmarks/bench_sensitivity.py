"""Benchmark: sensitivity search time vs n, and exhaustive vs search at small n.

    python benchmarks/bench_sensitivity.py            # full run (n up to 4096)
    python benchmarks/bench_sensitivity.py --quick    # n up to 512
    python benchmarks/bench_sensitivity.py --json out.json

For each model: (1) at small n, the exhaustive maximum, the search's best, whether
they are equal, and both times; (2) for n = 16 … 4096, the search's best value,
its number of model evaluations and its wall time (fixed restarts/candidates,
seed 0).  Prints a table; ``--json`` also writes the numbers.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time

from attncert.model import random_model, zoo_model
from attncert.soft.sensitivity import exhaustive_sensitivity, fit_exponent, search_sensitivity


def _models():
    return [
        zoo_model("soft_parity"),
        zoo_model("soft_parity_lm"),
        random_model(1, 1, 8, kind="softmax", seed=0),
        random_model(2, 2, 8, kind="softmax", seed=0),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    ns = [16, 64, 256, 1024] if args.quick else [16, 64, 256, 1024, 4096]
    small = [8, 10, 12]
    out = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor()} cpus={os.cpu_count()}",
        "python": platform.python_version(),
        "search": {"restarts": 2, "candidates": 16, "max_steps": 20, "seed": 0},
        "models": [],
    }
    for model in _models():
        rec = {"model": model.name, "small": [], "large": []}
        print(f"\n== {model.name}")
        print(f"{'n':>5} {'exhaustive':>12} {'t_ex[s]':>8} {'search':>12} {'t_se[s]':>8} equal")
        for n in small:
            ex = exhaustive_sensitivity(model, n)
            se = search_sensitivity(model, n, seed=0)
            eq = abs(se.value - ex.value) <= 1e-12 * max(1.0, ex.value)
            rec["small"].append(
                {
                    "n": n,
                    "exhaustive": ex.value,
                    "t_exhaustive": ex.seconds,
                    "search": se.value,
                    "t_search": se.seconds,
                    "equal": eq,
                }
            )
            print(
                f"{n:>5} {ex.value:>12.5e} {ex.seconds:>8.3f} {se.value:>12.5e} {se.seconds:>8.3f} {eq}"
            )
        print(f"{'n':>5} {'search max':>12} {'evals':>7} {'t[s]':>8}")
        for n in ns:
            t0 = time.perf_counter()
            se = search_sensitivity(model, n, seed=0, restarts=2, candidates=16, max_steps=20)
            dt = time.perf_counter() - t0
            rec["large"].append(
                {"n": n, "value": se.value, "evaluations": se.evaluations, "seconds": dt}
            )
            print(f"{n:>5} {se.value:>12.5e} {se.evaluations:>7} {dt:>8.2f}")
        rec["exponent"] = fit_exponent(
            [r["n"] for r in rec["large"]], [r["value"] for r in rec["large"]]
        )
        print(f"fitted exponent {rec['exponent']:.3f}")
        out["models"].append(rec)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
