"""Benchmark: bounded agreement proofs vs exhaustive interval enumeration.

    python benchmarks/bench_prove.py                 # the issue-7 targets, jobs = 2
    python benchmarks/bench_prove.py --quick         # N / 4, 15 s enumeration budget
    python benchmarks/bench_prove.py --json out.json

For each target (compiled formula, regime, N) the decomposed prover proves every length
1..N (``prove_agreement``, ``--jobs`` processes); the table shows the total wall time,
the time of the largest length, the number of z3 queries and the smallest proved gap at
n = N. In the same run, exhaustive interval enumeration of all |Σ|ⁿ strings
(``enumerate_agreement``, one process) is run for n = 1, 2, … until its cumulative time
exceeds the budget (default 60 s); the table shows the largest N it completed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time

from attncert.compile import compile_formula
from attncert.logic import LIBRARY
from attncert.prove import enumerate_agreement, prove_agreement

TARGETS = [
    ("previous-symbol", "temperature", 100),
    ("since", "temperature", 100),
    ("parity", "temperature", 64),
    ("since", "unbounded", 100),
    ("parity", "unbounded", 64),
]


def bench(name: str, regime: str, big_n: int, jobs: int, budget: float) -> dict:
    nf = LIBRARY[name]
    model = compile_formula(nf.formula, regime=regime, alphabet=nf.alphabet)
    t0 = time.perf_counter()
    res = prove_agreement(nf.formula, model, max_len=big_n, jobs=jobs, fallback_strings=0)
    total = time.perf_counter() - t0
    last = res.by_n(big_n)
    gaps = [h.min_gap_float for h in last.heads if h.min_gap_float is not None]
    enum_n, enum_t = 0, 0.0
    for n in range(1, big_n + 1):
        t1 = time.perf_counter()
        e = enumerate_agreement(model, nf.formula, n)
        enum_t += time.perf_counter() - t1
        if e.verdict != "proved" or enum_t > budget:
            break
        enum_n = n
    return {
        "formula": name,
        "text": str(nf.formula),
        "regime": regime,
        "alphabet": nf.alphabet,
        "N": big_n,
        "verdict": res.verdict,
        "methods": sorted({r.method for r in res.lengths}),
        "prove_seconds": round(total, 2),
        "largest_n_seconds": round(last.seconds, 3),
        "queries": sum(len(r.queries) for r in res.lengths),
        "min_gap_at_N": min(gaps) if gaps else None,
        "enumeration_max_N": enum_n,
        "enumeration_seconds": round(enum_t, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--budget", type=float, default=60.0, help="enumeration budget (s)")
    ap.add_argument("--json")
    args = ap.parse_args()
    budget = 15.0 if args.quick else args.budget
    rows = []
    for name, regime, big_n in TARGETS:
        big_n = max(8, big_n // 4) if args.quick else big_n
        rows.append(bench(name, regime, big_n, args.jobs, budget))
    info = (
        f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, "
        f"python {platform.python_version()}, jobs={args.jobs}, "
        f"{datetime.datetime.now().isoformat(timespec='minutes')}"
    )
    print(info)
    hdr = (
        f"{'formula':<16} {'regime':<12} {'N':>4} {'verdict':<8} {'prove s':>8} "
        f"{'n=N s':>7} {'queries':>8} {'gap@N':>9} {'enum N':>7} {'enum s':>7}"
    )
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        gap = f"{r['min_gap_at_N']:.3g}" if r["min_gap_at_N"] is not None else "-"
        print(
            f"{r['formula']:<16} {r['regime']:<12} {r['N']:>4} {r['verdict']:<8} "
            f"{r['prove_seconds']:>8.2f} {r['largest_n_seconds']:>7.2f} {r['queries']:>8} "
            f"{gap:>9} {r['enumeration_max_N']:>7} {r['enumeration_seconds']:>7.1f}"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": info, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
