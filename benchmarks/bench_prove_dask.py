"""Benchmark: the largest N with every length 1..N proved within 60 s, on 1 and 2 Dask workers.

    python benchmarks/bench_prove_dask.py                    # since, temperature regime, 60 s
    python benchmarks/bench_prove_dask.py --budget 15        # a smoke run
    python benchmarks/bench_prove_dask.py --formula parity --json out.json

For each worker count k ∈ {1, 2} an embedded LocalCluster of k worker processes is
started (not timed), the formula is compiled, and lengths n = 1, 2, 3, … are submitted
in order as independent tasks (``attncert.prove.cluster.iter_lengths``: at most k in
flight, the decomposed z3 prover per length, exactly what ``attncert prove --dask``
runs). The clock starts at the first submission; N is the largest n such that every
length 1..n was proved before the budget ran out. Unfinished lengths are cancelled. A
length that is not proved stops the run (it would be a finding, not a timing).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import time

from attncert.compile import compile_formula
from attncert.logic import LIBRARY
from attncert.parallel import dask_client
from attncert.prove.cluster import iter_lengths, payload
from attncert.prove.coordinate import designated_coordinate


def largest_n(name: str, regime: str, workers: int, budget: float) -> dict:
    nf = LIBRARY[name]
    model = compile_formula(nf.formula, regime=regime, alphabet=nf.alphabet)
    coord = designated_coordinate(model)
    opts = {
        "last_only": False,
        "timeout_ms": 60_000,
        "smt2_dir": None,
        "coord": coord,
        "cross_check": 0,
        "fallback_strings": 0,
    }
    data = payload(model, nf.formula, coord, None, opts)
    with dask_client(None, workers) as (client, where):
        client.run(lambda: __import__("attncert.prove.cluster"))  # imports before the clock
        seconds: dict[int, float] = {}  # proved length -> its own time on a worker
        t0 = time.perf_counter()
        for r in iter_lengths(client, data, itertools.count(1), in_flight=workers):
            if time.perf_counter() - t0 > budget:
                break
            if r.verdict != "proved":
                raise SystemExit(f"n = {r.n}: {r.verdict} ({r.reason})")
            seconds[r.n] = r.seconds
    n_max = 0
    while n_max + 1 in seconds:
        n_max += 1
    return {
        "formula": name,
        "regime": regime,
        "workers": workers,
        "where": where,
        "budget": budget,
        "largest_N": n_max,
        "lengths_proved": len(seconds),
        "seconds_of_length_N": round(seconds.get(n_max, 0.0), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formula", default="since")
    ap.add_argument("--regime", default="temperature")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    info = (
        f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, python "
        f"{platform.python_version()}, {datetime.datetime.now().isoformat(timespec='minutes')}"
    )
    rows = []
    for k in (1, 2):
        load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
        row = largest_n(args.formula, args.regime, k, args.budget)
        row["load_before"] = load
        rows.append(row)
    print(info)
    head = f"largest N in {args.budget:g} s"
    print(f"{'formula':<10} {'regime':<12} {'workers':>7} {head:>18} {'lengths done':>12}  load")
    for r in rows:
        print(
            f"{r['formula']:<10} {r['regime']:<12} {r['workers']:>7} {r['largest_N']:>18} "
            f"{r['lengths_proved']:>12}  {r['load_before']} (n = N took {r['seconds_of_length_N']} s)"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": info, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
