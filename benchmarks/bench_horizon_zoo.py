"""The zoo over ``--lengths A:B`` (issue 40, "Must show"): proved_up_to, first_refuted and
the wall time of each trained model, beside the sampled accuracy the zoo records.

Each model runs as ``attncert verify zoo:NAME --language first_last|ones_star --lengths
A:B --time-limit T --json`` in its own process (process start included), ``--jobs`` of
them at a time; the certificate is re-checked by the kernel inside the command (its
verdict is the kernel's). The table goes to stdout as markdown (docs/horizon.md keeps
it); ``--json`` writes every row.

    python benchmarks/bench_horizon_zoo.py --lengths 1:1000000 --time-limit 120 \\
        --time-limit-for trained_hard_first_last=600 --jobs 2 --json zoo_horizon.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from attncert.io import write_json
from attncert.model.zoo import zoo_description

MODELS = {
    "trained_hard_first_last": "first_last",
    "trained_hard_ones_star": "ones_star",
    "trained_hard_nope_first_last": "first_last",
    "trained_nope_first_last": "first_last",
    "trained_rope_first_last": "first_last",
    "trained_alibi_first_last": "first_last",
    "trained_first_last": "first_last",
}


def run(name: str, language: str, lengths: str, limit: float) -> dict:
    cmd = [sys.executable, "-m", "attncert.cli.main", "verify", f"zoo:{name}", "--language"]
    cmd += [language, "--lengths", lengths, "--time-limit", str(limit), "--json", "--quiet"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    row = {"model": name, "language": language, "lengths": lengths, "time_limit": limit}
    row.update(exit=p.returncode, wall_s=round(wall, 1))
    try:
        out = json.loads(p.stdout)
    except json.JSONDecodeError:
        row["error"] = (p.stderr or p.stdout).strip().splitlines()[-1:]
        return row
    row.update({k: out.get(k) for k in ("verdict", "proved_up_to", "first_refuted")})
    row["proved"], row["undecided"] = out.get("proved"), out.get("undecided")
    ref = out.get("refuted") or []
    row["witness"] = ref[0]["witness"] if ref else None
    return row


def bracket(row: dict) -> str:
    up, first = row.get("proved_up_to"), row.get("first_refuted")
    if isinstance(up, int) and isinstance(first, int) and up > 0:
        return f"{first / up:.3g}"
    return "—"


def witness_text(w) -> str:
    if w is None:
        return "—"
    if isinstance(w, str):
        return f"`{w}`"
    return "`" + " ".join(f"{s}^{k}" for s, k in w) + "`"


def table(rows: list[dict]) -> str:
    head = (
        "| model | language | verdict | proved_up_to | first_refuted (witness) | "
        "first_refuted / proved_up_to | time s (limit) | the zoo's sampled accuracy |\n"
        "| --- | --- | --- | ---: | --- | ---: | ---: | --- |\n"
    )
    body = ""
    for r in rows:
        first = r.get("first_refuted")
        ref = "—" if first is None else f"{first} ({witness_text(r.get('witness'))})"
        verdict = r.get("verdict") or f"error: {r.get('error')}"
        body += (
            f"| `{r['model']}` | {r['language']} | {verdict} | {r.get('proved_up_to')} | "
            f"{ref} | {bracket(r)} | {r['wall_s']} ({r['time_limit']:g}) | "
            f"{zoo_description(r['model'])} |\n"
        )
    return head + body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lengths", default="1:1000000")
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--time-limit-for", action="append", default=[], metavar="NAME=S")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--json")
    args = ap.parse_args()
    limits = {k: float(v) for k, v in (s.split("=", 1) for s in args.time_limit_for)}
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = [
            pool.submit(run, m, MODELS[m], args.lengths, limits.get(m, args.time_limit))
            for m in args.models
        ]
        rows = [f.result() for f in futures]
    print(table(rows))
    stamp = f"{platform.node()}, {platform.processor() or platform.machine()}"
    print(f"\n{datetime.date.today()} on {stamp}, {args.jobs} models at a time")
    if args.json:
        write_json(args.json, {"date": str(datetime.date.today()), "rows": rows})


if __name__ == "__main__":
    main()
