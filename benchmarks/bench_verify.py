"""Certified accuracy over all |Σ|ⁿ strings (attncert verify, issue 22), measured.

Rows:

* the trained zoo models (LayerNorm/GELU, and the trained hard ones of issue 24) at
  n = 16, 64, 1024: the certified interval (the kernel's
  counts), the undecided measure, and beside it the accuracy sampled on uniform strings
  with the float forward pass (the sample must fall inside); at n = 16 also the exact
  accuracy by brute force over all 65,536 strings and its time (the baseline);
* compiled constructions (Yang et al.) at n = 1024, judged on the DFA of their formula:
  proved correct on all 2¹⁰²⁴ strings, or not, with the time of search + kernel check.

    python benchmarks/bench_verify.py [--json out.json] [--time-limit 60] [--quick]
    python benchmarks/bench_verify.py --models trained_hard_parity --ns 64 1024 --no-compiled
    PYTHONPATH=/tmp/base/src python benchmarks/bench_verify.py ...   # the same cells, another checkout
    python benchmarks/bench_verify.py --compare before.json after.json  # the A/B table
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from attncert.compile import compile_formula
from attncert.io import write_json
from attncert.languages import language
from attncert.languages.dfa import DFA
from attncert.model import forward, zoo_model
from attncert.soft.verify import verify
from attncert.soft.verify.outcome import sci, sci_up

try:  # an upper bound below 1 written 1 − d (an older checkout in an A/B run lacks it)
    from attncert.soft.verify.outcome import sci_up_below_one as _up
except ImportError:  # pragma: no cover
    _up = sci_up

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_certify import machine

TRAINED = (
    ("trained_first_last", "first_last"),
    ("trained_parity", "parity"),
    ("trained_majority", "majority"),
    ("trained_dyck1", "dyck1"),
    # trained hard (softmax at β = 64, issue 24): the bound decides cubes with free positions
    ("trained_hard_first_last", "first_last"),
    ("trained_hard_ones_star", "ones_star"),
    ("trained_hard_parity", "parity"),
    ("trained_hard_majority", "majority"),
    ("trained_hard_dyck1", "dyck1"),
)


def _dfa(name, states, delta, accepting) -> DFA:
    return DFA(tuple(states), ("0", "1"), tuple(delta), 0, frozenset(accepting), name=name)


# formulas whose language at the last position is a small DFA (checked against the logic
# interpreter in tests/test_verify.py for prev Q_1; the others by brute force below)
COMPILED = (
    ("Q_1", _dfa("last1", "01", ((0, 1), (0, 1)), {1})),
    (
        "prev Q_1",
        _dfa(
            "prev1",
            ("s", "0", "1", "00", "01", "10", "11"),
            ((1, 2), (3, 4), (5, 6), (3, 4), (5, 6), (3, 4), (5, 6)),
            {5, 6},
        ),
    ),
    # strict since (Yang et al.): a 0 before the last position, 1s strictly between: at
    # the last position, a 0 among the first n − 1 symbols
    ("Q_1 S Q_0", _dfa("0-before-last", ("no0", "0-last", "ok"), ((1, 0), (2, 2), (2, 2)), {2})),
)
REGIMES = ("temperature", "unbounded", "future-masked", "future-masked-unbounded")


def check_dfas(max_len: int = 8) -> None:
    """Each DFA is its formula's language at the last position (the logic interpreter)."""
    import itertools

    from attncert.logic.interpreter import holds
    from attncert.logic.parser import parse

    for formula, dfa in COMPILED:
        f = parse(formula)
        for n in range(1, max_len + 1):
            for p in itertools.product("01", repeat=n):
                s = "".join(p)
                assert dfa.contains(s) == holds(f, s), (formula, s)


def sampled(model, lang, n: int, count: int = 2000, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    strings = ["".join(rng.choice(list(model.alphabet), n)) for _ in range(count)]
    acc = []
    for k in range(0, count, 250):
        z = forward(model, strings[k : k + 250], keep_attention=False).accept
        acc += [bool(a) == lang.contains(s) for a, s in zip(z, strings[k : k + 250], strict=True)]
    return float(np.mean(acc))


def brute(model, lang, n: int) -> tuple[float, float]:
    import itertools

    t = time.perf_counter()
    strings = ["".join(p) for p in itertools.product(model.alphabet, repeat=n)]
    right = 0
    for k in range(0, len(strings), 4096):
        z = forward(model, strings[k : k + 4096], keep_attention=False).accept
        right += sum(
            bool(a) == lang.contains(s) for a, s in zip(z, strings[k : k + 4096], strict=True)
        )
    return right / len(strings), time.perf_counter() - t


def _cell(r: dict) -> str:
    lv = r["leaves"]
    leaves = f"{lv['bound']}/{lv['exhaustive']}/{lv['open']}"
    und = r.get("undecided", "")
    interval = f"[{r['lower']}, {r['upper']}]" + (
        f", undecided {und}" if und not in ("0", "") else ""
    )
    total = r["search_s"] + r["check_s"]
    return f"{r['verdict']} {interval} | {leaves} | {total:.1f}"


def _witness_text(out) -> str | None:
    """What the witness search found (None for a tree that predates it: an A/B run
    against an older checkout)."""
    ws = getattr(out.stats, "witness", None)
    return ws.text() if ws is not None else None


def compare(base_path: str, new_path: str) -> str:
    """A markdown table: the same cells from two runs (before | after)."""
    with open(base_path) as f:
        base = {(r["model"], r["n"]): r for r in json.load(f)["rows"]}
    with open(new_path) as f:
        new = json.load(f)["rows"]
    out = [
        "| model | n | before: verdict, certified accuracy | leaves b/e/o | s | "
        "after: verdict, certified accuracy | leaves b/e/o | s |",
        "|---|---:|---|---|---:|---|---|---:|",
    ]
    for r in new:
        b = base.get((r["model"], r["n"]))
        out.append(f"| {r['model']} | {r['n']} | {_cell(b) if b else '– | – | –'} | {_cell(r)} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print the A/B table")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="n = 12 and 64 only, two regimes")
    ap.add_argument("--models", nargs="*", help="only these trained models")
    ap.add_argument("--no-compiled", action="store_true")
    ap.add_argument("--ns", nargs="*", type=int, help="only these lengths (trained models)")
    ap.add_argument("--formulas", nargs="*", help="only these compiled formulas")
    ap.add_argument("--regimes", nargs="*", choices=REGIMES, help="only these regimes")
    ap.add_argument(
        "--samples", type=int, default=2000, help="uniform strings for the sampled accuracy"
    )
    args = ap.parse_args()
    if args.compare:
        print(compare(*args.compare))
        return 0
    check_dfas()
    rows = []
    ns = (12, 64) if args.quick else (16, 64, 1024)
    ns = tuple(args.ns) if args.ns else ns
    for name, lang_name in TRAINED:
        if args.models is not None and name not in args.models:
            continue
        model, lang = zoo_model(name), language(lang_name)
        for n in ns:
            # at n ≤ 16 every cube ends in string-by-string evaluation: give it the time
            limit = max(args.time_limit, 600.0) if n <= 16 else args.time_limit
            out = verify(model, lang, n, time_limit=limit, progress=False)
            row = {
                "kind": "trained",
                "model": name,
                "language": lang_name,
                "n": n,
                "verdict": out.verdict,
                "lower": sci(out.lower),
                "upper": _up(out.upper),
                "undecided": _up(out.undecided),
                "sampled": sampled(model, lang, n, args.samples),
                "leaves": out.leaf_counts(),
                "search_s": round(out.search_seconds, 1),
                "check_s": round(out.check_seconds, 1),
                "proved": out.proved,
                "witness_search": _witness_text(out),
            }
            if n <= 16:
                row["exact"], row["brute_s"] = brute(model, lang, n)
                row["exact"] = round(row["exact"], 6)
                row["brute_s"] = round(row["brute_s"], 1)
            assert (
                float(out.lower) <= row["sampled"] + 0.05
                and row["sampled"] <= float(out.upper) + 0.05
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
    for formula, dfa in () if args.no_compiled else COMPILED:
        if args.formulas is not None and formula not in args.formulas:
            continue
        for regime in args.regimes or (REGIMES[:2] if args.quick else REGIMES):
            model = compile_formula(formula, regime, alphabet="01")
            for n in (64,) if args.quick else (1024,):
                t = time.perf_counter()
                out = verify(model, dfa, n, time_limit=args.time_limit, progress=False)
                row = {
                    "kind": "compiled",
                    "model": f"{formula} [{regime}]",
                    "language": dfa.name,
                    "n": n,
                    "verdict": out.verdict,
                    "lower": sci(out.lower),
                    "upper": _up(out.upper),
                    "undecided": _up(out.undecided),
                    "leaves": out.leaf_counts(),
                    "search_s": round(out.search_seconds, 1),
                    "check_s": round(out.check_seconds, 1),
                    "total_s": round(time.perf_counter() - t, 1),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:  # the machine record every benchmark writes (CPU, load, versions)
        meta = dict(machine(), package=os.path.dirname(sys.modules["attncert"].__file__))
        write_json(args.json, {"meta": meta, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
