"""Benchmark: all-length agreement proofs (issue 23) against bounded proofs up to N = 12.

    python benchmarks/bench_all_lengths.py              # every catalogued result and regime
    python benchmarks/bench_all_lengths.py --json out.json --markdown

For each (result, formula, regime) of the ``all_lengths`` proof artifacts
(:data:`attncert.proofcheck.catalog._ALL_LENGTHS`): *proof* = ``prove_all_lengths`` (gadgets,
closed forms, N₀, the bounded z3 part below N₀, the kernel once), *check* = what
``attncert check`` does with the certificate (the kernel again, and the bounded part proved
again), *total* = proof + check. The yardstick in the same run: the bounded prover on every
length 1..12 (``prove_agreement --max-len 12``), which proves much less; *ratio* = total /
bounded-12. A last block lowers the temperature coefficient of one head kind and reports
N₀ or the first failing length.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import time

from attncert.compile import compile_formula
from attncert.compile.first_last import first_last_model
from attncert.kernel.all_lengths.checker import check as kernel_check
from attncert.model.spec import Temperature
from attncert.proofcheck.catalog import _ALL_LENGTHS
from attncert.prove import prove_agreement
from attncert.prove.all_lengths import prove_all_lengths, recheck_bounded

BASELINE_N = 12


def _model(formula: str, alphabet: str, regime: str):
    if regime == "proposition11":
        return first_last_model(formula, alphabet)
    return compile_formula(formula, regime=regime, alphabet=alphabet)


def bench(result: str, name: str, _text: str, formula: str, alphabet: str, regime: str) -> dict:
    model = _model(formula, alphabet, regime)
    t0 = time.perf_counter()
    res = prove_all_lengths(formula, model)
    proof = time.perf_counter() - t0
    cert = res.certificate
    t1 = time.perf_counter()
    rep = kernel_check(cert, model)
    kernel = time.perf_counter() - t1
    t2 = time.perf_counter()
    again = recheck_bounded(cert, model)
    bounded_check = time.perf_counter() - t2
    check = kernel + bounded_check
    t3 = time.perf_counter()
    base = prove_agreement(formula, model, max_len=BASELINE_N)
    baseline = time.perf_counter() - t3
    ok = res.verdict == "proved" and rep.accepted and again.verdict == "proved"
    return {
        "result": result,
        "name": name,
        "formula": formula,
        "alphabet": alphabet,
        "regime": regime,
        "statement": res.statement if ok else "NOT PROVED",
        "N0": cert.n0,
        "gadgets": len(cert.gadgets),
        "inequalities": len(cert.inequalities),
        "proof_s": round(proof, 3),
        "kernel_s": round(kernel, 3),
        "check_s": round(check, 3),
        "total_s": round(proof + check, 3),
        "bounded12_s": round(baseline, 3),
        "bounded12": base.verdict,
        "ratio": round((proof + check) / baseline, 2) if baseline > 0 else None,
    }


LOWERED = [  # (formula, alphabet, regime, layer, n_power, log_power, coefficients)
    ("prev Q_1", "01", "temperature", 0, 1, 0, (1.375, 0.85, 0.8)),
    ("ODD(#<[Q_1])", "01", "temperature", 1, 4, 1, (3.5, 1.5, 1.2)),
]


def lowered() -> list[dict]:
    rows = []
    for formula, alphabet, regime, layer, p, q, coefs in LOWERED:
        base = compile_formula(formula, regime=regime, alphabet=alphabet)
        for c in coefs:
            layers = list(base.layers)
            lay = layers[layer]
            heads = tuple(
                dataclasses.replace(h, temperature=Temperature(c, n_power=p, log_power=q))
                for h in lay.heads
            )
            layers[layer] = dataclasses.replace(lay, heads=heads)
            m = dataclasses.replace(base, layers=tuple(layers))
            t0 = time.perf_counter()
            res = prove_all_lengths(formula, m)
            first = min((f.first for f in res.failures if f.first is not None), default=None)
            rows.append(
                {
                    "formula": formula,
                    "beta": str(Temperature(c, n_power=p, log_power=q)),
                    "verdict": res.verdict,
                    "statement": res.statement,
                    "N0": res.n0,
                    "first_failing_n": first,
                    "seconds": round(time.perf_counter() - t0, 3),
                }
            )
    return rows


def markdown(rows: list[dict], low: list[dict]) -> str:
    out = [
        "| result | formula | regime | N₀ | gadgets | bounds | proof [s] | check [s] | "
        "total [s] | bounded ≤ 12 [s] | ratio | statement |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        f = (r["formula"] if len(r["formula"]) <= 34 else r["name"]).replace("|", "\\|")
        out.append(
            f"| {r['result']} | `{f}` | {r['regime']} | {r['N0']} | {r['gadgets']} | "
            f"{r['inequalities']} | {r['proof_s']:.2f} | {r['check_s']:.2f} | "
            f"{r['total_s']:.2f} | {r['bounded12_s']:.2f} | {r['ratio']} | {r['statement']} |"
        )
    out += [
        "",
        "| formula | β(N) | verdict | N₀ | first failing n | statement | seconds |",
        "|---|---|---|---:|---:|---|---:|",
    ]
    for r in low:
        out.append(
            f"| `{r['formula']}` | {r['beta']} | {r['verdict']} | {r['N0'] or '–'} | "
            f"{r['first_failing_n'] or '–'} | {r['statement']} | {r['seconds']:.2f} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows = []
    for spec in _ALL_LENGTHS:
        r = bench(*spec)
        rows.append(r)
        print(
            f"{r['result']:<15} {r['name']:<15} {r['regime']:<24} N0={r['N0']:<3} "
            f"proof {r['proof_s']:6.2f}s check {r['check_s']:6.2f}s total {r['total_s']:6.2f}s "
            f"bounded≤12 {r['bounded12_s']:6.2f}s ratio {r['ratio']}  {r['statement']}",
            flush=True,
        )
    low = lowered()
    for r in low:
        print(r, flush=True)
    meta = {
        "date": datetime.date.today().isoformat(),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "load": os.getloadavg(),
    }
    print(meta)
    if args.markdown:
        print(markdown(rows, low))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows, "lowered": low}, fh, indent=1)


if __name__ == "__main__":
    main()
