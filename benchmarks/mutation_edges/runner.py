"""The fork server: one process that has imported pytest, numpy, python-flint, attncert and
the selected test modules (by collecting them) forks once per mutant.

The child swaps the ``__code__`` of the live function object(s) of the mutant's outermost
``def`` (a nested def's code is a constant inside it; a method is found as the function
behind the class attribute, a property, a ``functools`` wrapper…: every live function
object whose code is the original's), which every reference sees — ``from x import f``
copies and bound methods included. It then clears the function caches (the parent's
imports may have filled them with the original code's values) and runs the mutant's tests,
already collected, through pytest's own ``runtestprotocol`` — fixtures, markers, ``xfail``
and captured output as in a normal run — stopping at the first failure. It reports over a
pipe; the parent kills a child past its deadline (*timeout*) and counts a child that dies
without a verdict as *crash*; both kill the mutant. At most ``workers`` children at once.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _pytest.runner import runtestprotocol

from .mutants import SLACK_NAME, shift
from .testmap import clear_caches


@dataclass
class Job:
    """One child's work: a mutant (or, for the baseline, none) and its ordered tests."""

    key: str
    tests: list[str]
    timeout: float
    module: str | None = None  # arith/filter
    import_name: str | None = None  # attncert.arith.filter
    path: str | None = None  # the module file, as its code objects name it
    unit: str | None = None  # qualname of the def whose code is swapped
    first: int = 0  # its first line
    text: str | None = None  # the mutated module source
    stop_at_failure: bool = True
    result: dict = field(default_factory=dict)


def _codes(code: types.CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def find_code(module_code: types.CodeType, qualname: str, first: int) -> types.CodeType:
    found = [c for c in _codes(module_code) if c.co_qualname == qualname]
    if len(found) > 1:
        found = [c for c in found if c.co_firstlineno == first]
    if len(found) != 1:
        raise LookupError(f"{len(found)} code objects named {qualname} at line {first}")
    return found[0]


class Functions:
    """Every live function object, by (file, qualname, first line) of its code."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str, int], list[types.FunctionType]] = {}
        for obj in gc.get_objects():
            if isinstance(obj, types.FunctionType):
                c = obj.__code__
                self.by_key.setdefault((c.co_filename, c.co_qualname, c.co_firstlineno), []).append(
                    obj
                )

    def live(self, path: str, qualname: str, first: int) -> list[types.FunctionType]:
        return self.by_key.get((path, qualname, first), [])


@functools.lru_cache(maxsize=8)
def _compiled(path: str, text: str) -> types.CodeType:
    return compile(text, path, "exec", dont_inherit=True)


def check_live(functions: Functions, path: str, original: str, unit: str, first: int) -> str:
    """'' if the imported module's code of ``unit`` is what ``original`` compiles to, else why."""
    try:
        want = find_code(_compiled(path, original), unit, first)
    except (LookupError, SyntaxError) as err:
        return str(err)
    live = functions.live(path, unit, first)
    if not live:
        return f"no live function {unit} (line {first}) in the imported module"
    if any(
        f.__code__.co_code != want.co_code or f.__code__.co_names != want.co_names for f in live
    ):
        return f"{unit}: the imported code differs from the source on disk (edited since?)"
    return ""


def apply(job: Job, functions: Functions) -> None:
    """Swap in the mutant's code (in the child)."""
    new = find_code(compile(job.text, job.path, "exec", dont_inherit=True), job.unit, job.first)
    live = functions.live(job.path, job.unit, job.first)
    if not live:
        raise LookupError(f"no live function {job.unit}")
    for f in live:
        f.__code__ = new
    setattr(importlib.import_module(job.import_name), SLACK_NAME, shift)


def _failure(reports) -> str:
    for r in reports:
        if r.failed:
            crash = getattr(r.longrepr, "reprcrash", None)
            text = crash.message if crash is not None else str(r.longrepr).strip().splitlines()[-1]
            return f"{r.when}: {text.splitlines()[0] if text else ''}"[:300]
    return ""


def _child(job: Job, items: dict, functions: Functions, wfd: int, basetemp: Path) -> None:
    """Runs in the forked child; never returns."""

    def send(msg: dict) -> None:
        os.write(wfd, (json.dumps(msg) + "\n").encode())

    code = 0
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        if job.text is not None:
            try:
                apply(job, functions)
            except Exception as err:  # the mutant cannot be applied: say so, never "killed"
                send({"status": "error", "why": f"{type(err).__name__}: {err}"})
                os._exit(0)
        clear_caches()
        # tmp_path & co. under a directory of this child's own (the parent removes it):
        # pytest's numbered directories would otherwise pile up, one per mutant, each
        # locked by a process that never ran its exit handlers
        if items:
            factory = next(iter(items.values())).config._tmp_path_factory
            factory._given_basetemp, factory._basetemp = basetemp, None
        send({"event": "applied", "t": time.time()})
        tests = job.tests
        for i, nodeid in enumerate(tests):
            item = items[nodeid]
            nxt = items[tests[i + 1]] if i + 1 < len(tests) else None
            send({"event": "start", "test": nodeid})
            t0 = time.perf_counter()
            reports = runtestprotocol(item, log=False, nextitem=nxt)
            why = _failure(reports)
            setup = sum(r.duration for r in reports if r.when == "setup")
            s = time.perf_counter() - t0
            send({"event": "done", "test": nodeid, "s": s, "setup": setup, "why": why})
            if why and job.stop_at_failure:
                send({"status": "killed", "test": nodeid, "why": why})
                os._exit(0)
        send({"status": "survived"})
    except BaseException as err:
        try:
            send({"status": "crash", "why": f"{type(err).__name__}: {err}"[:300]})
        except BaseException:
            code = 3
    os._exit(code)


def _terminate(signum, frame):
    raise SystemExit(f"terminated (signal {signum})")


@dataclass
class _Running:
    job: Job
    pid: int
    rfd: int
    started: float
    deadline: float
    buf: bytes = b""
    events: list = field(default_factory=list)


class ForkServer:
    """pytest plugin: after collection, run each phase's jobs in forked children.

    ``phases``: (next_job, done) pairs run one after the other (the baseline, then the
    mutants); ``modules``: the import names of the mutated modules; ``units``: (module, unit) → (path, original source, first line) of every
    function a job swaps, checked against the imported code first (a module edited since
    the mutants were made is refused, never run)."""

    def __init__(self, phases, workers: int, modules: list[str], units: dict) -> None:
        self.phases, self.workers, self.modules, self.units = phases, workers, modules, units
        self.items: dict = {}
        self.functions: Functions | None = None
        self.refused: dict[tuple[str, str], str] = {}
        self.tmp = Path(tempfile.mkdtemp(prefix="mutation-edges-"))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        for m in self.modules:
            importlib.import_module(m)
        self.items = {item.nodeid: item for item in session.items}
        self.functions = Functions()
        for (module, unit), (path, text, first) in self.units.items():
            why = check_live(self.functions, path, text, unit, first)
            if why:
                self.refused[(module, unit)] = why
        try:
            for next_job, done in self.phases:
                self.loop(next_job, done)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return True

    def loop(self, next_job: Callable[[], Job | None], done: Callable[[Job], None]) -> None:
        running: dict[int, _Running] = {}
        previous = signal.signal(signal.SIGTERM, _terminate)
        try:
            self._loop(running, next_job, done)
        finally:  # interrupted: no child outlives the server
            signal.signal(signal.SIGTERM, previous)
            for r in running.values():
                for target in (-r.pid, r.pid):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(target, signal.SIGKILL)

    def _loop(self, running: dict, next_job, done) -> None:
        exhausted = False
        while running or not exhausted:
            while not exhausted and len(running) < self.workers:
                job = next_job()
                if job is None:
                    exhausted = True
                    break
                refused = self.refused.get((job.module, job.unit)) if job.text else None
                if refused:
                    job.result.update(status="stale", why=refused)
                    done(job)
                    continue
                # a test renamed or removed since the map was made: not run (and said so)
                job.result["missing"] = [t for t in job.tests if t not in self.items]
                job.tests = [t for t in job.tests if t in self.items]
                r = self._start(job)
                running[r.rfd] = r
            if not running:
                continue
            now = time.time()
            wait = max(0.0, min(r.deadline for r in running.values()) - now)
            ready, _, _ = select.select(list(running), [], [], min(wait, 1.0))
            for fd in ready:
                r = running[fd]
                chunk = os.read(fd, 65536)
                if chunk:
                    r.buf += chunk
                    *lines, r.buf = r.buf.split(b"\n")
                    r.events += [json.loads(x) for x in lines if x]
                    continue
                del running[fd]
                self._finish(r, done, timed_out=False)
            now = time.time()
            for fd, r in list(running.items()):
                if now > r.deadline:
                    del running[fd]
                    self._finish(r, done, timed_out=True)

    def _start(self, job: Job) -> _Running:
        rfd, wfd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.time()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            _child(job, self.items, self.functions, wfd, self.tmp / f"c{os.getpid()}")
        os.close(wfd)
        return _Running(job, pid, rfd, started, started + job.timeout)

    def _finish(self, r: _Running, done: Callable[[Job], None], *, timed_out: bool) -> None:
        if timed_out:
            for target in (-r.pid, r.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(target, signal.SIGKILL)
        _, status = os.waitpid(r.pid, 0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(r.pid, signal.SIGKILL)  # a killed child's own subprocesses
        shutil.rmtree(self.tmp / f"c{r.pid}", ignore_errors=True)
        if r.buf:
            r.events += [json.loads(x) for x in r.buf.split(b"\n") if x.strip()]
        os.close(r.rfd)
        final = next((e for e in reversed(r.events) if "status" in e), None)
        started_tests = [e["test"] for e in r.events if e.get("event") == "start"]
        ran = [e for e in r.events if e.get("event") == "done"]
        wall = time.time() - r.started
        if timed_out:
            last = started_tests[-1] if started_tests else None
            result = {"status": "timeout", "test": last, "why": f"over {r.job.timeout:.0f} s"}
        elif final is None:
            last = started_tests[-1] if started_tests else None
            how = (
                f"signal {os.WTERMSIG(status)}"
                if os.WIFSIGNALED(status)
                else f"exit {os.WEXITSTATUS(status)}"
            )
            result = {
                "status": "crash",
                "test": last,
                "why": f"child ended without a verdict ({how})",
            }
        else:
            result = {k: v for k, v in final.items()}
            if result["status"] == "crash":
                result["test"] = started_tests[-1] if started_tests else None
        applied = next((e["t"] for e in r.events if e.get("event") == "applied"), None)
        result["wall"] = wall
        result["tests_run"] = len(ran)
        result["test_seconds"] = sum(e["s"] for e in ran)
        result["setup"] = (applied - r.started) if applied else None
        result["per_test"] = {e["test"]: (e["s"], e["setup"], e["why"]) for e in ran}
        r.job.result.update(result)
        done(r.job)
