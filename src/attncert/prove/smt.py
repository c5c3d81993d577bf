"""Running SMT-LIB queries with z3 and recording them.

Every query of the prover is built as self-contained SMT-LIB 2 text (declarations,
definitions, assertions, ``(check-sat)``) and solved by parsing exactly that text, so
the ``.smt2`` file written with ``smt2_dir`` *is* the query that was decided. A query
asserts the negation of what is to be proved: ``unsat`` = proved, ``sat`` = a
candidate counterexample (the model's atom values are returned), ``unknown`` =
time-out. :func:`recheck_file` re-runs a file in a fresh Python process.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attncert.io import write_atomic


@dataclass
class QueryRecord:
    """One decided query: what it proves, the verdict and the time it took."""

    kind: str  # agreement | agreement-hard | gap-sign | level0 | exactness
    file: str | None
    verdict: str  # unsat (proved) | sat | unknown
    seconds: float
    n: int | None = None
    layer: int | None = None
    head: int | None = None
    row: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "n": self.n,
            "layer": self.layer,
            "head": self.head,
            "row": self.row,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 6),
            "file": self.file,
        }


def solve(
    text: str, name: str, kind: str, timeout_ms: int, smt2_dir: Path | None
) -> tuple[QueryRecord, dict[str, Any] | None]:
    """Decide ``text`` with z3; write it to ``smt2_dir/name.smt2`` first if asked."""
    import z3

    path = None
    if smt2_dir is not None:
        path = Path(smt2_dir) / f"{name}.smt2"
        write_atomic(path, f"; attncert prove: {kind} query {name}\n{text}\n")
    t0 = time.perf_counter()
    solver = z3.Solver()
    solver.set("timeout", int(timeout_ms))
    solver.from_string(text)
    res = solver.check()
    dt = time.perf_counter() - t0
    verdict = "unsat" if res == z3.unsat else "sat" if res == z3.sat else "unknown"
    model = None
    if res == z3.sat:
        m = solver.model()
        model = {}
        for d in m.decls():
            v = m[d]
            if z3.is_true(v) or z3.is_false(v):
                model[d.name()] = z3.is_true(v)
            elif z3.is_int_value(v):
                model[d.name()] = v.as_long()
            elif z3.is_rational_value(v):
                model[d.name()] = (v.numerator_as_long(), v.denominator_as_long())
    return QueryRecord(kind, str(path) if path else None, verdict, dt), model


_RECHECK = "import sys, z3\ns = z3.Solver()\ns.from_file(sys.argv[1])\nprint(s.check())\n"


_RECHECK_ALL = (
    "import sys, z3\n"
    "for p in sys.argv[1:]:\n"
    "    s = z3.Solver()\n"
    "    s.from_file(p)\n"
    "    print(p, s.check(), flush=True)\n"
)


def recheck_files(paths: list[str | Path], timeout_s: float = 600.0) -> dict[str, str]:
    """Verdicts of many ``.smt2`` files, decided by one fresh Python/z3 process."""
    if not paths:
        return {}
    out = subprocess.run(
        [sys.executable, "-c", _RECHECK_ALL, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    res = {}
    for line in out.stdout.splitlines():
        p, _, v = line.rpartition(" ")
        res[p] = v
    return res


def recheck_file(path: str | Path, timeout_s: float = 120.0) -> str:
    """Verdict of an ``.smt2`` file decided by z3 in a fresh Python process."""
    out = subprocess.run(
        [sys.executable, "-c", _RECHECK, str(path)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "error"
