"""The results file: JSON lines, one whole line per finished cell, safe to interrupt.

Line 1 is a header ``{"format": "attncert-sweep", "version": 1}``; every other line is
a :class:`CellRecord` (the cell's fields and id, status, reason, seconds, worker, the
task's result). Lines are appended as cells finish, each with a single ``write`` of the
whole line followed by ``flush`` and ``fsync``, so an interrupted sweep leaves whole lines
and at worst one partial last line (a crash mid-write). Opening the file again

* ignores a partial last line — and cuts it off before appending, so the next record
  starts on a line of its own;
* refuses a malformed line anywhere else (that is not what an interruption leaves), naming
  the file and line;
* keeps, per cell id, the *last* record (a re-run cell supersedes its earlier record).
"""

from __future__ import annotations

import datetime
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attncert.errors import SpecError
from attncert.sweep.grid import Cell

FORMAT = "attncert-sweep"
VERSION = 1
STATUSES = ("ok", "failed", "timeout", "lost")


@dataclass(frozen=True)
class CellRecord:
    """What happened to one cell. ``status``: ok (the task returned a result, whatever
    its verdict), failed (it raised or its process died), timeout (killed at its time
    limit), lost (its Dask worker died, also on retry)."""

    cell: Cell
    status: str
    reason: str = ""
    seconds: float = 0.0
    worker: str = ""
    result: dict[str, Any] | None = None
    finished: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise SpecError(
                f"status {self.status!r}", where="record", expected=" | ".join(STATUSES)
            )

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def verdict(self) -> str:
        return str((self.result or {}).get("verdict", self.status))

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.cell.to_dict(),
            "status": self.status,
            "reason": self.reason,
            "seconds": self.seconds,
            "worker": self.worker,
            "finished": self.finished,
            "result": self.result,
        }

    @classmethod
    def from_dict(cls, d: Any, where: str) -> CellRecord:
        if not isinstance(d, dict):
            raise SpecError("a record must be a JSON object", where=where)
        try:
            return cls(
                cell=Cell.from_dict(d, where),
                status=str(d["status"]),
                reason=str(d.get("reason", "")),
                seconds=float(d.get("seconds", 0.0)),
                worker=str(d.get("worker", "")),
                result=d.get("result"),
                finished=str(d.get("finished", "")),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise SpecError(f"malformed record: {err}", where=where) from None

    @classmethod
    def now(cls, cell: Cell, status: str, **kw: Any) -> CellRecord:
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        return cls(cell, status, finished=stamp, **kw)


@dataclass
class ResultsFile:
    """An open results file: the records read so far and an appender."""

    path: Path
    records: dict[str, CellRecord] = field(default_factory=dict)
    dropped_partial: int = 0  # bytes of a partial last line that were cut off

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> ResultsFile:
        """Read ``path`` (created with a header if missing); repair a partial last line."""
        try:
            return cls._open(Path(path))
        except OSError as err:
            raise SpecError(
                f"cannot use the results file: {err.strerror or err}",
                where=str(path),
                expected="a writable file path (.jsonl) whose folder exists or can be made",
            ) from None

    @classmethod
    def _open(cls, p: Path) -> ResultsFile:
        if p.is_dir():
            raise SpecError("is a directory", where=str(p), expected="a results file (.jsonl)")
        if not p.exists() or p.stat().st_size == 0:
            p.parent.mkdir(parents=True, exist_ok=True)
            _append(p, {"format": FORMAT, "version": VERSION})
            return cls(p)
        data = p.read_bytes()
        keep = data.rfind(b"\n") + 1  # bytes up to the last newline are whole lines
        rf = cls(p)
        lines = data[:keep].decode("utf-8", "replace").split("\n")[:-1]
        for k, line in enumerate(lines, start=1):
            where = f"{p}: line {k}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise SpecError(
                    f"malformed line ({err.msg}); only a partial *last* line is expected from "
                    "an interrupted sweep",
                    where=where,
                ) from None
            if k == 1:
                if not (isinstance(obj, dict) and obj.get("format") == FORMAT):
                    raise SpecError(
                        "not a sweep results file", where=where, expected=f'a "{FORMAT}" header'
                    )
                if obj.get("version") != VERSION:
                    raise SpecError(
                        f"version {obj.get('version')!r}", where=where, expected=str(VERSION)
                    )
                continue
            rec = CellRecord.from_dict(obj, where)
            rf.records[rec.cell.id] = rec
        if not lines:
            raise SpecError("no header line", where=str(p), expected=f'a "{FORMAT}" header')
        if keep < len(data):
            rf.dropped_partial = len(data) - keep
            with open(p, "r+b") as fh:
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())
        return rf

    def append(self, rec: CellRecord) -> None:
        """Write one record as one whole line (flushed and fsynced) and remember it."""
        _append(self.path, rec.to_dict())
        self.records[rec.cell.id] = rec

    def finished(self, *, retry_failed: bool = False) -> set[str]:
        """Ids of cells that need no new run: every recorded cell, or only the ok ones."""
        return {i for i, r in self.records.items() if r.ok or not retry_failed}


def _append(path: Path, obj: dict[str, Any]) -> None:
    line = (json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        view = memoryview(line)
        while view:  # one write for a regular file; the loop only guards short writes
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _finite(obj: Any) -> Any:
    """JSON without NaN/Infinity: non-finite floats become strings ("nan", "inf")."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
