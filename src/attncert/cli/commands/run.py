"""``attncert run MODEL STRING…``: the model's decision and logit on each string.

    attncert run zoo:ones_star 111 1101
    attncert run zoo:anbn aabb --exact --trace
    attncert run model.json 0101 --json

``--exact`` evaluates in rational arithmetic (hard attention only); ``--trace``
adds, per layer and head, the positions each query attends to (1-based token
positions, counting BOS if the model has one; for softmax heads, the largest
weight).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from attncert.cli.common import add_json_flag, add_model_argument, load_model_arg, print_json
from attncert.errors import InputError
from attncert.limits import check_run_size
from attncert.model import forward, forward_exact
from attncert.model.spec import AttentionKind, Model


def _tokens(model: Model, string: str) -> list[str]:
    return [model.embedding.vocab[t] for t in model.encode(string)]


def evaluate(model: Model, string: str, *, exact: bool, trace: bool) -> dict[str, Any]:
    """Decision, logit and (optionally) attention choices of ``model`` on ``string``."""
    record: dict[str, Any] = {"string": string, "evaluator": "exact" if exact else "float"}
    heads = [
        (li, hi, h) for li, layer in enumerate(model.layers) for hi, h in enumerate(layer.heads)
    ]
    attention: list[dict[str, Any]] = []
    if exact:
        tr = forward_exact(model, string)
        logit = tr.logit_fraction()
        record.update(accept=bool(tr.accept), logit=float(logit), logit_exact=str(logit))
        if trace:
            for li, hi, h in heads:
                chosen = tr.layers[li].chosen[hi]
                attention.append(
                    {
                        "layer": li,
                        "head": hi,
                        "kind": h.kind.value,
                        "attends": [[j + 1 for j in picks] for picks in chosen],
                    }
                )
    else:
        ftr = forward(model, [string])
        record.update(accept=bool(ftr.accept[0]), logit=float(ftr.logits[0]))
        if trace:
            for li, hi, h in heads:
                w = ftr.layers[li].weights[0, hi]
                entry: dict[str, Any] = {"layer": li, "head": hi, "kind": h.kind.value}
                if h.kind is AttentionKind.SOFTMAX:
                    entry["attends"] = [[int(np.argmax(row)) + 1] if row.any() else [] for row in w]
                    entry["max_weight"] = [float(row.max()) if row.any() else 0.0 for row in w]
                else:
                    entry["attends"] = [[int(j) + 1 for j in np.flatnonzero(row)] for row in w]
                attention.append(entry)
    if trace:
        record["tokens"] = _tokens(model, string)
        record["attention"] = attention
    return record


def _text(rec: dict[str, Any]) -> list[str]:
    verdict = "accept" if rec["accept"] else "reject"
    if "logit_range" in rec:
        lo, hi = rec["logit_range"]
        runs = " ".join(f"{s}^{k}" for s, k in rec["string"])
        return [
            f"{verdict}  logit ∈ [{lo!r}, {hi!r}]  {runs} (n = {rec['length']}; {rec['evaluator']})"
        ]
    logit = rec.get("logit_exact", repr(rec["logit"]))
    lines = [f"{verdict}  logit={logit}  {rec['string']!r}  ({rec['evaluator']})"]
    for a in rec.get("attention", []):
        toks = rec["tokens"]
        parts = []
        for i, picks in enumerate(a["attends"]):
            target = ",".join(str(j) for j in picks) or "-"
            extra = f"({a['max_weight'][i]:.3f})" if "max_weight" in a else ""
            parts.append(f"{i + 1}{toks[i]}→{target}{extra}")
        lines.append(f"  layer {a['layer']} head {a['head']} ({a['kind']}): " + " ".join(parts))
    return lines


def _rle_record(model: Model, text: str) -> dict[str, Any]:
    """A run-length string (``[["0", 1], ["1", 485165196]]``, as ``verify --lengths``
    writes witnesses): written out when short, else decided by the kernel's pattern bound."""
    from attncert.soft.horizon.witness import decide_rle, parse_rle

    runs = parse_rle(text)
    d = decide_rle(model, runs)
    if d.accept is None:
        raise InputError(
            f"the bound leaves the sign open on this string of length {d.n}: logit ∈ "
            f"[{d.z_lo!r}, {d.z_hi!r}]"
        )
    return {
        "string": [[s, k] for s, k in runs],
        "length": d.n,
        "evaluator": d.how,
        "accept": d.accept,
        "logit": d.z_lo if d.z_lo == d.z_hi else None,
        "logit_range": [d.z_lo, d.z_hi],
    }


def run(args: argparse.Namespace) -> int:
    model = load_model_arg(args.model)
    heads = sum(len(layer.heads) for layer in model.layers)
    plain = [s for s in args.strings if not s.startswith("[")]
    for s in plain:
        check_run_size(model.n_tokens(len(s)), heads, what=f"STRING of length {len(s)}")
    records = [
        _rle_record(model, s)
        if s.startswith("[")
        else evaluate(model, s, exact=args.exact, trace=args.trace)
        for s in args.strings
    ]
    if args.json:
        print_json({"model": model.name, "sha256": model.digest, "results": records})
    else:
        for rec in records:
            print("\n".join(_text(rec)))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a model on strings (decision, logit, attention choices)",
        description="Run a model on input strings and print its decision and readout logit.",
    )
    add_model_argument(p)
    p.add_argument(
        "strings",
        nargs="+",
        metavar="STRING",
        help="input strings over the model's alphabet, or run-length encoded as JSON, "
        '\'[["0", 1], ["1", 485165196]]\' (as verify --lengths writes long witnesses)',
    )
    p.add_argument(
        "--exact", action="store_true", help="exact rational evaluation (hard attention only)"
    )
    p.add_argument(
        "--trace", action="store_true", help="show the attention choices per layer and head"
    )
    add_json_flag(p)
    p.set_defaults(func=run)
