"""Benchmark: Theorem 26 at every length on the Appendix-E Dyck-k programs (issue 23).

    python benchmarks/bench_theorem26_all_lengths.py --json docs/bench_theorem26.json

For k = 2, 3, 4: *derive* = H1–H3 from the weights (:mod:`attncert.kernel.tieless.program`),
*certificate* = the error majorants and N₀ (:func:`all_lengths_certificate`, untrusted, which
calls the kernel once), *kernel* = :func:`attncert.kernel.tieless.checker.check` again
(what ``attncert check`` runs), *exhaustive* = the per-length part below N₀ and the language
check on every input of length ≤ 4 (:func:`short_inputs`: one exact pass). The
yardstick in the same run is the previous method: the per-length arb certification of
lengths 5…1024 from the construction's stated facts (:func:`attncert.compile.dyck.
certify_lengths`), which covers 1,020 lengths where the new proof covers all of them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from attncert.compile.dyck import certify_lengths, dyck_program_model, dyck_soft_model
from attncert.compile.tieless_all_lengths import all_lengths_certificate
from attncert.io import write_json
from attncert.kernel.tieless.checker import check
from attncert.kernel.tieless.program import derive
from attncert.languages import language
from attncert.proofcheck.kinds.tieless_simulation import short_inputs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_certify import machine

EXHAUSTIVE = 4


def bench(k: int) -> dict:
    hard = dyck_program_model(k)
    soft = dyck_soft_model(k).model
    t0 = time.perf_counter()
    der = derive(soft)
    t_derive = time.perf_counter() - t0
    t0 = time.perf_counter()
    cert = all_lengths_certificate(soft)
    t_cert = time.perf_counter() - t0
    t0 = time.perf_counter()
    rep = check(cert, soft)
    t_kernel = time.perf_counter() - t0
    t0 = time.perf_counter()
    fails, wrong = short_inputs(hard, soft, language(f"dyck{k}"), EXHAUSTIVE)
    t_exh = time.perf_counter() - t0
    t0 = time.perf_counter()
    worst = certify_lengths(hard, soft.layers[1].heads[0].temperature, range(5, 1025))
    t_base = time.perf_counter() - t0
    total = t_derive + t_cert + t_kernel + t_exh
    return {
        "program": f"dyck{k}",
        "accepted": rep.accepted and not fails and not wrong,
        "n0_tokens": cert["n0_tokens"],
        "gap": str(der.gap),
        "activation": " + ".join(f"{c}·N^{p}" for p, c in reversed(der.activation)),
        "final_bound": cert["final_bound"],
        "derive_s": round(t_derive, 3),
        "certificate_s": round(t_cert, 3),
        "kernel_s": round(t_kernel, 3),
        "exhaustive_s": round(t_exh, 3),
        "total_s": round(total, 3),
        "baseline_per_length_5_1024_s": round(t_base, 3),
        "baseline_worst_bound": worst,
        "ratio_total_over_baseline": round(total / t_base, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--json", help="write the rows and the machine record here")
    args = ap.parse_args()
    rows = [bench(k) for k in args.ks]
    print(
        "| program | N₀ | H2: activations ≤ | logit error ≤ | derive s | certificate s | kernel s "
        "| n ≤ 4 s | total s | per-length 5…1024 s (before) | ratio |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['program']} | {r['n0_tokens']} | {r['activation']} | {r['final_bound']} | "
            f"{r['derive_s']} | {r['certificate_s']} | {r['kernel_s']} | {r['exhaustive_s']} | "
            f"{r['total_s']} | {r['baseline_per_length_5_1024_s']} | "
            f"{r['ratio_total_over_baseline']} |"
        )
    if args.json:
        write_json(args.json, {"meta": machine(), "rows": rows})  # as every benchmark writes it


if __name__ == "__main__":
    main()
