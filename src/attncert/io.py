"""File helpers: atomic writes and JSON reading with located errors.

Nothing half-written is ever left behind: :func:`write_atomic` writes to a
temporary file in the target directory and renames it into place.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from attncert.errors import SpecError


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file + ``os.replace``)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as pretty JSON, atomically."""
    return write_atomic(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file; errors name the file and the line/column."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("file not found", where=str(p)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"cannot read file: {err}", where=str(p)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(
            f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}",
            where=str(p),
            expected="a JSON document",
        ) from None


def canonical_json(obj: Any) -> bytes:
    """Canonical encoding used for content hashes: sorted keys, no spaces, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def check_header(data: Any, source: str, fmt: str, version: int | tuple[int, ...]) -> None:
    r"""Refuse a document that is not a JSON object of the given ``format`` and one of the
    accepted ``version``\ s."""
    if not isinstance(data, dict):
        raise SpecError("top level is not a JSON object", where=source)
    if data.get("format") != fmt:
        raise SpecError(
            f"format {data.get('format')!r}", where=f"{source}: format", expected=repr(fmt)
        )
    versions = version if isinstance(version, tuple) else (version,)
    v = data.get("version")
    if isinstance(v, bool) or v not in versions:
        raise SpecError(
            f"version {v!r}",
            where=f"{source}: version",
            expected=" or ".join(str(x) for x in versions),
        )


def require(
    d: Any, key: str, where: str, kind: type | tuple[type, ...], *, optional: bool = False
) -> Any:
    """Field ``key`` of the JSON object ``d``, of type ``kind`` (a bool is never an int);
    errors name ``where`` and the field."""
    if not isinstance(d, dict):
        raise SpecError("expected a JSON object", where=where)
    if key not in d or d[key] is None:
        if optional:
            return None
        raise SpecError(f"missing field {key!r}", where=where)
    v = d[key]
    if not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool):
        raise SpecError(f"field {key!r} has the wrong type {type(v).__name__}", where=where)
    return v
