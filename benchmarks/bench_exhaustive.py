"""Every string of length n, three ways, beside transformers (issue 42 item 8), one run.

On the same batch of all |Σ|ⁿ strings, one thread each (OMP/OPENBLAS/MKL threads = 1,
``torch.set_num_threads(1)``), side by side in one process:

* **transformers** — the library's own float64 forward pass (eager attention, no grad),
  in chunks of ``--chunk`` strings (the baseline);
* **attncert float** — :func:`attncert.model.forward` (the full trace) on the same chunks;
* **attncert rigorous** — every string's decision, sound:
  :func:`attncert.kernel.soft.batch.decisions` (batched float64 enclosures, arb for the
  strings they leave open — what the verifier's exhaustive leaves run), in chunks of 2¹⁶;
* **verify** (n ≤ 16) — ``attncert verify MODEL --n n`` with default flags in a fresh
  process (process start included), which evaluates all 2ⁿ strings in its search and
  again in the kernel's check.

Models: (a) a random ``LlamaForSequenceClassification`` built by transformers (d = 32,
2 layers, 4 heads, 2 key/value heads — grouped-query attention —, MLP 64, transformers'
own initialisation, seed 0), imported by ``model_from_hf``; (b) zoo decoders (``--zoo``),
for which transformers has no forward: attncert float vs rigorous, and each one's cost
per string as a ratio to (a)'s transformers cost per string at the same n.

Each cell is timed ``--repeat`` times (wall and CPU seconds) after a first call on 8
strings (arb tables, caches; its seconds are recorded as ``setup_*``); the table shows
the fastest wall time and the spread (slowest/fastest). Ratios are to transformers in
the same run.

    python benchmarks/bench_exhaustive.py --ns 16 20 --repeat 2 --json bench_exhaustive.json
    python benchmarks/bench_exhaustive.py --from-json bench_exhaustive.json   # the tables
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_certify import machine  # noqa: E402

from attncert.io import write_json  # noqa: E402
from attncert.kernel.soft.batch import decisions  # noqa: E402
from attncert.model import forward, zoo_model  # noqa: E402
from attncert.model.tokens import encode_batch  # noqa: E402

HF_IDS = {"0": 3, "1": 4, "^": 1}
RIGOROUS_CHUNK = 1 << 16


def llama():
    """The transformers model and its attncert import."""
    import torch
    import transformers as tf

    from attncert.model.importers import model_from_hf

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = tf.LlamaConfig(
        vocab_size=6,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_labels=2,
        pad_token_id=5,
        bos_token_id=1,
    )
    cfg._attn_implementation = "eager"
    hf = tf.LlamaForSequenceClassification(cfg).double().eval()
    model = model_from_hf(hf, alphabet="01", token_ids=HF_IDS, bos="^", name="llama-d32-gqa")
    return hf, model


def strings_of(alphabet, n: int) -> list[str]:
    return ["".join(p) for p in itertools.product(alphabet, repeat=n)]


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def best(runs: list[tuple[float, float]]) -> dict:
    walls = [w for w, _ in runs]
    return {
        "wall": round(min(walls), 3),
        "cpu": round(min(c for _, c in runs), 3),
        "spread": round(max(walls) / min(walls), 3),
        "runs": [[round(w, 3), round(c, 3)] for w, c in runs],
    }


def hf_pass(hf, ids: np.ndarray, chunk: int) -> np.ndarray:
    import torch

    out = []
    with torch.no_grad():
        for s in range(0, len(ids), chunk):
            lg = hf(input_ids=torch.from_numpy(ids[s : s + chunk])).logits
            out.append((lg[:, 1] - lg[:, 0]).numpy())
    return np.concatenate(out)


def float_pass(model, strings: list[str], chunk: int) -> np.ndarray:
    return np.concatenate(
        [forward(model, strings[s : s + chunk]).logits for s in range(0, len(strings), chunk)]
    )


def rigorous_pass(model, strings: list[str]) -> tuple[np.ndarray, int]:
    accept, undecided = [], 0
    for s in range(0, len(strings), RIGOROUS_CHUNK):
        a, u = decisions(model, strings[s : s + RIGOROUS_CHUNK])
        accept.append(a)
        undecided += int(u.sum())
    return np.concatenate(accept), undecided


def run_model(name, model, n, repeat, chunk, hf=None) -> dict:
    strings = strings_of(model.alphabet, n)
    row: dict = {"model": name, "n": n, "strings": len(strings)}
    runs: dict[str, list] = {"transformers": [], "float": [], "rigorous": []}
    ids = None
    if hf is not None:  # the same strings as transformers' token ids
        vocab = np.array([HF_IDS[s] for s in model.embedding.vocab])
        ids = vocab[encode_batch(model, strings)]
    # first calls build arb tables (exp, SiLU/GELU Taylor cells) and warm caches: timed
    # apart, on 8 strings
    _, row["setup_float"], _ = timed(lambda: float_pass(model, strings[:8], chunk))
    _, row["setup_rigorous"], _ = timed(lambda: rigorous_pass(model, strings[:8]))
    if hf is not None:
        _, row["setup_transformers"], _ = timed(lambda: hf_pass(hf, ids[:8], chunk))
    for _ in range(repeat):
        if hf is not None:
            z_hf, w, c = timed(lambda: hf_pass(hf, ids, chunk))
            runs["transformers"].append((w, c))
        z, w, c = timed(lambda: float_pass(model, strings, chunk))
        runs["float"].append((w, c))
        (acc, undecided), w, c = timed(lambda: rigorous_pass(model, strings))
        runs["rigorous"].append((w, c))
    for k, v in runs.items():
        if v:
            row[k] = best(v)
    row["rigorous_undecided_by_arb"] = undecided
    row["float_vs_rigorous_decisions_differ"] = int(np.sum((z > 0) != acc))
    if hf is not None:
        row["max_abs_logit_diff_vs_transformers"] = float(np.max(np.abs(z - z_hf)))
        row["decisions_differ_from_transformers"] = int(np.sum((z_hf > 0) != acc))
    return row


def verify_cell(model, n: int) -> dict:
    """``attncert verify MODEL --language majority --n n --json`` with default flags, in a
    fresh process (process start, imports and the arb tables included, as a user runs it)."""
    import tempfile

    from attncert.model import save_model

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.json")
        save_model(model, path)
        argv = ["attncert", "verify", path, "--language", "majority", "--n", str(n), "--json"]
        (proc, w, _) = timed(lambda: subprocess.run(argv, capture_output=True, text=True))
    d = json.loads(proc.stdout)
    return {
        "verdict": d["verdict"],
        "wall": round(w, 3),
        "search": d["search_seconds"],
        "check": d["check_seconds"],
        "leaves": d["leaves"],
        "accuracy": d["accuracy"].get("text"),
    }


def lscpu() -> dict:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    keep = ("Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket")
    return {
        k.strip(): v.strip()
        for k, v in (ln.split(":", 1) for ln in text.splitlines() if ":" in ln)
        if k.strip() in keep
    }


def table(result: dict) -> str:
    """Markdown: per model and n, the fastest wall time of each pass with its ratio to
    transformers (zoo models: per string, to the imported model's transformers cost),
    the same for CPU seconds, µs per string, and the spread (slowest/fastest wall)."""
    lines = [
        "| model | n | strings | transformers [s] | attncert float [s] (×) | "
        "rigorous decisions [s] (×) | CPU [s]: tf · float (×) · rigorous (×) | "
        "µs/string (wall) | spread | left to arb |",
        "|---|---:|---:|---:|---:|---:|---|---|---|---:|",
    ]
    base = {r["n"]: r for r in result["rows"] if "transformers" in r}
    for r in result["rows"]:
        b = base.get(r["n"])
        mine = "transformers" in r

        def ratio(k, clock, r=r, b=b, mine=mine):
            if b is None:
                return ""
            t, tf = r[k][clock], b["transformers"][clock]
            x = t / tf if mine else (t / r["strings"]) / (tf / b["strings"])
            return f" ({x:.2f}×)"

        tf_wall = f"{r['transformers']['wall']:.2f}" if mine else "— (none)"
        tf_cpu = f"{r['transformers']['cpu']:.1f}" if mine else "—"
        us = " · ".join(
            f"{1e6 * r[k]['wall'] / r['strings']:.0f}" if k in r else "—"
            for k in ("transformers", "float", "rigorous")
        )
        spread = " / ".join(
            f"{r[k]['spread']:.2f}" for k in ("transformers", "float", "rigorous") if k in r
        )
        lines.append(
            f"| {r['model']} | {r['n']} | {r['strings']:,} | {tf_wall} | "
            f"{r['float']['wall']:.2f}{ratio('float', 'wall')} | "
            f"{r['rigorous']['wall']:.2f}{ratio('rigorous', 'wall')} | "
            f"{tf_cpu} · {r['float']['cpu']:.1f}{ratio('float', 'cpu')} · "
            f"{r['rigorous']['cpu']:.1f}{ratio('rigorous', 'cpu')} | {us} | {spread} | "
            f"{r['rigorous_undecided_by_arb']} |"
        )
    if result.get("verify"):
        lines += [
            "",
            "| model | n | verify (default flags) | wall [s] | search [s] | check [s] | "
            "× transformers (wall) |",
            "|---|---:|---|---:|---:|---:|---:|",
        ]
        for v in result["verify"]:
            b = base.get(v["n"])
            x = f"{v['wall'] / b['transformers']['wall']:.1f}×" if b else "—"
            lines.append(
                f"| {v['model']} | {v['n']} | {v['verdict']} | {v['wall']:.1f} | "
                f"{v['search']:.1f} | {v['check']:.1f} | {x} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[16, 20])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=1024, help="strings per forward call")
    ap.add_argument("--zoo", nargs="*", default=["trained_rope_dyck1", "trained_alibi_first_last"])
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--from-json", help="print the tables of an earlier run")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as fh:
            print(table(json.load(fh)))
        return
    import torch

    torch.set_num_threads(1)
    result = {"machine": {**machine(), "lscpu": lscpu()}, "args": vars(args), "rows": []}
    hf, model = llama()
    result["verify"] = []
    for n in args.ns:
        rows = [run_model(model.name, model, n, args.repeat, args.chunk, hf)]
        for z in args.zoo:
            rows.append(run_model(z, zoo_model(z), n, args.repeat, args.chunk))
        for r in rows:
            print(json.dumps(r), flush=True)
        result["rows"] += rows
        if n <= 16 and not args.no_verify:
            v = {"model": model.name, "n": n, **verify_cell(model, n)}
            print(json.dumps(v), flush=True)
            result["verify"].append(v)
    result["machine"]["loadavg_end"] = os.getloadavg()
    print(table(result))
    if args.json:
        write_json(args.json, result)


if __name__ == "__main__":
    main()
