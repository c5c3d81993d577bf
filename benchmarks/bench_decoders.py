"""A Llama-style decoder beside a GPT-2-style one of the same size (issue 32), measured.

Both are built by transformers from a config with random weights (seeded; nothing is
downloaded): d = 64, L = 4, 4 heads, MLP width 128, a 2-label sequence-classification
head, alphabet {0, 1} plus BOS. The Llama one has RoPE, RMSNorm, SwiGLU and grouped-query
attention (2 key/value heads); the GPT-2 one learned positions, LayerNorm and GELU. For
each: the import time (``model_from_hf``), and at n = 256 and 1024 the hardened
certificate (``attncert.certify``, Theorem 1) and ``verify`` (certified accuracy on
majority), each with its verdict and its time (search + kernel check), one run, side by
side.

    python benchmarks/bench_decoders.py [--ns 256 1024] [--time-limit 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import attncert
from attncert.errors import AttncertError
from attncert.io import write_json
from attncert.languages import language
from attncert.model import harden
from attncert.soft.verify import verify

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_certify import machine


def build(kind: str):
    """The transformers model (eval mode, float64) of ``kind`` ("llama" or "gpt2")."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    if kind == "llama":
        cfg = tf.LlamaConfig(
            vocab_size=8,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=2048,
            num_labels=2,
            pad_token_id=7,
            bos_token_id=2,  # the "^" of run()'s token ids (model_from_hf checks it)
        )
        model = tf.LlamaForSequenceClassification(cfg)
    else:
        cfg = tf.GPT2Config(
            vocab_size=8, n_embd=64, n_layer=4, n_head=4, n_inner=128, n_positions=2048,
            num_labels=2, pad_token_id=7,
        )  # fmt: skip
        model = tf.GPT2ForSequenceClassification(cfg)
    return model.double().eval()


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t, 2)


def run(kind: str, ns: list[int], time_limit: float, k: int) -> dict:
    from attncert.model.importers import model_from_hf

    hf = build(kind)
    ids = {"0": 0, "1": 1, "^": 2}
    model, t_import = timed(
        lambda: model_from_hf(hf, alphabet="01", token_ids=ids, bos="^", name=f"{kind}-d64-L4")
    )
    row = {
        "model": model.name,
        "positions": model.positional_scheme,
        "kinds": list(model.new_kinds),
        "import_s": t_import,
        "cells": [],
    }
    hard = harden(model)
    for n in ns:
        cell = {"n": n}
        t0 = time.perf_counter()
        try:
            cert, t = timed(
                lambda n=n: attncert.certify(
                    hard, n=n, language="parity", time_limit=time_limit, k=k
                )
            )
            rep, t_check = timed(lambda cert=cert: attncert.check(cert, hard))
            cell["certify"] = {
                "accepted": rep.accepted,
                "free": cert.final_restriction.num_free,
                "search_s": t,
                "check_s": t_check,
            }
        except AttncertError as err:
            cell["certify"] = {
                "error": err.message[:200],
                "search_s": round(time.perf_counter() - t0, 2),
            }
        out, t = timed(lambda n=n: verify(model, language("majority"), n, time_limit=time_limit))
        cell["verify"] = {
            "accepted": out.check.accepted,
            "interval": [float(out.lower), float(out.upper)],
            "wrong": out.check.wrong,
            "seconds": t,
        }
        row["cells"].append(cell)
        print(kind, cell, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--k", type=int, default=1, help="the proof's k (Stage 3 budget)")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = [run(kind, args.ns, args.time_limit, args.k) for kind in ("gpt2", "llama")]
    result = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "rows": rows}
    print("\n| model | n | import s | certify (hardened) | verify (majority) |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        for c in r["cells"]:
            ce, ve = c["certify"], c["verify"]
            cert = (
                f"no certificate after {ce.get('search_s', '?')} s: {ce['error'][:60]}"
                if "error" in ce
                else f"{'checked' if ce['accepted'] else 'REJECTED'}, {ce['free']}/{c['n']} "
                f"free, {ce['search_s']} + {ce['check_s']} s"
            )
            ver = (
                f"{'checked' if ve['accepted'] else 'REJECTED'} [{ve['interval'][0]:.3g}, "
                f"{ve['interval'][1]:.3g}], {'proved wrong, ' if ve['wrong'] else ''}"
                f"{ve['seconds']} s"
            )
            print(f"| {r['model']} | {c['n']} | {r['import_s']} | {cert} | {ver} |")
    if args.json:
        write_json(args.json, result)


if __name__ == "__main__":
    main()
