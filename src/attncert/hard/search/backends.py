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
from attncert.hard.restriction import Restriction
from attncert.hard.search.encode import Encoding


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


def _sat_solve(hard: list[tuple[int, ...]], assumptions: list[int] | None = None):
    from pysat.solvers import Solver

    with Solver(name="g3", bootstrap_with=hard) as s:
        if not s.solve(assumptions=assumptions or []):
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


def solve_maxsat(enc: Encoding, time_limit: float | None) -> SearchResult:
    """Minimize the number of fixed positions (soft ¬x(u, σ)); anytime fallback to a
    plain SAT solution when RC2 does not finish within ``time_limit`` seconds."""
    t0 = time.perf_counter()
    first = _sat_solve(enc.hard)
    if first is None:
        raise NoRestrictionFound("the hard clauses are unsatisfiable")
    soft = [-v for v in enc.bit_vars]
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_rc2_worker, args=(enc.hard, soft, child), daemon=True)
    proc.start()
    child.close()
    got = parent.poll(time_limit) if time_limit is not None else parent.poll(None)
    if got:
        model, cost = parent.recv()
        proc.join()
        return SearchResult(
            enc.invert(model), Method.MAXSAT, True, time.perf_counter() - t0, {"cost": cost}
        )
    proc.kill()
    proc.join()
    fixed = sum(1 for lit in first if lit > 0 and lit in enc.bit_of)
    return SearchResult(
        enc.invert(first),
        Method.MAXSAT,
        False,
        time.perf_counter() - t0,
        {"cost": fixed, "timeout": time_limit, "note": "RC2 timed out; first SAT solution used"},
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
