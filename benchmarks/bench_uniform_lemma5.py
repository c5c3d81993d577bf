"""Lemma 5 uniformly in n (issue 23, item 3): K/n beside the per-n certified B(n).

    python benchmarks/bench_uniform_lemma5.py                       # N₀ = 64; n = 64,256,1024
    python benchmarks/bench_uniform_lemma5.py --models soft_parity --n 64,256 --budget 5
    python benchmarks/bench_uniform_lemma5.py --no-per-n --json out.json

For each model: the length-uniform certificate (attncert.soft.certified.uniform, checked
by attncert.kernel.uniform.checker) — K with B(n) ≤ K/n for every n ≥ N₀, the logit's range Z
over every length, the n from which K/n < Z, Hahn's published constant for the same
weights, and the seconds for certificate + check; then per n: K/n, min(K/n, Z), the per-n
certified B(n) (attncert.soft.certified, checked by attncert.kernel.soft.checker) with what decided
it, the measured maximum of the adversarial search (a real pair), and the PARITY floors of
both. The per-n B(n) is the baseline of the same run: "K/n ÷ B(n)" says how much the
statement for every n costs at that n. Models outside Lemma 5's hypothesis are listed with
the reason.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from fractions import Fraction
from pathlib import Path

from attncert.kernel.soft import checker as KS
from attncert.kernel.uniform.dyadic import approx
from attncert.model import zoo_model
from attncert.soft.certified.certificate import SoftCertificate
from attncert.soft.certified.certify import sensitivity_claims
from attncert.soft.certified.uniform import certify_uniform
from attncert.soft.sensitivity import search_sensitivity

MODELS = (
    "soft_parity",
    "soft_parity_lm",
    "soft_dyck2_lm",
    "soft_parity_ln",
    "trained_parity",
    "trained_first_last",
    "trained_majority",
    "trained_dyck1",
)


def per_n(model, n: int):
    """(B(n), what decided it, PARITY floor or None, accepted, seconds): per-n baseline."""
    t0 = time.perf_counter()
    sens, _, claims = sensitivity_claims(model, n)
    cert = SoftCertificate(model.digest, model.name, f"zoo:{model.name}", n, True, tuple(claims))
    ok = KS.check(cert.to_dict(), model).accepted
    floor = claims[0].floor["nats"] if claims[0].floor else None
    return claims[0].bound, sens.source, floor, ok, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--n0", type=int, default=64)
    ap.add_argument("--n", default="64,256,1024")
    ap.add_argument("--budget", type=float, default=10.0, help="search seconds per (model, n)")
    ap.add_argument("--no-per-n", action="store_true", help="skip the per-n B(n) baseline")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    ns = [int(x) for x in args.n.split(",")]
    rec = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor()} cpus={os.cpu_count()}",
        "load": os.getloadavg(),
        "n0": args.n0,
        "models": [],
    }
    for name in args.models.split(","):
        m = zoo_model(name)
        u = certify_uniform(m, args.n0, source=f"zoo:{name}", floor_at=tuple(ns))
        entry = dict(u.as_dict(), rows=[])
        rec["models"].append(entry)
        if u.certificate is None:
            print(f"{name}: {u.verdict} — " + "; ".join(u.reasons))
            continue
        print(
            f"{name}: {u.verdict}  K = {approx(u.k)}  (published {u.published.text})  "
            f"bins {u.certificate['bins']}  Z = {u.cap:.4g}  K/n < Z from n = "
            f"{approx(Fraction(u.nontrivial_from))}  {u.seconds:.2f} s"
        )
        print(
            f"  {'n':>6} {'K/n':>11} {'min(K/n,Z)':>11} {'B(n)':>10} {'decided by':<12} "
            f"{'K/n÷B(n)':>10} {'measured':>10} {'floor K':>9} {'floor B':>9} {'s':>6}"
        )
        for n in ns:
            k_n = u.k / n
            b_u = u.bound_at(n)
            row = {"n": n, "K_over_n": approx(k_n, 6), "uniform_bound": approx(b_u, 6)}
            row["uniform_floor"] = u.floor_at(n)
            if not args.no_per_n:
                b, src, fl, ok, sec = per_n(m, n)
                row.update(per_n_bound=b, per_n_source=src, per_n_floor=fl, per_n_checked=ok)
                row["per_n_seconds"] = sec
            meas = search_sensitivity(m, n, "logit", seed=0, time_budget=args.budget).value
            row["measured"] = meas
            row["sound"] = Fraction(meas) <= k_n
            entry["rows"].append(row)
            b = row.get("per_n_bound")
            ratio = "—" if b is None else approx(k_n / Fraction(b), 3)
            print(
                f"  {n:>6} {approx(k_n):>11} {approx(b_u):>11} "
                f"{'—' if b is None else f'{b:.4g}':>10} {row.get('per_n_source', '—'):<12} "
                f"{ratio:>10} {meas:>10.4g} "
                + (
                    f"{row['uniform_floor']:>9.3g}"
                    if row["uniform_floor"] is not None
                    else f"{'—':>9}"
                )
                + (
                    f" {row['per_n_floor']:>9.3g}"
                    if row.get("per_n_floor") is not None
                    else f" {'—':>9}"
                )
                + f" {row.get('per_n_seconds', 0):>6.1f}"
                + ("" if row["sound"] else "  MEASURED > K/n")
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
