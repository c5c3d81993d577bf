"""Benchmark: Theorem 1 certificates (issue 3) — MaxSAT vs the paper's random restriction.

    python benchmarks/bench_certify.py                 # --quick grid (small, ~1 min)
    python benchmarks/bench_certify.py --full          # L∈{1,2,3}, H∈{1,2}, d∈{8,16}, n=16…4096
    python benchmarks/bench_certify.py --full --json out.json
    python benchmarks/bench_certify.py --layers 2 --heads 2 --dims 16 --ns 4096 --methods maxsat
    python benchmarks/bench_certify.py --from-json out.json --markdown   # re-render a run

For each seeded random model (``random_model(L, H, d, seed=s, kind=...)``), each length n
and each Stage 3 method, one *cell* runs ``attncert.certify(model, n=n, language=...,
method=...)`` (which searches, then runs the independent checker) in a fresh subprocess
with a wall-clock limit (``--cell-timeout``; the whole process group is killed on
timeout).  Recorded per cell: search time (``trace["seconds_search"]``), checker time
(``trace["seconds_check"]``), their sum, free fraction of ρ_L, size of the output's
dependency set, the largest dependency set of any activation, whether MaxSAT proved
optimality, and for ``random`` the success rate of the random draws per layer (when no
draw succeeds, certify raises and the rate is 0 of the number of tries, read from the
message).  A cell whose search fails is a *result* (the paper's random restriction is
expected to fail at large n), not an error of the benchmark.

After a ``timeout`` for a (model, method) pair, larger n of that pair are skipped.
Prints a table and, with ``--json``, writes every record with the machine and date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import time
from typing import Any

QUICK = {
    "layers": [1, 2],
    "heads": [1, 2],
    "dims": [8],
    "ns": [16, 64, 256],
    "seeds": [0],
}
FULL = {
    "layers": [1, 2, 3],
    "heads": [1, 2],
    "dims": [8, 16],
    "ns": [16, 64, 256, 1024, 4096],
    "seeds": [0],
}
TARGET = {"L": 2, "H": 2, "d": 16, "n": 4096, "seconds": 60.0, "free": 0.75, "out_deps": 4}


# ----- one cell (runs in a subprocess) --------------------------------------------------
def run_cell(spec: dict[str, Any]) -> dict[str, Any]:
    """Certify one (model, n, method) and return the measured record."""
    from attncert.hard.pipeline import CertificationFailed, certify
    from attncert.model import random_model

    model = random_model(spec["L"], spec["H"], spec["d"], kind=spec["kind"], seed=spec["seed"])
    rec: dict[str, Any] = {"model": model.name}
    t0 = time.perf_counter()
    try:
        cert = certify(
            model,
            n=spec["n"],
            language=spec["language"],
            method=spec["method"],
            k=spec["k"],
            paper_stages=spec["paper_stages"],
            time_limit=spec["time_limit"],
            verify=True,
        )
    except CertificationFailed as err:
        rec.update(status="no restriction", message=str(err))
        m = re.search(r"layer (\d+): 0 of (\d+) random", str(err))
        if m:
            rec["random_failed_layer"] = int(m.group(1))
            rec["random_rate"] = 0.0
            rec["random_tries"] = int(m.group(2))
    except Exception as err:  # a benchmark records every outcome
        rec.update(status="error", message=f"{type(err).__name__}: {err}")
    else:
        tr = cert.trace
        layers = tr["layers"]
        rec.update(
            status="ok",
            seconds_search=tr["seconds_search"],
            seconds_check=tr["seconds_check"],
            free_fraction=tr["free_fraction"],
            out_deps=len(cert.output_dependency),
            max_dependency=max((lt["max_dependency"] for lt in layers), default=0),
            misclassified=cert.misclassified is not None,
            stage3=[lt.get("stage3") for lt in layers],
            free_after=[lt["free_after"] for lt in layers],
            cnf=[lt.get("cnf_round0") for lt in layers],
            invariants_failed=[
                f"L{lt['layer']}: {inv['name']}"
                for lt in layers
                for inv in lt.get("invariants", [])
                if not inv["holds"]
            ],
        )
        opt = [s.get("optimal") for s in rec["stage3"] if s]
        rec["optimal"] = all(opt) if opt else None
        if spec["method"] == "random":
            # per layer: (successful draws, draws), None where Stages 1–2 left no open tuple
            rec["random_rates"] = [
                (s["successes"], s["tries"]) if s and "rate" in s else None for s in rec["stage3"]
            ]
            rates = [s["rate"] for s in rec["stage3"] if s and "rate" in s]
            rec["random_rate"] = min(rates) if rates else None
    rec["seconds_wall"] = round(time.perf_counter() - t0, 3)
    rec["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return rec


def _spawn_cell(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one cell in a new session; kill its process group when it overruns."""
    cmd = [sys.executable, os.path.abspath(__file__), "--cell", json.dumps(spec)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "timeout", "seconds_wall": timeout}
    if proc.returncode != 0:
        tail = (err or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return {"status": "error", "message": tail[0]}
    return json.loads(out.strip().splitlines()[-1])


# ----- machine, grid, table --------------------------------------------------------------
def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    vers = {}
    for mod in ("numpy", "flint", "pysat"):
        try:
            vers[mod] = getattr(__import__(mod), "__version__", "?")
        except ImportError:
            vers[mod] = None
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_count": os.cpu_count(),
        "cpu": cpu,
        "loadavg_start": os.getloadavg(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        **{f"{k}_version": v for k, v in vers.items()},
    }


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def row(r: dict[str, Any]) -> str:
    tot = None
    if r.get("status") == "ok":
        tot = r["seconds_search"] + r["seconds_check"]
    rate = ""
    if r["method"] == "random":
        if r.get("random_rates") and any(r["random_rates"]):
            rate = " ".join(
                f"L{i}:" + ("-" if x is None else f"{x[0]}/{x[1]}")
                for i, x in enumerate(r["random_rates"], 1)
            )
        elif r.get("status") == "ok":
            rate = "no Stage 3 needed"
        elif "random_tries" in r:
            rate = f"L{r['random_failed_layer']}:0/{r['random_tries']}"
    status = r.get("status", "?")
    if status == "ok" and r.get("optimal") is False and r["method"] == "maxsat":
        status = "ok(not opt)"
    return (
        f"{r['L']:>2} {r['H']:>2} {r['d']:>3} {r['seed']:>4} {r['n']:>5} {r['method']:>7} "
        f"{status:>14} {_fmt(r.get('seconds_search'), '8.2f')} "
        f"{_fmt(r.get('seconds_check'), '8.2f')} {_fmt(tot, '8.2f')} "
        f"{_fmt(r.get('free_fraction'), '6.3f')} {_fmt(r.get('out_deps'), '4d')} "
        f"{_fmt(r.get('max_dependency'), '4d')} {rate}"
        + (f"  [{r['message'][:90]}]" if r.get("status") == "error" else "")
    )


HEADER = (
    f"{'L':>2} {'H':>2} {'d':>3} {'seed':>4} {'n':>5} {'method':>7} {'status':>14} "
    f"{'search':>8} {'check':>8} {'total':>8} {'free':>6} {'|S|':>4} {'maxc':>4} random ok/tries"
)


def targets(records: list[dict[str, Any]]) -> list[str]:
    """The issue's targets, evaluated on the records."""
    out = []
    hit = [
        r
        for r in records
        if (r["L"], r["H"], r["d"], r["n"], r["method"])
        == (TARGET["L"], TARGET["H"], TARGET["d"], TARGET["n"], "maxsat")
    ]
    for r in hit:
        ok = r.get("status") == "ok"
        tot = r["seconds_search"] + r["seconds_check"] if ok else None
        met = (
            ok
            and tot <= TARGET["seconds"]
            and r["free_fraction"] >= TARGET["free"]
            and r["out_deps"] <= TARGET["out_deps"]
        )
        out.append(
            f"target L=2 H=2 d=16 n=4096 seed={r['seed']}: "
            + (
                f"search+check {tot:.1f} s, free {r['free_fraction']:.3f}, |S| {r['out_deps']}"
                if ok
                else r.get("status", "?")
            )
            + f" -> {'MET' if met else 'NOT MET'}"
        )
    for r in records:
        if r["L"] == 3 and r["n"] == 1024 and r["method"] == "maxsat":
            ok = r.get("status") == "ok"
            out.append(
                f"target L=3 n=1024 {r['model']}: "
                + (
                    f"ok, {r['seconds_search'] + r['seconds_check']:.1f} s"
                    if ok
                    else r.get("status", "?")
                )
            )
    return out


def _random_cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return ""
    st = r.get("status")
    if st == "ok":
        rates = r.get("random_rates") or []
        t = f"{r['seconds_search'] + r['seconds_check']:.2f} s"
        if not any(rates):
            return f"ok, Stage 3 not needed ({t})"
        return (
            "ok, draws "
            + " ".join(
                f"L{i}:" + ("–" if x is None else f"{x[0]}/{x[1]}") for i, x in enumerate(rates, 1)
            )
            + f" ({t}, free {r['free_fraction']:.3f})"
        )
    if "random_tries" in r:
        return (
            f"**fails**: L{r['random_failed_layer']} 0/{r['random_tries']} draws "
            f"({r['seconds_wall']:.2f} s)"
        )
    return st or "?"


def markdown(records: list[dict[str, Any]]) -> str:
    """One Markdown row per (model, n): MaxSAT's numbers and the random restriction's outcome."""
    by = {}
    for r in records:
        by.setdefault((r["L"], r["H"], r["d"], r["seed"], r["n"]), {})[r["method"]] = r
    lines = [
        "| L | H | d | seed | n | maxsat search [s] | check [s] | total [s] | free | #S "
        "| max c | random restriction |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (L, H, d, seed, n), cell in by.items():
        m = cell.get("maxsat")
        if m is not None and m.get("status") == "ok":
            opt = "" if m.get("optimal") is not False else " (RC2 timed out: not optimal)"
            nums = (
                f"{m['seconds_search']:.2f}{opt} | {m['seconds_check']:.2f} | "
                f"{m['seconds_search'] + m['seconds_check']:.2f} | {m['free_fraction']:.3f} | "
                f"{m['out_deps']} | {m['max_dependency']}"
            )
        elif m is not None:
            nums = f"{m.get('status')} | | | | |"
        else:
            nums = "| | | | |"
        lines.append(
            f"| {L} | {H} | {d} | {seed} | {n} | {nums} | {_random_cell(cell.get('random'))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="small grid (default)")
    g.add_argument("--full", action="store_true", help="the issue's grid, n = 16 … 4096")
    ap.add_argument("--layers", type=int, nargs="+")
    ap.add_argument("--heads", type=int, nargs="+")
    ap.add_argument("--dims", type=int, nargs="+")
    ap.add_argument("--ns", type=int, nargs="+")
    ap.add_argument("--seeds", type=int, nargs="+")
    ap.add_argument(
        "--target-seeds",
        type=int,
        nargs="*",
        help="extra seeds of the L=2 H=2 d=16 n=4096 maxsat target (default: 1 2 with --full)",
    )
    ap.add_argument("--methods", nargs="+", default=["maxsat", "random"])
    ap.add_argument("--kind", default="leftmost", help="attention kind of the random models")
    ap.add_argument("--language", default="parity")
    ap.add_argument("--k", type=int, default=1)
    ap.add_argument("--no-paper-stages", action="store_true", help="skip Stages 1–2")
    ap.add_argument("--time-limit", type=float, default=120.0, help="certify's time_limit [s]")
    ap.add_argument("--cell-timeout", type=float, default=300.0, help="wall limit per cell [s]")
    ap.add_argument("--json", metavar="PATH", help="also write all records as JSON")
    ap.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    ap.add_argument("--from-json", metavar="PATH", help="only render a saved --json run")
    args = ap.parse_args(argv)

    if args.cell:
        print(json.dumps(run_cell(json.loads(args.cell))))
        return 0
    if args.from_json:
        from attncert.io import read_json

        saved = read_json(args.from_json)
        print(HEADER)
        for r in saved["records"]:
            print(row(r))
        for line in saved.get("targets", []):
            print("# " + line)
        if args.markdown:
            print(markdown(saved["records"]))
        return 0

    grid = dict(FULL if args.full else QUICK)
    for key in ("layers", "heads", "dims", "ns", "seeds"):
        if getattr(args, key):
            grid[key] = getattr(args, key)
    if args.target_seeds is None:
        args.target_seeds = [1, 2] if args.full else []
    info = machine()
    settings = {
        "grid": grid,
        "methods": args.methods,
        "kind": args.kind,
        "language": args.language,
        "k": args.k,
        "paper_stages": not args.no_paper_stages,
        "time_limit": args.time_limit,
        "cell_timeout": args.cell_timeout,
        "target_seeds": args.target_seeds,
    }
    print(
        f"# {info['date']}  {info['cpu']}  nproc={info['nproc']}  python {info['python']}"
        f"  numpy {info['numpy_version']}  load {info['loadavg_start']}"
    )
    print(f"# {json.dumps(settings)}")
    print(HEADER, flush=True)
    records: list[dict[str, Any]] = []
    t_all = time.perf_counter()
    pairs = [
        (L, H, d, seed, method, tuple(sorted(grid["ns"])))
        for L in grid["layers"]
        for H in grid["heads"]
        for d in grid["dims"]
        for seed in grid["seeds"]
        for method in args.methods
    ]
    # more seeds of the issue's headline configuration, at its n only
    pairs += [
        (TARGET["L"], TARGET["H"], TARGET["d"], seed, "maxsat", (TARGET["n"],))
        for seed in args.target_seeds
        if seed not in grid["seeds"]
    ]
    for L, H, d, seed, method, ns in pairs:
        dead = False
        for n in ns:
            base = {"L": L, "H": H, "d": d, "seed": seed, "n": n, "method": method}
            if dead:
                rec = {**base, "status": "skipped"}
            else:
                spec = {
                    **base,
                    "kind": args.kind,
                    "language": args.language,
                    "k": args.k,
                    "paper_stages": not args.no_paper_stages,
                    "time_limit": args.time_limit,
                }
                rec = {**base, **_spawn_cell(spec, args.cell_timeout)}
                dead = rec["status"] == "timeout"
            records.append(rec)
            print(row(rec), flush=True)
    total = time.perf_counter() - t_all
    print(f"# grid wall time {total:.0f} s, load at end {os.getloadavg()}")
    for line in targets(records):
        print("# " + line)
    if args.markdown:
        print(markdown(records))
    if args.json:
        from attncert.io import write_json

        write_json(
            args.json,
            {
                "machine": info,
                "settings": settings,
                "wall_seconds": round(total, 1),
                "loadavg_end": os.getloadavg(),
                "records": records,
                "targets": targets(records),
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
