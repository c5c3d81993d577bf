"""Benchmark: certify + independent check at large n, against the float forward pass (issue 17).

    python benchmarks/bench_scale.py                          # default model + stand-ins, n = 1024 4096 16384
    python benchmarks/bench_scale.py --models default --ns 4096 16384 --json scale.json
    python benchmarks/bench_scale.py --zoo dyck1 parity       # trained zoo models, hardened
    python benchmarks/bench_scale.py --from-json scale.json   # re-print a saved run
    python benchmarks/bench_scale.py --baseline-src /tmp/base/src ...  # A/B against a checkout

Models: ``default`` = ``random_model(2, 2, 16, seed=0)`` (rational: exact arithmetic; the
CLI's default model until issue 24, now ``zoo:random-L2-H2-d16``; the label is kept so
that runs compare with the recorded ones; search times include the witness search);
``standin-ff128`` / ``standin-ff256`` = hardened stand-ins of the trained zoo models
(:func:`standin_model`: L = 2, d = 64, 2 heads, d_ff 128 / 256, pre-norm LayerNorm and a
final norm, GELU, attention biases, BOS, positional features i/n, 1/i, [i=1], sin, cos,
readout at BOS; softmax heads hardened to leftmost); ``--zoo NAME`` adds a zoo model
(hardened if it has softmax heads), certified for the language its meta names.

Each (model, n) cell runs in a fresh process: ``certify(model, n, language="parity",
time_limit=--time-limit)`` (default 60 s, the library's default: the time of all
Stage 3 searches together)
(the search, then the kernel's independent check, which must accept), then the float
forward pass of the same model on one random string of length n — the lean blockwise
pass (``keep_attention=False``) always, and the Trace pass that keeps every N × N
score and weight array when n ≤ ``--trace-max`` (its arrays need 4·H·L·N² floats).
Recorded: search and check seconds, their sum, both forward passes, the ratio of the
sum to the forward pass, and peak resident memory of certify + check (ru_maxrss of
the cell before the forward passes run; the RC2 child process separately).

BLAS threads: ``--blas-threads`` (default 1) is exported as OPENBLAS_NUM_THREADS /
OMP_NUM_THREADS to every cell — on a loaded 2-core machine a second BLAS thread makes
the many small products here up to 40× slower. Recorded in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TARGETS = {"n_big": 16384, "seconds": 30.0, "n_ratio": 4096, "ratio": 3.0, "memory_mb": 2048.0}


def standin_model(d_ff: int = 256, seed: int = 1, d: int = 64, heads: int = 2, mask: str = "none"):
    """A hardened stand-in of a trained zoo model (module docstring), seeded."""
    import numpy as np

    from attncert.model import (
        Embedding,
        FeedForward,
        Head,
        Layer,
        LayerNorm,
        Model,
        Readout,
        harden,
    )
    from attncert.model.positional import PosFeature

    rng = np.random.default_rng(seed)

    def g(*shape: int) -> np.ndarray:
        return rng.normal(0.0, 1.0 / np.sqrt(shape[-1]), size=shape)

    def small(k: int) -> np.ndarray:
        return 0.1 * rng.standard_normal(k)

    def ln() -> LayerNorm:
        return LayerNorm(1 + small(d), small(d), 1e-5)

    feats = (
        PosFeature("i/n"),
        PosFeature("1/i"),
        PosFeature("[i=1]"),
        PosFeature("sin", 0.5),
        PosFeature("cos", 0.5),
    )
    dk = d // heads
    layers = []
    for _ in range(2):
        hs = tuple(
            Head(
                g(dk, d),
                g(dk, d),
                g(dk, d),
                g(d, dk),
                kind="softmax",
                mask=mask,
                b_q=small(dk),
                b_k=small(dk),
                b_v=small(dk),
                b_o=small(d),
            )
            for _ in range(heads)
        )
        ffn = FeedForward(g(d_ff, d), small(d_ff), g(d, d_ff), small(d), activation="gelu")
        layers.append(Layer(hs, ffn, True, ln(), ln(), "pre"))
    soft = Model(
        alphabet=("0", "1"),
        embedding=Embedding(("0", "1", "^"), rng.standard_normal((3, d)), feats, g(d, len(feats))),
        layers=tuple(layers),
        readout=Readout(g(d), 0.0, position="first"),
        bos="^",
        name=f"standin-d{d}-ff{d_ff}-s{seed}",
        final_norm=ln(),
    )
    return harden(soft)


def load(name: str):
    from attncert.model import harden, random_model, zoo_model

    if name == "default":
        return random_model(2, 2, 16, seed=0)
    if name.startswith("standin-ff"):
        return standin_model(int(name[len("standin-ff") :]))
    m = zoo_model(name)
    return m if m.is_hard else harden(m)


# ----- one cell (runs in a subprocess) --------------------------------------------------
def run_cell(spec: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from attncert.hard.pipeline import certify
    from attncert.model import forward

    model = load(spec["model"])
    n = spec["n"]
    # a zoo model is certified for its own language (its meta names it), else PARITY
    lang = model.meta.get("language") if spec["model"] not in ("default",) else None
    lang = lang if isinstance(lang, str) else spec["language"]
    import attncert

    rec: dict[str, Any] = {"model_name": model.name, "language": lang}
    rec["package"] = os.path.dirname(attncert.__file__)
    t0 = time.perf_counter()
    cert = certify(model, n=n, language=lang, time_limit=spec["time_limit"])
    rec["seconds_wall"] = round(time.perf_counter() - t0, 3)
    rec["seconds_search"] = cert.trace["seconds_search"]
    rec["seconds_check"] = cert.trace["seconds_check"]  # certify raises if not accepted
    rec["free_fraction"] = cert.trace["free_fraction"]
    rec["arithmetic"] = cert.trace["arithmetic"]
    rec["out_deps"] = len(cert.output_dependency)
    rec["stage3_seconds"] = [lt.get("seconds_stage3") for lt in cert.trace["layers"]]
    rec["stage3_optimal"] = [(lt.get("stage3") or {}).get("optimal") for lt in cert.trace["layers"]]
    rec["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    rec["peak_children_mb"] = round(
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
    )
    s = "".join(np.random.default_rng(n).choice(list(model.alphabet), n))
    t = time.perf_counter()
    forward(model, [s], keep_attention=False)
    rec["forward_lean"] = round(time.perf_counter() - t, 3)
    if spec.get("decide_one"):  # the kernel's rigorous decision of the same string (issue 25)
        from attncert.kernel.hard.decide import decide

        t = time.perf_counter()
        decide(model, s)
        rec["decide_one"] = round(time.perf_counter() - t, 3)
    if n <= spec["trace_max"]:
        t = time.perf_counter()
        forward(model, [s])
        rec["forward_trace"] = round(time.perf_counter() - t, 3)
    return rec


def _spawn(
    spec: dict[str, Any], timeout: float, blas: int, src: str | None = None
) -> dict[str, Any]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas), OMP_NUM_THREADS=str(blas))
    if src is not None:  # the attncert package of another checkout (--baseline-src)
        env["PYTHONPATH"] = os.path.abspath(src)
    cmd = [sys.executable, os.path.abspath(__file__), "--cell", json.dumps(spec)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        import signal

        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "timeout", "seconds_wall": timeout}
    if proc.returncode != 0:
        tail = (err or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return {"status": "error", "message": tail[0]}
    return {"status": "ok", **json.loads(out.strip().splitlines()[-1])}


# ----- table ---------------------------------------------------------------------------
HEADER = (
    f"{'model':<16} {'n':>6} {'tree':>8} {'status':>8} {'search':>8} {'check':>8} {'total':>8} "
    f"{'fwd-trace':>9} {'fwd-lean':>8} {'ratio':>6} {'peak MB':>8} {'free':>6} arithmetic"
)


def _f(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def total(r: dict[str, Any]) -> float | None:
    if r.get("status") != "ok":
        return None
    return r["seconds_search"] + r["seconds_check"]


def ratio(r: dict[str, Any]) -> float | None:
    """certify + check over the float forward pass (the Trace pass where it ran)."""
    tot = total(r)
    fwd = r.get("forward_trace") or r.get("forward_lean")
    return None if tot is None or not fwd else tot / fwd


def row(r: dict[str, Any]) -> str:
    return (
        f"{r['model']:<16} {r['n']:>6} {r.get('tree', 'this'):>8} {r.get('status', '?'):>8} "
        f"{_f(r.get('seconds_search'), '8.2f')} {_f(r.get('seconds_check'), '8.2f')} "
        f"{_f(total(r), '8.2f')} {_f(r.get('forward_trace'), '9.2f')} "
        f"{_f(r.get('forward_lean'), '8.2f')} {_f(ratio(r), '6.2f')} "
        f"{_f(r.get('peak_mb'), '8.0f')} {_f(r.get('free_fraction'), '6.3f')} "
        f"{r.get('arithmetic', r.get('message', ''))}"
    )


def targets(records: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in records:
        if r.get("tree") == "baseline":
            continue
        tot = total(r)
        if r["n"] == TARGETS["n_big"]:
            ok = tot is not None and tot <= TARGETS["seconds"]
            mem = r.get("peak_mb")
            mem_ok = mem is not None and mem <= TARGETS["memory_mb"]
            out.append(
                f"{r['model']} n={r['n']}: certify+check "
                + (f"{tot:.1f} s" if tot is not None else r.get("status", "?"))
                + f" (≤ {TARGETS['seconds']:.0f} s: {'MET' if ok else 'NOT MET'}); peak "
                + (f"{mem:.0f} MB" if mem is not None else "-")
                + f" (≤ {TARGETS['memory_mb']:.0f} MB: {'MET' if mem_ok else 'NOT MET'})"
            )
        if r["n"] == TARGETS["n_ratio"]:
            q = ratio(r)
            out.append(
                f"{r['model']} n={r['n']}: (certify+check)/forward = "
                + (f"{q:.2f}" if q is not None else "-")
                + f" (≤ {TARGETS['ratio']:.0f}: {'MET' if q is not None and q <= TARGETS['ratio'] else 'NOT MET'})"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    ap.add_argument("--models", nargs="*", default=["default", "standin-ff128", "standin-ff256"])
    ap.add_argument("--zoo", nargs="*", default=[], help="zoo models to add (hardened)")
    ap.add_argument("--ns", type=int, nargs="+", default=[1024, 4096, 16384])
    ap.add_argument("--language", default="parity")
    ap.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        help="certify's time_limit [s]: for all Stage 3 searches together",
    )
    ap.add_argument("--cell-timeout", type=float, default=900.0)
    ap.add_argument("--trace-max", type=int, default=4096, help="largest n for the Trace forward")
    ap.add_argument("--blas-threads", type=int, default=1)
    ap.add_argument(
        "--baseline-src",
        metavar="DIR",
        help="also run every cell with the attncert package in DIR (another checkout's src/), "
        "alternating with this tree's, cell by cell",
    )
    ap.add_argument(
        "--decide-one",
        action="store_true",
        help="also time the kernel's rigorous decision of the forward pass's string (the "
        "floor of any check that decides the certificate's strings)",
    )
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--from-json", metavar="PATH")
    args = ap.parse_args(argv)
    if args.cell:
        print(json.dumps(run_cell(json.loads(args.cell))))
        return 0
    if args.from_json:
        with open(args.from_json) as fh:
            saved = json.load(fh)
        print(HEADER)
        for r in saved["records"]:
            print(row(r))
        for line in saved.get("targets", []):
            print("# " + line)
        return 0
    from bench_certify import machine

    info = machine()
    info["blas_threads"] = args.blas_threads
    print(
        f"# {info['date']}  {info['cpu']}  nproc={info['nproc']}  python {info['python']}"
        f"  numpy {info['numpy_version']}  load {info['loadavg_start']}"
        f"  BLAS threads {args.blas_threads}"
    )
    print(HEADER, flush=True)
    records = []
    t_all = time.perf_counter()
    for name in [*args.models, *args.zoo]:
        for n in args.ns:
            spec = {
                "model": name,
                "n": n,
                "language": args.language,
                "time_limit": args.time_limit,
                "trace_max": args.trace_max,
                "decide_one": args.decide_one,
            }
            trees: list[tuple[str, str | None]] = [("this", None)]
            if args.baseline_src:
                here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
                trees = [("baseline", args.baseline_src), ("this", here)]
            for tree, src in trees:
                got = _spawn(spec, args.cell_timeout, args.blas_threads, src)
                rec = {"model": name, "n": n, "tree": tree, **got}
                records.append(rec)
                print(row(rec), flush=True)
            if args.baseline_src:
                b, t = total(records[-2]), total(records[-1])
                if b and t:
                    print(f"#   {name} n={n}: this / baseline = {t / b:.2f}", flush=True)
    lines = targets(records)
    for line in lines:
        print("# " + line)
    print(f"# wall {time.perf_counter() - t_all:.0f} s, load at end {os.getloadavg()}")
    if args.json:
        from attncert.io import write_json

        write_json(
            args.json,
            {"machine": info, "settings": vars(args), "records": records, "targets": lines},
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
