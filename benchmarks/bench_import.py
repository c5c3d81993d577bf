"""Benchmark: importer agreement and time (issue 14 item 6, zoo part).

    python benchmarks/bench_import.py                  # quick grid
    python benchmarks/bench_import.py --full --json out.json

For PyTorch ``nn.TransformerEncoder`` models (pre-/post-norm, GELU, final norm, causal)
and Hugging Face GPT-2 LM models of a few widths, all with random weights, float32 and
float64: the import time, then per length n the library's forward pass and attncert's
float forward pass (:func:`attncert.model.forward`) on the same batch, and the max
|logit difference| between them (the importer tests require ≤ 1e-5 at n ≤ 64). Then
the trained zoo models: load time (no torch involved) and attncert's forward time at
n = 256, 1024 and 4096 — the float pass a certificate row is compared with.

Timing numbers depend on the machine and its load; the JSON records both.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _randomize(module: Any, seed: int, torch: Any) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
            p.copy_(
                1 + 0.3 * noise
                if (".ln_" in name or "norm" in name) and name.endswith("weight")
                else 0.4 * noise
            )


def _torch_case(d: int, dtype: Any, torch: Any) -> tuple[Any, Any, Any]:
    from attncert.model.importers import model_from_torch

    nn = torch.nn
    torch.manual_seed(d)
    layer = nn.TransformerEncoderLayer(
        d, 2, 2 * d, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(d), enable_nested_tensor=False)
    emb, head = nn.Embedding(3, d), nn.Linear(d, 1)
    for k, m in enumerate((enc, emb, head)):
        _randomize(m, d + k, torch)
    enc, emb, head = (m.to(dtype).eval() for m in (enc, emb, head))
    t0 = time.perf_counter()
    model = model_from_torch(
        enc, alphabet="01", bos="^", embedding=emb, readout=head, position="last", causal=True
    )
    seconds = time.perf_counter() - t0

    def run(strings: list[str]) -> np.ndarray:
        tokens = torch.tensor([model.encode(s) for s in strings])
        n = tokens.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(n, dtype=dtype)
        with torch.no_grad():
            y = enc(emb(tokens), mask=mask, is_causal=True)
            return head(y[:, -1])[:, 0].double().numpy()

    return model, run, seconds


def _gpt2_case(d: int, dtype: Any, torch: Any) -> tuple[Any, Any, Any]:
    import transformers

    from attncert.model.importers import model_from_hf_gpt2

    cfg = transformers.GPT2Config(
        vocab_size=8,
        n_positions=1100,
        n_embd=d,
        n_layer=2,
        n_head=2,
        n_inner=2 * d,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=7,
    )
    torch.manual_seed(d)
    hf = transformers.GPT2ForSequenceClassification(cfg)
    _randomize(hf, d, torch)
    hf = hf.to(dtype).eval()
    ids = {"0": 1, "1": 2, "^": 0}
    t0 = time.perf_counter()
    model = model_from_hf_gpt2(hf, alphabet="01", bos="^", token_ids=ids)
    seconds = time.perf_counter() - t0

    def run(strings: list[str]) -> np.ndarray:
        vocab = model.embedding.vocab
        tokens = torch.tensor([[ids[vocab[t]] for t in model.encode(s)] for s in strings])
        with torch.no_grad():
            logits = hf(tokens).logits.double().numpy()
        return logits[:, 1] - logits[:, 0]

    return model, run, seconds


def _bench_importers(ns: list[int], widths: list[int], batch: int) -> list[dict]:
    import torch

    from attncert.model import forward

    rows = []
    for family, build in (("torch", _torch_case), ("gpt2", _gpt2_case)):
        for d in widths:
            for dtype in (torch.float32, torch.float64):
                model, run, t_import = build(d, dtype, torch)
                for n in ns:
                    rng = np.random.default_rng(n)
                    strings = ["".join(rng.choice(["0", "1"], size=n)) for _ in range(batch)]
                    t0 = time.perf_counter()
                    want = run(strings)
                    t_lib = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    ours = forward(model, strings).logits
                    t_ours = time.perf_counter() - t0
                    row = {
                        "family": family,
                        "d": d,
                        "dtype": str(dtype).replace("torch.", ""),
                        "n": n,
                        "batch": batch,
                        "import_seconds": t_import,
                        "library_seconds": t_lib,
                        "attncert_seconds": t_ours,
                        "max_logit_difference": float(np.abs(ours - want).max()),
                    }
                    rows.append(row)
                    print(
                        f"{family:>5} d={d:<3} {row['dtype']:>7} n={n:<5} import "
                        f"{t_import * 1e3:7.1f} ms  library {t_lib:7.3f} s  attncert "
                        f"{t_ours:7.3f} s  max|Δlogit| {row['max_logit_difference']:.2e}"
                    )
    return rows


def _bench_zoo(ns: list[int]) -> list[dict]:
    from attncert.model import forward, zoo_model
    from attncert.model.trained import TRAINED, trained_model

    rows = []
    for name in TRAINED:
        trained_model.cache_clear()
        t0 = time.perf_counter()
        model = zoo_model(name)
        t_load = time.perf_counter() - t0
        for n in ns:
            s = "".join(np.random.default_rng(n).choice(list(model.alphabet), size=n))
            t0 = time.perf_counter()
            forward(model, [s])
            t_fwd = time.perf_counter() - t0
            rows.append({"model": name, "n": n, "load_seconds": t_load, "forward_seconds": t_fwd})
            print(f"{name:>20} n={n:<5} load {t_load * 1e3:7.1f} ms  forward {t_fwd:7.3f} s")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="widths 16, 32, 64; n up to 1024")
    parser.add_argument("--json", metavar="PATH", help="write every row as JSON")
    args = parser.parse_args()
    ns = [16, 64, 256, 1024] if args.full else [16, 64, 256]
    widths = [16, 32, 64] if args.full else [16]
    out = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor()} cpus={os.cpu_count()}",
        "python": platform.python_version(),
        "importers": _bench_importers(ns, widths, batch=8),
        "zoo": _bench_zoo([256, 1024, 4096]),
    }
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
