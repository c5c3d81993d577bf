"""Benchmark: Theorem 1 certificates on the trained hard zoo models (issue 24).

    python benchmarks/bench_trained_hard.py                       # all trained_hard_*, n = 1024 4096
    python benchmarks/bench_trained_hard.py --models trained_hard_first_last --ns 1024
    python benchmarks/bench_trained_hard.py --soft-pair-max 4096 --json hard.json
    python benchmarks/bench_trained_hard.py --from-json hard.json # re-print a saved run

For each trained hard zoo model (hardened: leftmost argmax over the soft model's scores),
each n and each language — the model's own and, over {0, 1}, PARITY — one cell in a
fresh process:
``certify`` (the search, the non-constancy witness included), the kernel's independent
check, the verdict (:func:`attncert.hard.verdict.assess`); then, when the certificate
has a misclassified pair and n ≤ ``--soft-pair-max``, the pair decided on the *soft*
model by the kernel's rigorous arb forward pass (:mod:`attncert.hard.soft_pair`).
Recorded per cell: verdict, free positions, the output dependency set, the checked fixed
positions the decision depends on, how the witness was found, whether a misclassified
pair exists, the soft model's answer on it, and the seconds of search (witness
included), witness search alone, check and soft pair. Compared within the run against
the same cell's float forward pass (the lean blockwise pass on one random string):
the ratio (search + check) / forward.

BLAS threads: 1 per cell (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS), as bench_scale.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any


def cell(name: str, n: int, lang: str, soft_pair: bool, time_limit: float) -> dict[str, Any]:
    import numpy as np

    from attncert.hard.pipeline import certify
    from attncert.hard.soft_pair import confirm_on_soft
    from attncert.hard.verdict import assess
    from attncert.kernel.hard.checker import check
    from attncert.model import harden, zoo_model
    from attncert.model.forward import forward

    soft = zoo_model(name)
    model = harden(soft)
    t0 = time.perf_counter()
    cert = certify(model, n=n, language=lang, verify=False, time_limit=time_limit)
    search = time.perf_counter() - t0
    report = check(cert, model)
    a = assess(cert, model, report)
    s = "".join(np.random.default_rng(n).choice(list(model.alphabet), n))
    t0 = time.perf_counter()
    forward(model, [s], keep_attention=False)
    fwd = time.perf_counter() - t0
    pair = confirm_on_soft(soft, cert) if soft_pair and cert.misclassified else None
    ws = cert.trace.get("witness_search", {})
    return {
        "model": name,
        "n": n,
        "language": lang,
        "verdict": a.verdict.value,
        "reasons": list(a.reasons),
        "free": cert.final_restriction.num_free,
        "output_dependency": [u + 1 for u in cert.output_dependency],
        "fixed_dependence": [u + 1 for u in report.fixed_dependence],
        "nonconstant": report.nonconstant,
        "witness": ws.get("found"),
        "misclassified": cert.misclassified is not None,
        "soft_pair": None if pair is None else pair.to_dict(),
        "seconds_search": round(search, 2),
        "seconds_witness": ws.get("seconds"),
        "seconds_check": round(report.seconds, 2),
        "seconds_forward": round(fwd, 2),
        "ratio": round((search + report.seconds) / fwd, 2),
        "arithmetic": report.arithmetic,
    }


def _run_cell(args, name, n, lang) -> dict[str, Any]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "from bench_trained_hard import cell\n"
        f"print(json.dumps(cell({name!r}, {n}, {lang!r}, {n <= args.soft_pair_max}, "
        f"{args.time_limit})))\n"
    )
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=args.cell_timeout,
    )
    if proc.returncode != 0:
        return {"model": name, "n": n, "language": lang, "error": proc.stderr[-600:]}
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["seconds_cell"] = round(time.perf_counter() - t0, 1)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| model | language | n | verdict | free | S | fixed positions it depends on | "
        "witness | misclassified | soft model on the WRONG string | search s (witness) | "
        "check s | (search+check)/forward |",
        "|---|---|---:|---|---:|---|---|---|---|---|---:|---:|---:|",
    ]
    for r in rows:
        if "error" in r and "has alphabet" in r["error"]:
            continue  # PARITY asked of a model over another alphabet (older runs)
        if "error" in r:
            out.append(f"| {r['model']} | {r['language']} | {r['n']} | error | | | | | | | | | |")
            continue
        sp = r.get("soft_pair")
        if sp is None:
            soft = "–" if not r["misclassified"] else "not run"
        elif sp["soft_misclassifies"] is None:
            soft = "undecided"
        else:
            soft = "wrong too" if sp["soft_misclassifies"] else "right (hardening's error)"
        out.append(
            f"| {r['model'].removeprefix('trained_hard_')} | {r['language']} | {r['n']} | "
            f"{r['verdict']} | {r['free']} | {r['output_dependency'] or '∅'} | "
            f"{r['fixed_dependence'] or '–'} | {r['witness'] or 'none'} | "
            f"{'yes' if r['misclassified'] else 'no'} | {soft} | "
            f"{r['seconds_search']} ({r['seconds_witness']}) | {r['seconds_check']} | "
            f"{r['ratio']} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", nargs="+")
    ap.add_argument("--ns", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--soft-pair-max", type=int, default=1024)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--cell-timeout", type=float, default=1800.0)
    ap.add_argument("--json")
    ap.add_argument("--from-json")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            print(table(json.load(f)["rows"]))
        return
    from attncert.model import zoo_model
    from attncert.model.trained import TRAINED_HARD

    rows = []
    for name in args.models or TRAINED_HARD:
        model = zoo_model(name)
        own = model.meta["language"]
        langs = (own, "parity") if model.alphabet == ("0", "1") else (own,)
        for n in args.ns:
            for lang in dict.fromkeys(langs):
                row = _run_cell(args, name, n, lang)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        import platform

        meta = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": platform.platform(),
            "cpus": os.cpu_count(),
            "load": os.getloadavg(),
        }
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
