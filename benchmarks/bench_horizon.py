"""Benchmark: the length horizon's time against the number of lengths it covers, and the
chunked run on 1 and 2 Dask workers side by side (issue 40).

    python benchmarks/bench_horizon.py                      # the table of docs/benchmarks.md
    python benchmarks/bench_horizon.py --json out.json
    python benchmarks/bench_horizon.py --no-dask            # the one-piece search only

Models (:mod:`attncert.model.testbeds`): (a) ``first_symbol_model(20.0)``, right up to
n* − 1 = 485,165,196 (so [1, 10³] and [1, 10⁶] are all proved and [1, 10⁹] crosses n*);
(b) ``first_symbol_model(2.0, temperature="log")``, right at every length (also [1, ∞)).

For each (model, [1, B]): the one-piece search in this process
(:func:`attncert.soft.horizon.verify_lengths`; search and kernel check timed apart, the
number of tree nodes and of pattern bounds computed), with its ratios to B = 10³ of the
same model beside the ratio of the lengths; then the chunked run
(:func:`attncert.soft.horizon.parallel.verify_lengths_parallel`) on an embedded
LocalCluster of 1 and of 2 worker processes, each cluster started once before its rows
(its start-up and the workers' imports are not in the rows, and are printed apart). The
chunked certificates of 1 and 2 workers must be byte-identical (the run stops otherwise).
Every certificate is checked by the kernel; a row whose check fails stops the run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import time

from attncert.model.testbeds import first_symbol_model
from attncert.soft.horizon import verify_lengths
from attncert.soft.horizon.parallel import verify_lengths_parallel

CASES = (
    ("a", "first_symbol(Δ=20)", lambda: first_symbol_model(20.0), (10**3, 10**6, 10**9)),
    (
        "b",
        "first_symbol(Δ=2, β=log N)",
        lambda: first_symbol_model(2.0, temperature="log"),
        (10**3, 10**6, 10**9, None),
    ),
)
CHUNK_LIMIT = 300.0  # seconds per chunk: far above what any chunk needs (none is cut)


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model = next(
            (ln.split(":", 1)[1].strip() for ln in out.splitlines() if "Model name" in ln), "?"
        )
    except OSError:
        model = platform.processor() or "?"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{model}, {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}, {now}"
    )


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def one_piece(model, hi) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    out = verify_lengths(model, "first_last", 1, hi, time_limit=600.0, max_nodes=20_000)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    r = out.report
    if not r.accepted:
        raise SystemExit(f"{model.name} [1, {hi}]: the kernel rejected: {r.failures}")
    return {
        "verdict": out.verdict,
        "proved_up_to": r.proved_up_to,
        "first_refuted": r.first_refuted,
        "nodes": len(out.certificate["nodes"]),
        "bounds": out.stats.get("bounds", 0),
        "search_s": round(out.search_seconds, 3),
        "check_s": round(out.check_seconds, 3),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
    }


def chunked(model, hi, client) -> tuple[dict, str]:
    t0 = time.perf_counter()
    out = verify_lengths_parallel(
        model, "first_last", 1, hi, client=client, time_limit=CHUNK_LIMIT, max_nodes=20_000
    )
    wall = time.perf_counter() - t0
    r = out.report
    if not r.accepted:
        raise SystemExit(f"{model.name} [1, {hi}] chunked: the kernel rejected: {r.failures}")
    if out.stats["cut_by_time"] or out.stats["lost"]:
        raise SystemExit(f"{model.name} [1, {hi}] chunked: {out.stats}")
    row = {
        "verdict": out.verdict,
        "proved_up_to": r.proved_up_to,
        "first_refuted": r.first_refuted,
        "chunks": out.stats["chunks"],
        "nodes": len(out.certificate["nodes"]),
        "search_s": round(out.search_seconds, 3),
        "check_s": round(out.check_seconds, 3),
        "wall_s": round(wall, 3),
        "chunk_s": out.stats["chunk_seconds"],  # the chunks' own times, summed
        "chunk_cpu_s": out.stats["chunk_cpu_seconds"],  # their threads' CPU times, summed
    }
    return row, json.dumps(out.certificate)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--no-dask", action="store_true")
    args = ap.parse_args()
    info = machine()
    print(info)
    verify_lengths(first_symbol_model(20.0), "first_last", 1, 20)  # imports, first calls
    rows = []
    for tag, name, make, his in CASES:
        model = make()
        for hi in his:
            before = load()
            row = {"case": tag, "model": name, "B": "inf" if hi is None else hi, "load": before}
            row["one_piece"] = one_piece(model, hi)
            rows.append(row)
            print(row, flush=True)
    starts = {}
    if not args.no_dask:
        from attncert.parallel import dask_client

        certs: dict[tuple, dict[int, str]] = {}
        for k in (1, 2):
            t0 = time.perf_counter()
            with dask_client(None, k) as (client, where):
                client.run(lambda: __import__("attncert.soft.horizon.parallel"))
                client.run(lambda: __import__("attncert.kernel.horizon.bound"))
                starts[k] = round(time.perf_counter() - t0, 2)
                makers = {tag: make for tag, _, make, _ in CASES}
                for row in rows:
                    model = makers[row["case"]]()
                    hi = None if row["B"] == "inf" else row["B"]
                    got, text = chunked(model, hi, client)
                    got["where"] = where
                    row[f"workers_{k}"] = got
                    certs.setdefault((row["case"], row["B"]), {})[k] = text
                    print(row["case"], row["B"], k, got, flush=True)
        for key, by_k in certs.items():
            if by_k[1] != by_k[2]:
                raise SystemExit(f"{key}: the certificates of 1 and 2 workers differ")
        print("chunked certificates identical for 1 and 2 workers: yes")
    _table(rows, starts)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": info, "cluster_start_s": starts, "rows": rows}, fh, indent=1)


def _lengths(b) -> str:
    return "[1, ∞)" if b == "inf" else f"[1, 10^{len(str(b)) - 1}]"


def _table(rows, starts) -> None:
    base = {}
    print()
    print(
        "| model | lengths | verdict | proved_up_to | first_refuted | nodes | bounds | "
        "search s | check s | CPU s | × lengths | × CPU | × nodes | load |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        p = row["one_piece"]
        if row["B"] == 10**3:
            base[row["case"]] = (p["cpu_s"], p["nodes"])
        c0, n0 = base[row["case"]]
        ratio = "∞" if row["B"] == "inf" else f"{row['B'] // 10**3:,}"
        print(
            f"| {row['model']} | {_lengths(row['B'])} | {p['verdict']} | {p['proved_up_to']} | "
            f"{p['first_refuted'] or '–'} | {p['nodes']} | {p['bounds']} | {p['search_s']:.2f} | "
            f"{p['check_s']:.2f} | {p['cpu_s']:.2f} | {ratio} | {p['cpu_s'] / c0:.2f} | "
            f"{p['nodes'] / n0:.2f} | {row['load']} |"
        )
    if "workers_1" not in rows[0]:
        return
    print()
    print(
        "| model | lengths | chunks | nodes | 1 worker: search s | check s | Σ chunk s | "
        "Σ chunk CPU s | 2 workers: search s | check s | Σ chunk s | Σ chunk CPU s | "
        "search 1 w / 2 w |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        one, two = row["workers_1"], row["workers_2"]
        print(
            f"| {row['model']} | {_lengths(row['B'])} | {one['chunks']} | {one['nodes']} | "
            f"{one['search_s']:.2f} | {one['check_s']:.2f} | {one['chunk_s']:.2f} | "
            f"{one['chunk_cpu_s']:.2f} | {two['search_s']:.2f} | {two['check_s']:.2f} | "
            f"{two['chunk_s']:.2f} | {two['chunk_cpu_s']:.2f} | "
            f"{one['search_s'] / two['search_s']:.2f} |"
        )
    print(f"\ncluster start-up and workers' imports (not in the rows), s: {starts}")


if __name__ == "__main__":
    main()
