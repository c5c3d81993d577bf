"""Stage 3 back-ends: MaxSAT (default), SAT with a cardinality bound, and the
paper's random restriction (Hahn 2020, Stage 3 / supplement Definition 19) as a
baseline. All are untrusted; they return a proposed restriction."""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass
from enum import Enum

import numpy as np

from attncert.errors import SolverTimeout
from attncert.hard.search.encode import Encoding
from attncert.restriction import Restriction


class Method(str, Enum):
    MAXSAT = "maxsat"
    SAT = "sat"
    RANDOM = "random"


@dataclass(frozen=True)
class SearchResult:
    restriction: Restriction
    method: Method
    optimal: bool  # MaxSAT proved the number of fixed positions minimal for this encoding
    seconds: float
    detail: dict


class NoRestrictionFound(Exception):
    """The back-end found no restriction (unsatisfiable bound, or random draws all failed)."""


def _sat_solve(hard: list[tuple[int, ...]], prefer_false: list[int] | None = None):
    """A model of ``hard`` (phases preferring ``prefer_false`` variables false), or None."""
    from pysat.solvers import Solver

    with Solver(name="g3", bootstrap_with=hard) as s:
        if prefer_false:
            s.set_phases([-v for v in prefer_false])
        if not s.solve():
            return None
        return s.get_model()


def _rc2_worker(hard, soft, conn) -> None:  # pragma: no cover - runs in a child process
    from pysat.examples.rc2 import RC2
    from pysat.formula import WCNF

    w = WCNF()
    for cl in hard:
        w.append(list(cl))
    for lit in soft:
        w.append([lit], weight=1)
    with RC2(w, solver="g3", adapt=True, exhaust=True, minz=True) as rc2:
        model = rc2.compute()
        conn.send((model, rc2.cost))
    conn.close()


def _cost(enc: Encoding, model: list[int]) -> int:
    return sum(1 for lit in model if lit > 0 and lit in enc.bit_of)


def _unfix(enc: Encoding, model: list[int], seconds: float = 5.0) -> list[int]:
    """Local minimization of a model: free each fixed position in turn if the others
    suffice (incremental SAT under assumptions), for at most ``seconds``."""
    from pysat.solvers import Solver

    deadline = time.perf_counter() + seconds
    with Solver(name="g3", bootstrap_with=enc.hard) as solver:
        fixed = [v for v in enc.bit_vars if model[v - 1] > 0]
        keep = set(fixed)
        for v in fixed:
            if time.perf_counter() > deadline:
                break
            keep.discard(v)
            assumptions = [b if b in keep else -b for b in enc.bit_vars]
            if solver.solve(assumptions=assumptions):
                model = solver.get_model()
                keep = {b for b in enc.bit_vars if model[b - 1] > 0}
            else:
                keep.add(v)
    return model


def solve_maxsat(enc: Encoding, time_limit: float | None) -> SearchResult:
    """Minimize the number of fixed positions (soft ¬x(u, σ)).

    RC2 (with ``adapt``, ``exhaust``, ``minz``) runs in a child process (killable at the
    time limit). The answer is RC2's optimum if it finishes within ``time_limit``, else
    a first SAT model of the hard clauses, locally minimized (each fixed position freed
    if the others suffice) — not optimal, and marked so."""
    t0 = time.perf_counter()
    first = _sat_solve(enc.hard, enc.bit_vars)
    if first is None:
        raise NoRestrictionFound("the hard clauses are unsatisfiable")
    soft = [-v for v in enc.bit_vars]
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_rc2_worker, args=(enc.hard, soft, child), daemon=True)
    proc.start()
    child.close()
    try:
        left = None if time_limit is None else max(0.0, t0 + time_limit - time.perf_counter())
        if parent.poll(left):
            model, cost = parent.recv()
            proc.join()
            return SearchResult(
                enc.invert(model), Method.MAXSAT, True, time.perf_counter() - t0, {"cost": cost}
            )
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
    best = _unfix(enc, first)
    return SearchResult(
        enc.invert(best),
        Method.MAXSAT,
        False,
        time.perf_counter() - t0,
        {
            "cost": _cost(enc, best),
            "timeout": time_limit,
            "note": "RC2 timed out; a locally minimal model used",
        },
    )


def solve_sat(enc: Encoding, bound: int) -> SearchResult:
    """Any restriction fixing at most ``bound`` more positions (the LLL's event X₀ avoided)."""
    from pysat.card import CardEnc, EncType

    t0 = time.perf_counter()
    lits = enc.bit_vars
    hard = list(enc.hard)
    if bound < len(lits):
        card = CardEnc.atmost(lits=lits, bound=bound, top_id=enc.top, encoding=EncType.seqcounter)
        hard += [tuple(c) for c in card.clauses]
    model = _sat_solve(hard)
    if model is None:
        raise NoRestrictionFound(f"no restriction fixing at most {bound} more positions")
    return SearchResult(
        enc.invert(model), Method.SAT, False, time.perf_counter() - t0, {"bound": bound}
    )


def solve_random(
    enc: Encoding, q: float, bound: int, retries: int, seed: int, deadline: float | None = None
) -> SearchResult:
    """The paper's random restriction: each free position fixed with probability q to a
    uniform symbol; a draw succeeds when the hard clauses hold with the x-variables set by
    the draw (checked by unit propagation in an incremental SAT solver) and at most
    ``bound`` positions are fixed (event X₀ avoided)."""
    from pysat.solvers import Solver

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    rho = enc.rho
    free = np.array(rho.free_positions, dtype=np.int64)
    base = len(rho.symbols)
    successes = 0
    first_success = None
    tries = 0
    with Solver(name="g3", bootstrap_with=enc.hard) as solver:
        for _ in range(retries):
            if deadline is not None and time.perf_counter() > deadline:
                break
            tries += 1
            fixed_mask = rng.random(len(free)) < q
            symbols = rng.integers(0, base, size=len(free))
            if fixed_mask.sum() > bound:
                continue
            chosen = {
                int(u): int(s) for u, s, f in zip(free, symbols, fixed_mask, strict=True) if f
            }
            assumptions = [
                v if chosen.get(u) == sigma else -v for (u, sigma), v in enc.var_of.items()
            ]
            if solver.solve(assumptions=assumptions):
                successes += 1
                if first_success is None:
                    first_success = rho.fix({u: rho.symbols[s] for u, s in chosen.items()})
    detail = {"tries": tries, "successes": successes, "q": q, "rate": successes / max(1, tries)}
    if first_success is None:
        raise NoRestrictionFound(f"0 of {tries} random restrictions (q = {q}) captured every head")
    return SearchResult(first_success, Method.RANDOM, False, time.perf_counter() - t0, detail)


def timeout_error(what: str, seconds: float) -> SolverTimeout:
    return SolverTimeout(
        f"{what} hit the time limit of {seconds:g} s", expected="a larger --time-limit"
    )
