"""The grid of a sweep: cells (task × model × n × seed) with stable ids.

A :class:`Cell` is one unit of work — "run task T on model M at length n with seed s and
these parameters" — and its :attr:`Cell.id` is a hash of exactly those fields (plus the
content hash of a model *file*, so editing the file makes new cells). The id is what
makes a sweep resumable: a results file records cell ids, and re-running the same grid
skips the ids it already holds (:mod:`attncert.sweep.results`).

A :class:`Grid` block is one task over models × lengths × seeds with fixed parameters;
a grid file (JSON or YAML) holds one block or a list of blocks::

    task: certify                  # or: tasks: [certify, sensitivity]
    models: [zoo:random-L2-H2-d16, random:L2-H2-d8]
    n: [64, 256, 1024]
    seeds: [0, 1]
    params: {language: parity, time_limit: 60}
    timeout: 300                   # seconds per cell (the cell's process is killed)

or ``{"grids": [block, block, …]}``. Errors name the file and the field.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attncert.errors import SpecError
from attncert.io import canonical_json

CELL_ID_VERSION = 1
Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Cell:
    """One unit of work. ``params`` are sorted ``(key, JSON scalar)`` pairs;
    ``model_hash`` is the sha256 of a model file's bytes ('' for zoo/random/formula).
    ``timeout`` (seconds, hard) is how the cell is run, not what it is: not in the id."""

    task: str
    model: str
    n: int
    seed: int = 0
    params: tuple[tuple[str, Scalar], ...] = ()
    model_hash: str = ""
    timeout: float | None = field(default=None, compare=False)

    @property
    def id(self) -> str:
        """Stable id: the first 16 hex digits of the sha256 of the canonical key."""
        return hashlib.sha256(canonical_json(self.key())).hexdigest()[:16]

    def key(self) -> dict[str, Any]:
        return {
            "v": CELL_ID_VERSION,
            "task": self.task,
            "model": self.model,
            "model_hash": self.model_hash,
            "n": self.n,
            "seed": self.seed,
            "params": dict(self.params),
        }

    @property
    def param_dict(self) -> dict[str, Scalar]:
        return dict(self.params)

    def to_dict(self) -> dict[str, Any]:
        key = {k: v for k, v in self.key().items() if k != "v"}
        return {"id": self.id, **key, "timeout": self.timeout}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "cell") -> Cell:
        try:
            cell = cls(
                task=str(d["task"]),
                model=str(d["model"]),
                n=int(d["n"]),
                seed=int(d.get("seed", 0)),
                params=_params(d.get("params") or {}, where),
                model_hash=str(d.get("model_hash", "")),
                timeout=None if d.get("timeout") is None else float(d["timeout"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise SpecError(f"malformed cell: {err}", where=where) from None
        if "id" in d and d["id"] != cell.id:
            raise SpecError(
                f"cell id {d['id']!r} does not match its fields ({cell.id})", where=where
            )
        return cell

    def label(self) -> str:
        return f"{self.task} {self.model} n={self.n} seed={self.seed}"


@dataclass(frozen=True)
class Grid:
    """One task over models × lengths × seeds with fixed parameters."""

    task: str
    models: tuple[str, ...]
    ns: tuple[int, ...]
    seeds: tuple[int, ...] = (0,)
    params: tuple[tuple[str, Scalar], ...] = ()
    timeout: float | None = None

    def __post_init__(self) -> None:
        if not self.models:
            raise SpecError("no models", where="grid: models")
        if not self.ns or any(not isinstance(n, int) or n < 1 for n in self.ns):
            raise SpecError(f"lengths {list(self.ns)}", where="grid: n", expected="positive ints")
        if not self.seeds or any(not isinstance(s, int) or s < 0 for s in self.seeds):
            raise SpecError(f"seeds {list(self.seeds)}", where="grid: seeds", expected="ints ≥ 0")
        if self.timeout is not None and not self.timeout > 0:
            raise SpecError(f"timeout {self.timeout}", where="grid: timeout", expected="> 0 s")

    def cells(self, *, uses_seed: bool = True) -> tuple[Cell, ...]:
        """Every cell, model-major (model, then n, then seed). A task that does not use the
        seed gets one cell per (model, n), with seed 0."""
        seeds = self.seeds if uses_seed else (0,)
        return tuple(
            Cell(self.task, m, n, s, self.params, model_hash(m), self.timeout)
            for m, n, s in itertools.product(self.models, self.ns, seeds)
        )


def model_hash(spec: str) -> str:
    """sha256 of the bytes of a model *file* spec ('' for zoo:, random:, formulas, …)."""
    if ":" in spec.split("/")[0] and not Path(spec).exists():
        return ""  # zoo:NAME, random:…, library:NAME
    p = Path(spec)
    if p.is_file():
        return hashlib.sha256(p.read_bytes()).hexdigest()
    return ""


def _params(raw: Any, where: str) -> tuple[tuple[str, Scalar], ...]:
    if not isinstance(raw, Mapping):
        raise SpecError("params must be a mapping of names to values", where=f"{where}: params")
    out = []
    for k, v in raw.items():
        if not isinstance(v, (str, int, float, bool)) and v is not None:
            raise SpecError(
                f"parameter {k!r} has a {type(v).__name__} value",
                where=f"{where}: params.{k}",
                expected="a number, string, boolean or null",
            )
        out.append((str(k), v))
    return tuple(sorted(out))


def _int_list(raw: Any, where: str) -> tuple[int, ...]:
    items = raw if isinstance(raw, (list, tuple)) else [raw]
    out = []
    for x in items:
        if isinstance(x, bool) or not isinstance(x, int):
            raise SpecError(f"{x!r} is not an integer", where=where, expected="a list of integers")
        out.append(x)
    return tuple(out)


def grid_from_mapping(d: Any, where: str = "grid") -> tuple[Grid, ...]:
    """Grid blocks from a parsed grid document (one block, or ``{"grids": [...]}``)."""
    if isinstance(d, Mapping) and "grids" in d:
        blocks = d["grids"]
        if not isinstance(blocks, list) or not blocks:
            raise SpecError("'grids' must be a non-empty list of blocks", where=f"{where}: grids")
        return tuple(
            g for i, b in enumerate(blocks) for g in grid_from_mapping(b, f"{where}: grids[{i}]")
        )
    if not isinstance(d, Mapping):
        raise SpecError("a grid block must be a mapping", where=where)
    known = {"task", "tasks", "models", "model", "n", "seeds", "seed", "params", "timeout"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise SpecError(
            f"unknown field(s) {unknown}", where=where, expected=", ".join(sorted(known))
        )
    tasks = d.get("tasks", d.get("task"))
    if isinstance(tasks, str):
        tasks = [tasks]
    if not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) for t in tasks):
        raise SpecError("missing or malformed task", where=f"{where}: task", expected="a task name")
    models = d.get("models", d.get("model"))
    if isinstance(models, str):
        models = [models]
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise SpecError(
            "missing or malformed models",
            where=f"{where}: models",
            expected="a list of model specs",
        )
    if "n" not in d:
        raise SpecError("missing field 'n'", where=where, expected="a list of lengths")
    ns = _int_list(d["n"], f"{where}: n")
    seeds = _int_list(d.get("seeds", d.get("seed", [0])), f"{where}: seeds")
    timeout = d.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
        raise SpecError(f"timeout {timeout!r}", where=f"{where}: timeout", expected="seconds")
    params = _params(d.get("params") or {}, where)
    return tuple(
        Grid(t, tuple(models), ns, seeds, params, None if timeout is None else float(timeout))
        for t in tasks
    )


def load_grid(path: str | Path) -> tuple[Grid, ...]:
    """Grid blocks from a ``.json``, ``.yaml`` or ``.yml`` file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("grid file not found", where=str(p)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"cannot read grid file: {err}", where=str(p)) from None
    if p.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ModuleNotFoundError:
            raise SpecError(
                "reading a YAML grid needs PyYAML (pip install 'attncert[dask]'), or use JSON",
                where=str(p),
            ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise SpecError(f"malformed YAML: {err}", where=str(p)) from None
    elif p.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise SpecError(
                f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}", where=str(p)
            ) from None
    else:
        raise SpecError(
            f"unknown grid file type {p.suffix!r}", where=str(p), expected=".json, .yaml or .yml"
        )
    return grid_from_mapping(data, str(p))


def all_cells(
    grids: Iterable[Grid], uses_seed: Mapping[str, bool] | None = None
) -> tuple[Cell, ...]:
    """The cells of several blocks in order, each id once."""
    seen: dict[str, Cell] = {}
    for g in grids:
        for c in g.cells(uses_seed=True if uses_seed is None else uses_seed.get(g.task, True)):
            seen.setdefault(c.id, c)
    return tuple(seen.values())
