"""Adversarial search for a string that a first_last model gets wrong (issue 22, measurement).

``attncert verify`` neither proves nor refutes the soft two-layer ``trained_first_last`` at
n = 1024 (docs/verify.md). This script measures how hard the model is to fool: for each
pair of end symbols (a, b) it minimises the model's *correctness margin* — the accept
logit when a = b, its negation when a ≠ b — over the 2^(n−2) middles, by Adam on a relaxed
input (each middle position a softmax over Σ, mixing the word embeddings), rounding the
relaxed middle to a string every ten steps and scoring it with attncert's own float forward
pass. Beside it, in the same run, the baseline: as many uniformly random middles, scored
the same way. A negative margin would be a misclassified string (``attncert verify`` would
then carve and confirm it); none is claimed here, only the smallest margins found.

Requires the ``torch`` extra. The relaxed forward pass is written out below for pre- and
post-norm softmax encoders (LayerNorm, GELU/ReLU, final norm, single readout position, no
mask, no BOS/EOS) and checked against attncert's forward pass on random strings first.

    python benchmarks/bench_attack_first_last.py --n 64 1024 --restarts 4 --steps 150 \\
        --json docs/bench_attack_first_last.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import torch

from attncert.io import write_json
from attncert.model import zoo_model
from attncert.model.forward import forward
from attncert.model.positional import feature_matrix
from attncert.model.spec import Activation, AttentionKind

torch.set_num_threads(1)


def _t(a) -> torch.Tensor:
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def _ln(norm, y):
    c = y - y.mean(-1, keepdim=True)
    return c / torch.sqrt((c * c).mean(-1, keepdim=True) + norm.eps) * _t(norm.weight) + _t(
        norm.bias
    )


def supported(model) -> str | None:
    if model.bos is not None or model.eos is not None or model.readout.pooled:
        return "BOS/EOS or a mean readout"
    if model.embedding.table is not None:
        return "a learned position table"
    for layer in model.layers:
        for h in layer.heads:
            if h.kind is not AttentionKind.SOFTMAX or h.mask.value != "none":
                return "a hard or masked head"
        if layer.ffn is not None and layer.ffn.activation not in (Activation.GELU, Activation.RELU):
            return "an activation other than GELU/ReLU"
    return None


def relaxed_logit(model, probs: torch.Tensor) -> torch.Tensor:
    """The accept logit of a (B, n, |Σ|) batch of distributions over Σ (one-hot rows: the
    model's logit on those strings)."""
    emb = model.embedding
    word = _t(emb.word[[model.token_index[s] for s in model.alphabet]])
    y = probs @ word
    n = probs.shape[1]
    if emb.features:
        y = y + _t(feature_matrix(emb.features, n) @ emb.pos_weight.T)[None]
    for layer in model.layers:
        u = _ln(layer.norm1, y) if layer.pre_norm and layer.norm1 is not None else y
        att = 0
        for h in layer.heads:
            q = u @ _t(h.w_q).T + _t(h.bias("b_q"))
            k = u @ _t(h.w_k).T + _t(h.bias("b_k"))
            v = u @ _t(h.w_v).T + _t(h.bias("b_v"))
            w = torch.softmax(h.temperature(n) * (q @ k.transpose(1, 2)), -1)
            att = att + (w @ v) @ _t(h.w_o).T + _t(h.bias("b_o"))
        y = y + att if layer.residual else att
        if not layer.pre_norm and layer.norm1 is not None:
            y = _ln(layer.norm1, y)
        if layer.ffn is not None:
            f = layer.ffn
            x = _ln(layer.norm2, y) if layer.pre_norm and layer.norm2 is not None else y
            hid = x @ _t(f.w1).T + _t(f.b1)
            hid = torch.nn.functional.gelu(hid) if f.activation is Activation.GELU else hid.relu()
            ff = hid @ _t(f.w2).T + _t(f.b2)
            y = y + ff if layer.residual else ff
        if not layer.pre_norm and layer.norm2 is not None:
            y = _ln(layer.norm2, y)
    if model.final_norm is not None:
        y = _ln(model.final_norm, y)
    return y[:, model.readout.index(n), :] @ _t(model.readout.weight) + model.readout.bias


def _one_hot(model, strings):
    idx = {s: k for k, s in enumerate(model.alphabet)}
    p = torch.zeros(len(strings), len(strings[0]), len(model.alphabet), dtype=torch.float64)
    for b, s in enumerate(strings):
        for i, c in enumerate(s):
            p[b, i, idx[c]] = 1.0
    return p


def attack(model, n, a, b, *, restarts, steps, seed):
    """(smallest correctness margin found, its string, float forward passes used)."""
    sign = 1.0 if a == b else -1.0
    k = len(model.alphabet)
    g = torch.Generator().manual_seed(seed)
    theta = (
        2.0 * torch.randn(restarts, n - 2, k, generator=g, dtype=torch.float64)
    ).requires_grad_()
    ends = _one_hot(model, [a + b])[0]  # (2, k)
    opt = torch.optim.Adam([theta], lr=0.3)
    best, evals = (np.inf, ""), 0
    for it in range(steps):
        mid = torch.softmax(theta, -1)
        probs = torch.cat(
            [ends[:1].expand(restarts, 1, k), mid, ends[1:].expand(restarts, 1, k)], 1
        )
        loss = (sign * relaxed_logit(model, probs)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 9 or it == steps - 1:
            with torch.no_grad():
                pick = theta.argmax(-1).tolist()
            strings = [a + "".join(model.alphabet[j] for j in row) + b for row in pick]
            z = sign * forward(model, strings, keep_attention=False).logits
            evals += len(strings)
            j = int(np.argmin(z))
            if z[j] < best[0]:
                best = (float(z[j]), strings[j])
    return best[0], best[1], evals


def random_baseline(model, n, a, b, count, seed):
    sign = 1.0 if a == b else -1.0
    rng = np.random.default_rng(seed)
    alpha = list(model.alphabet)
    strings = [a + "".join(rng.choice(alpha, n - 2)) + b for _ in range(count)]
    z = np.concatenate(
        [
            sign * forward(model, strings[i : i + 16], keep_attention=False).logits
            for i in range(0, count, 16)
        ]
    )
    return float(z.min())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="trained_first_last")
    ap.add_argument("--n", type=int, nargs="+", default=[64, 1024])
    ap.add_argument("--restarts", type=int, default=4)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    model = zoo_model(args.model)
    why = supported(model)
    if why:
        ap.error(f"model {args.model}: {why} is not written out in the relaxed forward pass")
    rng = np.random.default_rng(1)
    strings = ["".join(rng.choice(list(model.alphabet), 32)) for _ in range(4)]
    gap = float(
        np.abs(
            relaxed_logit(model, _one_hot(model, strings)).detach().numpy()
            - forward(model, strings, keep_attention=False).logits
        ).max()
    )
    print(f"relaxed forward vs attncert forward on 4 random strings: max |Δz| = {gap:.2e}")
    if gap > 1e-9:
        raise SystemExit("the relaxed forward pass does not reproduce the model")
    rows = []
    for n in args.n:
        for a in model.alphabet:
            for b in model.alphabet:
                t = time.perf_counter()
                margin, s, evals = attack(
                    model, n, a, b, restarts=args.restarts, steps=args.steps, seed=args.seed
                )
                t_attack = time.perf_counter() - t
                t = time.perf_counter()
                base = random_baseline(model, n, a, b, evals, args.seed)
                t_random = time.perf_counter() - t
                row = {
                    "n": n,
                    "ends": a + b,
                    "attack_min_margin": round(margin, 4),
                    "attack_ones": s.count("1"),
                    "attack_string_head": s[:24],
                    "random_min_margin": round(base, 4),
                    "strings_scored": evals,
                    "attack_s": round(t_attack, 1),
                    "random_s": round(t_random, 1),
                }
                rows.append(row)
                print(json.dumps(row))
    if args.json:
        meta = {
            "model": args.model,
            "restarts": args.restarts,
            "steps": args.steps,
            "seed": args.seed,
            "machine": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "relaxed_vs_forward_max_gap": gap,
        }
        write_json(args.json, {"meta": meta, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
