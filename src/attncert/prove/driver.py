"""``prove_agreement``: the bounded agreement proof, one length at a time.

For each n ≤ N the decomposed prover (:mod:`attncert.prove.layer`) runs first. If it
proves every claim, the length is *proved*. If a query is ``sat``, the atom values are
turned into candidate strings (plus random ones), screened with the float forward pass
and **confirmed by interval evaluation** (:func:`attncert.prove.enumerate.recheck`); only
a confirmed disagreement is reported as a counterexample. When the structured proof
cannot conclude (unsupported shape, possible tie, error bound too loose for a row, or
an unconfirmed abstract counterexample) and |Σ|ⁿ is small, every string is checked by
interval evaluation instead (the per-string fallback); otherwise the length is
*unknown*. Lengths are independent and run in parallel processes (``jobs``).
"""

from __future__ import annotations

import multiprocessing as mp
import random
import re
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from attncert.errors import InputError, ParameterError
from attncert.logic import syntax as s
from attncert.logic.interpreter import evaluate_batch
from attncert.logic.parser import parse
from attncert.model.forward import forward_tokens
from attncert.model.spec import Model
from attncert.prove.coordinate import designated_coordinate
from attncert.prove.enumerate import enumerate_agreement, recheck
from attncert.prove.gaps import PossibleTie, Unsupported
from attncert.prove.layer import LengthProver
from attncert.prove.result import HeadSummary, LengthResult, ProofResult
from attncert.prove.structure import Plan, build_claims

FALLBACK_STRINGS = 2**14
_SYM = re.compile(r"x(\d+)_(\d+)")
SEARCH_STRINGS = 256


# ----- one length ------------------------------------------------------------------------------

_STATE: dict[str, Any] = {}


def _setup(model: Model, formula: s.Formula, plan: Plan | None, opts: dict[str, Any]) -> None:
    _STATE.update(model=model, formula=formula, plan=plan, opts=opts)


def _worker_setup(*args: Any) -> None:
    """Pool initializer: workers ignore SIGINT. A Ctrl-C reaches the whole process group;
    only the parent acts on it (it terminates the pool and exits with status 130), so no
    worker prints a "Process ForkPoolWorker-…" traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _setup(*args)


def _one(n: int) -> LengthResult:
    st = _STATE
    model, formula, plan, o = st["model"], st["formula"], st["plan"], st["opts"]
    t0 = time.perf_counter()
    reason = ""
    queries: tuple = ()
    heads: tuple = ()
    hint: list[dict[str, Any]] = []
    verdict, method, cex = "unknown", "none", None
    if plan is not None:
        lp = LengthProver(
            plan,
            n,
            last_only=o["last_only"],
            timeout_ms=o["timeout_ms"],
            smt2_dir=o["smt2_dir"],
        )
        try:
            ok = lp.run()
        except (Unsupported, PossibleTie) as err:
            ok, reason = False, f"{type(err).__name__}: {err}"
        queries = tuple(r.to_dict() for r in lp.records)
        heads = tuple(
            HeadSummary(
                h.layer,
                h.head,
                h.method or "exact",
                None if h.min_gap is None else str(h.min_gap),
                None if h.min_gap is None else float(h.min_gap),
                float(h.max_eps),
            )
            for h in lp.head_stats
        )
        if ok:
            verdict, method = "proved", "decomposed"
        elif lp.failure is not None:
            f = lp.failure
            reason = f"claim {f.claim.text!r} at row {f.row}: " + (
                "the error bound is too large for the rounding"
                if f.robust_only
                else "the hard computation disagrees"
            )
            hint = [f.model]
        elif lp.unknown:
            reason = lp.unknown
    if verdict != "proved":
        found = _search(model, formula, n, o, hint)
        if found is not None:
            verdict, method, cex = "counterexample", "search", found.to_dict()
        elif len(model.alphabet) ** n <= o["fallback_strings"]:
            res = enumerate_agreement(model, formula, n, coord=o["coord"], last_only=o["last_only"])
            verdict, method = res.verdict, "enumeration"
            if res.counterexample is not None:
                cex = res.counterexample.to_dict()
            if res.undecided:
                reason += f"; {len(res.undecided)} strings undecided by intervals"
        else:
            reason = reason or "no proof"
            reason += f"; |Σ|^n = {len(model.alphabet) ** n} strings exceed the enumeration budget"
    cross = None
    if n <= o["cross_check"]:
        res = enumerate_agreement(model, formula, n, coord=o["coord"], last_only=o["last_only"])
        cross = "agree" if res.verdict == verdict else f"disagree: enumeration says {res.verdict}"
    return LengthResult(
        n, verdict, method, time.perf_counter() - t0, queries, heads, cex, reason.strip("; "), cross
    )


def _search(model, formula, n, o, hints) -> Any:
    """Candidate strings from z3 models and random draws; float screen, interval confirm."""
    alpha = model.alphabet
    rng = random.Random(n)
    cands: list[str] = []
    for h in hints:
        fixed = {}
        for k, v in (h or {}).items():
            m = _SYM.fullmatch(k)
            if m and v is True:
                j, a = int(m.group(1)), int(m.group(2))
                if 1 <= j <= n and 0 <= a < len(alpha):
                    fixed[j] = alpha[a]
        for a in alpha:
            cands.append("".join(fixed.get(j, a) for j in range(1, n + 1)))
        for _ in range(32):
            cands.append("".join(fixed.get(j, rng.choice(alpha)) for j in range(1, n + 1)))
    for _ in range(SEARCH_STRINGS if not hints else 64):
        cands.append("".join(rng.choice(alpha) for _ in range(n)))
    cands = list(dict.fromkeys(cands))
    coord = o["coord"]
    tokens = np.array([model.encode(w) for w in cands], dtype=np.int64)
    out = forward_tokens(model, tokens).final[:, :, coord]
    off = model.input_offset()
    got = out[:, off : off + n] > 0.5
    truth = evaluate_batch(formula, cands)
    if o["last_only"]:
        bad = np.flatnonzero(got[:, -1] != truth[:, -1])
    else:
        bad = np.flatnonzero(np.any(got != truth, axis=1))
    # near-threshold strings are worth an interval check too
    near = np.flatnonzero(np.any(np.abs(out[:, off : off + n] - 0.5) < 1e-6, axis=1))
    for b in list(bad[:16]) + list(near[:4]):
        r = recheck(model, formula, cands[b], coord, o["last_only"])
        if r is not None and r != "undecided":
            return r
    return None


# ----- the public entry point ---------------------------------------------------------------------


def prove_agreement(
    formula: s.Formula | str,
    model: Model | None = None,
    *,
    max_len: int,
    min_len: int = 1,
    regime: str = "temperature",
    alphabet: str | None = None,
    coordinate: int | None = None,
    positions: str = "all",
    claims: Mapping[int, s.Formula | str] | None = None,
    jobs: int = 1,
    smt2_dir: str | Path | None = None,
    timeout: float = 60.0,
    cross_check: int = 0,
    fallback_strings: int = FALLBACK_STRINGS,
    progress: bool = False,
) -> ProofResult:
    """Prove that the rounded output of ``model`` at its designated coordinate equals
    ``formula`` on every string of every length ``min_len…max_len`` (at every position,
    or only the last with ``positions="last"``).

    Without ``model`` the formula is compiled (:func:`attncert.compile_formula`, given
    ``regime`` and ``alphabet``). A compiled model's recorded nodes serve as the
    intermediate claims; other models may pass ``claims={coord: subformula}`` (checked,
    not trusted). ``cross_check=k`` re-decides every n ≤ k by exhaustive interval
    enumeration and records whether the verdicts agree. Each ``.smt2`` query is written to
    ``smt2_dir`` if given; ``timeout`` is per query (seconds).
    """
    f = parse(formula) if isinstance(formula, str) else formula
    if not isinstance(f, s.Formula):
        raise InputError(f"not a formula: {formula!r}", where="formula")
    if max_len < 1 or min_len < 1 or min_len > max_len:
        raise ParameterError(
            f"lengths {min_len}..{max_len}", where="max_len", expected="1 ≤ min_len ≤ max_len"
        )
    if positions not in ("all", "last"):
        raise InputError(f"positions={positions!r}", where="positions", expected="'all' or 'last'")
    if jobs < 1:
        raise ParameterError(f"jobs={jobs}", where="jobs", expected="≥ 1")
    notes = []
    if model is None:
        from attncert.compile import compile_formula

        model = compile_formula(f, regime=regime, alphabet=alphabet)
    coord = designated_coordinate(model) if coordinate is None else int(coordinate)
    if not 0 <= coord < model.d:
        raise InputError(f"coordinate {coord} outside 0..{model.d - 1}", where="coordinate")
    missing = {a.symbol for a in f.subformulas() if isinstance(a, s.Atom)} - set(model.alphabet)
    if missing:
        notes.append(f"symbols {sorted(missing)} are not in the model's alphabet (always false)")
    plan = None
    try:
        plan = Plan(model, build_claims(model, f, coord, claims))
    except Unsupported as err:
        notes.append(f"decomposed prover unavailable: {err}")
    except Exception as err:  # UnsupportedError from Plan
        from attncert.errors import UnsupportedError

        if not isinstance(err, UnsupportedError):
            raise
        notes.append(f"decomposed prover unavailable: {err.message}")
    if smt2_dir is not None:
        Path(smt2_dir).mkdir(parents=True, exist_ok=True)
    opts = {
        "last_only": positions == "last",
        "timeout_ms": int(timeout * 1000),
        "smt2_dir": Path(smt2_dir) if smt2_dir is not None else None,
        "coord": coord,
        "cross_check": cross_check,
        "fallback_strings": fallback_strings,
    }
    ns = list(range(max_len, min_len - 1, -1))  # big lengths first: better load balance
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(ns), desc="prove", unit="n", file=sys.stderr, leave=False)
    results: list[LengthResult] = []
    try:
        if jobs == 1 or len(ns) == 1:
            _setup(model, f, plan, opts)
            for n in ns:
                results.append(_one(n))
                if bar:
                    bar.update()
        else:
            ctx = mp.get_context("fork")
            # leaving the block (also on KeyboardInterrupt) terminates the workers
            with ctx.Pool(jobs, initializer=_worker_setup, initargs=(model, f, plan, opts)) as pool:
                for r in pool.imap_unordered(_one, ns):
                    results.append(r)
                    if bar:
                        bar.update()
    finally:
        if bar:
            bar.close()
    results.sort(key=lambda r: r.n)
    return ProofResult(
        formula=str(f),
        model=model.name,
        digest=model.digest,
        coordinate=coord,
        positions=positions,
        max_len=max_len,
        lengths=tuple(results),
        seconds=time.perf_counter() - t0,
        jobs=jobs,
        notes=tuple(notes),
    )
