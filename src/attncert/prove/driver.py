"""``prove_agreement``: the bounded agreement proof, one length at a time.

For each n ≤ N the decomposed prover (:mod:`attncert.prove.layer`) runs first. If it
proves every claim, the length is *proved*. If a query is ``sat``, the atom values are
turned into candidate strings (plus random ones), screened with the float forward pass
and **confirmed by interval evaluation** (:func:`attncert.prove.enumerate.recheck`); only
a confirmed disagreement is reported as a counterexample. When the structured proof
cannot conclude (unsupported shape, possible tie, error bound too loose for a row, or
an unconfirmed abstract counterexample) and |Σ|ⁿ is small, every string is checked by
interval evaluation instead (the per-string fallback); otherwise the length is
*unknown* (one length: :mod:`attncert.prove.length`). Lengths are independent and run in
parallel processes (``jobs``), or as tasks on a Dask cluster (``dask=True`` for an
embedded LocalCluster of ``jobs`` workers, ``scheduler="tcp://…"`` for an existing one;
:mod:`attncert.prove.cluster`).
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attncert.errors import InputError, ParameterError
from attncert.logic import syntax as s
from attncert.logic.parser import parse
from attncert.model.spec import Model
from attncert.prove.coordinate import designated_coordinate
from attncert.prove.length import build_plan, prove_length, set_state
from attncert.prove.result import LengthResult, ProofResult

FALLBACK_STRINGS = 2**14


# ----- process pool -------------------------------------------------------------------------------


def _worker_setup(*args: Any) -> None:
    """Pool initializer: workers ignore SIGINT. A Ctrl-C reaches the whole process group;
    only the parent acts on it (it terminates the pool and exits with status 130), so no
    worker prints a "Process ForkPoolWorker-…" traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_state(*args)


def _fork_pool(ctx, jobs: int, state: tuple):
    """A fork pool whose workers ignore SIGINT from their first instruction: the parent
    ignores it while forking, so each child inherits SIG_IGN before it can hold a lock of
    the pool's task queue (a Ctrl-C that killed a worker holding that lock left
    ``Pool.terminate`` waiting for it forever). The parent's handler is restored at once."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        return ctx.Pool(jobs, initializer=_worker_setup, initargs=state)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


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
    dask: bool = False,
    scheduler: str | None = None,
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

    ``jobs`` processes share the lengths (a local process pool); with ``dask=True`` they
    are tasks on an embedded Dask LocalCluster of ``jobs`` workers, with
    ``scheduler=ADDRESS`` on an existing cluster (``smt2_dir`` is then a path on the
    workers).
    """
    f = parse(formula) if isinstance(formula, str) else formula
    if not isinstance(f, s.Formula):
        raise InputError(f"not a formula: {formula!r}", where="formula")
    if max_len < 1 or min_len < 1 or min_len > max_len:
        raise ParameterError(
            f"lengths {min_len}..{max_len}", where="max_len", expected="1 ≤ min_len ≤ max_len"
        )
    from attncert import limits

    limits.check_at_most(
        max_len,
        limits.PROVE_MAX_LEN,
        what="max_len",
        reason="the z3 prover's per-length proofs grow too fast beyond it",
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
    plan, why = build_plan(model, f, coord, claims)
    if why:
        notes.append(f"decomposed prover unavailable: {why}")
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
        if dask or scheduler is not None:
            from attncert.prove.cluster import payload, prove_lengths

            done, where = prove_lengths(
                payload(model, f, coord, claims, opts),
                ns,
                scheduler=scheduler,
                workers=jobs,
                on_result=(lambda _r: bar.update()) if bar else None,
            )
            results += done
            notes.append(f"lengths ran as tasks on Dask: {where}")
        elif jobs == 1 or len(ns) == 1:
            set_state(model, f, plan, opts)
            for n in ns:
                results.append(prove_length(n))
                if bar:
                    bar.update()
        else:
            ctx = mp.get_context("fork")
            # leaving the block (also on KeyboardInterrupt) terminates the workers
            with _fork_pool(ctx, jobs, (model, f, plan, opts)) as pool:
                for r in pool.imap_unordered(prove_length, ns):
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
