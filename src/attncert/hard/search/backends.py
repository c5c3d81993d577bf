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

__implements__ = ("Hahn S1 Definition 19",)


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


def _limited_solve(solver, seconds: float | None, assumptions: list[int] = ()) -> bool | None:
    """``solver.solve`` under ``assumptions`` interrupted after ``seconds`` (None: no
    limit): True/False, or None if interrupted (or no time was left to start)."""
    import threading

    if seconds is None:
        return solver.solve(assumptions=list(assumptions))
    if seconds <= 0:
        return None
    timer = threading.Timer(seconds, solver.interrupt)
    timer.start()
    try:
        return solver.solve_limited(assumptions=list(assumptions), expect_interrupt=True)
    finally:
        timer.cancel()
        solver.clear_interrupt()


class _Clock:
    """The deadline of one MaxSAT solve and the record of its phases.

    Every phase starts by asking :meth:`left` and gives its solver calls at most that
    long; the record says, per phase, the budget it had when it started, the seconds it
    took and whether the deadline stopped it — so a caller (and a test) can see that the
    limit was honoured in every phase without relying on wall time alone."""

    def __init__(self, time_limit: float | None):
        self.t0 = time.monotonic()
        self.deadline = None if time_limit is None else self.t0 + time_limit
        self.phases: list[dict] = []

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def begin(self, name: str) -> dict:
        left = self.left()
        rec = {
            "phase": name,
            "budget": None if left is None else round(max(0.0, left), 4),
            "start": round(time.monotonic() - self.t0, 4),
            "stopped_by_deadline": False,
        }
        self.phases.append(rec)
        return rec

    def end(self, rec: dict, *, stopped: bool = False) -> None:
        rec["seconds"] = round(time.monotonic() - self.t0 - rec["start"], 4)
        rec["stopped_by_deadline"] = bool(stopped)


def _rc2_worker(hard, soft, conn) -> None:  # pragma: no cover - runs in a child process
    """Solve with RC2 and send (model, cost, time.monotonic() when it finished): the
    parent accepts the optimum only if it was reached before its deadline."""
    from pysat.examples.rc2 import RC2
    from pysat.formula import WCNF

    w = WCNF()
    for cl in hard:
        w.append(list(cl))
    for lit in soft:
        w.append([lit], weight=1)
    with RC2(w, solver="g3", adapt=True, exhaust=True, minz=True) as rc2:
        model = rc2.compute()
        conn.send((model, rc2.cost, time.monotonic()))
    conn.close()


def _cost(enc: Encoding, model: list[int]) -> int:
    return sum(1 for lit in model if lit > 0 and lit in enc.bit_of)


#: Most seconds the local minimisation of the first model may take (within the limit).
MINIMISE_SECONDS = 5.0


class _LinearSearch:
    """Anytime upper bound: a SAT solver with an incremental totalizer over the x-variables,
    asked again and again for a model fixing fewer positions than the best so far. Every
    solver call is interrupted at the clock's deadline."""

    def __init__(self, enc: Encoding, clock: _Clock):
        from pysat.solvers import Solver

        self.enc = enc
        self.clock = clock
        self.solver = Solver(name="g3", bootstrap_with=enc.hard)
        self.solver.set_phases([-v for v in enc.bit_vars])
        self.tot = None
        self.best: list[int] | None = None
        self.cost = 0
        self.optimal = False

    def first(self) -> bool:
        """Phase "first model": any model of the hard clauses. False if the deadline came
        first; NoRestrictionFound if there is none."""
        rec = self.clock.begin("first model")
        ok = _limited_solve(self.solver, self.clock.left())
        self.clock.end(rec, stopped=ok is None)
        if ok is None:
            return False
        if not ok:
            raise NoRestrictionFound("the hard clauses are unsatisfiable")
        self._accept(self.solver.get_model())
        return True

    def _accept(self, model: list[int]) -> None:
        self.best = model
        self.cost = _cost(self.enc, model)
        self.optimal = self.cost == 0

    def minimise(self) -> None:
        """Phase "minimise": free each fixed position in turn if the others suffice, for
        at most MINIMISE_SECONDS and never past the deadline."""
        rec = self.clock.begin("minimise")
        left = self.clock.left()
        stop = time.monotonic() + (
            MINIMISE_SECONDS if left is None else min(MINIMISE_SECONDS, left)
        )
        stopped = False
        model = self.best
        keep = {v for v in self.enc.bit_vars if model[v - 1] > 0}
        for v in sorted(keep):
            budget = stop - time.monotonic()
            if budget <= 0:
                stopped = self.clock.expired()
                break
            keep.discard(v)
            assumptions = [b if b in keep else -b for b in self.enc.bit_vars]
            ok = _limited_solve(self.solver, budget, assumptions)
            if ok is None:
                keep.add(v)
                stopped = self.clock.expired()
                break
            if ok:
                model = self.solver.get_model()
                keep = {b for b in self.enc.bit_vars if model[b - 1] > 0}
            else:
                keep.add(v)
        self._accept(model)
        self.clock.end(rec, stopped=stopped)

    def improve(self, seconds: float) -> bool | None:
        """Tighten the bound once: True improved, False proved optimal, None interrupted."""
        from pysat.card import ITotalizer

        if self.tot is None:
            self.tot = ITotalizer(
                lits=self.enc.bit_vars, ubound=max(1, self.cost), top_id=self.enc.top
            )
            for cl in self.tot.cnf.clauses:
                self.solver.add_clause(cl)
        ok = _limited_solve(self.solver, seconds, [-self.tot.rhs[self.cost - 1]])
        if ok is None:
            return None
        if not ok:
            self.optimal = True
            return False
        self._accept(self.solver.get_model())
        return True

    def close(self) -> None:
        if self.tot is not None:
            self.tot.delete()
        self.solver.delete()


def solve_maxsat(enc: Encoding, time_limit: float | None) -> SearchResult:
    """Minimize the number of fixed positions (soft ¬x(u, σ)) within ``time_limit`` seconds.

    Phases, each given only the time that is left (recorded in ``detail["phases"]``):
    *first model* (any model of the hard clauses; if the deadline comes first, a
    :class:`~attncert.errors.SolverTimeout`); *minimise* (local minimisation of that
    model); *search* — RC2 (with ``adapt``, ``exhaust``, ``minz``) in a child process
    while this process tightens an anytime upper bound by linear SAT–UNSAT search. The
    answer is RC2's optimum if RC2 finished before the deadline, the linear search's if it
    proved optimality first, else the best model so far, marked not optimal."""
    clock = _Clock(time_limit)
    linear = _LinearSearch(enc, clock)
    proc = parent = None
    try:
        if not linear.first():
            raise timeout_error("Stage 3 (MaxSAT: no restriction found yet)", time_limit or 0.0)
        if not linear.optimal and not clock.expired():
            # start RC2 before minimising, so that it works while this process does
            ctx = mp.get_context("fork")
            parent, child = ctx.Pipe(duplex=False)
            soft = [-v for v in enc.bit_vars]
            proc = ctx.Process(target=_rc2_worker, args=(enc.hard, soft, child), daemon=True)
            proc.start()
            child.close()
            linear.minimise()
        rec = clock.begin("search")
        while True:
            left = clock.left()
            wait = 0.05 if left is None else max(0.0, min(0.05, left))
            if parent is not None and parent.poll(wait):
                model, cost, finished = parent.recv()
                if clock.deadline is None or finished <= clock.deadline:
                    clock.end(rec)
                    return _result(enc, model, True, clock, {"cost": cost})
                parent = None  # RC2 finished after the deadline: not used
            if linear.optimal:
                clock.end(rec)
                return _result(
                    enc,
                    linear.best,
                    True,
                    clock,
                    {"cost": linear.cost, "note": "optimum proved by linear search"},
                )
            left = clock.left()
            if left is not None and left <= 0:
                clock.end(rec, stopped=True)
                return _result(
                    enc,
                    linear.best,
                    False,
                    clock,
                    {
                        "cost": linear.cost,
                        "timeout": time_limit,
                        "note": "time limit reached before an optimum was proved; best model "
                        "of the linear search used",
                    },
                )
            linear.improve(1.0 if left is None else min(1.0, left))
    finally:
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join()
        linear.close()


def _result(enc: Encoding, model, optimal: bool, clock: _Clock, detail: dict) -> SearchResult:
    detail = {**detail, "phases": clock.phases}
    seconds = time.monotonic() - clock.t0
    return SearchResult(enc.invert(model), Method.MAXSAT, optimal, seconds, detail)


def solve_sat(enc: Encoding, bound: int, time_limit: float | None = None) -> SearchResult:
    """Any restriction fixing at most ``bound`` more positions (the LLL's event X₀ avoided);
    a :class:`~attncert.errors.SolverTimeout` if none is found within ``time_limit``."""
    from pysat.card import CardEnc, EncType
    from pysat.solvers import Solver

    t0 = time.perf_counter()
    lits = enc.bit_vars
    hard = list(enc.hard)
    if bound < len(lits):
        card = CardEnc.atmost(lits=lits, bound=bound, top_id=enc.top, encoding=EncType.seqcounter)
        hard += [tuple(c) for c in card.clauses]
    with Solver(name="g3", bootstrap_with=hard) as solver:
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        ok = _limited_solve(solver, left)
        model = solver.get_model() if ok else None
    if ok is None:
        raise timeout_error("Stage 3 (SAT)", time_limit or 0.0)
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
