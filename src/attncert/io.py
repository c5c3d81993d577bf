"""File helpers: atomic writes and JSON reading with located errors.

Nothing half-written is ever left behind: :func:`write_atomic` writes to a
temporary file in the target directory and renames it into place; the file gets
the permissions an ordinary ``open(path, "w")`` would give it (``0666`` less the
umask, or the mode of the file it replaces). An output path that is a directory,
or lies under a regular file, is refused with an :class:`~attncert.errors.InputError`
before anything is written (:func:`check_output_path`; the CLI checks before a long
computation starts). :func:`read_json` refuses files nested deeper than
:data:`MAX_JSON_DEPTH` levels or larger than :data:`MAX_JSON_BYTES`.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

from attncert.errors import InputError, SpecError

# The limits of reading JSON, defined here (not in attncert.limits, which re-exports them)
# so that the trusted kernel, which reads certificates and models, does not import every
# size cap of the CLI.
#: Deepest nesting of JSON arrays/objects read from a file. attncert's own files nest at
#: most 7 levels; Python's JSON reader recurses once per level and would fail with a
#: RecursionError near 1,000.
MAX_JSON_DEPTH = 100
#: Largest JSON file read (a model with d = 1024 and 24 layers is about 400 MB of text).
MAX_JSON_BYTES = 2 * 2**30


def _umask() -> int:
    """The process's umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_output_path(path: str | os.PathLike[str], where: str | None = None) -> Path:
    """Refuse an output *file* path that cannot be written: a directory, a path under a
    regular file, or an existing directory without write permission. Creates nothing."""
    target = Path(path)
    label = where or str(target)
    if str(path) == "" or target.name in ("", ".", ".."):
        raise InputError(f"{str(path)!r} is not a file name", where=label, expected="a file path")
    if target.is_dir():
        raise InputError(f"{str(target)!r} is a directory", where=label, expected="a file path")
    _check_parent(target.parent, label)
    return target


def check_output_dir(path: str | os.PathLike[str], where: str | None = None) -> Path:
    """Refuse an output *directory* path that exists as a file or lies under one."""
    target = Path(path)
    label = where or str(target)
    if target.exists() and not target.is_dir():
        raise InputError(
            f"{str(target)!r} exists and is not a directory", where=label, expected="a directory"
        )
    _check_parent(target, label)
    return target


def _check_parent(directory: Path, label: str) -> None:
    """The first existing ancestor of ``directory`` must be a writable directory."""
    probe = directory if str(directory) else Path(".")
    while not probe.exists():
        if probe.is_symlink():  # a dangling link: mkdir would fail
            raise InputError(f"{str(probe)!r} is a broken symbolic link", where=label)
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise InputError(
            f"{str(probe)!r} is a file, so nothing can be written under it",
            where=label,
            expected="a path whose parent is a directory",
        )
    if probe.is_dir() and not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"directory {str(probe)!r} is not writable", where=label)


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file + ``os.replace``), with the mode of
    the file it replaces or ``0666 & ~umask``; an unwritable path is an InputError."""
    target = check_output_path(path)
    try:
        mode = stat.S_IMODE(target.stat().st_mode) if target.is_file() else 0o666 & ~_umask()
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise InputError(
            f"cannot write {str(target)!r}: {err.strerror}", where=str(target)
        ) from None
    kind = "wb" if isinstance(data, bytes) else "w"
    try:
        with os.fdopen(fd, kind, **({} if kind == "wb" else {"encoding": "utf-8"})) as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise InputError(
                f"cannot write {str(target)!r}: {err.strerror}", where=str(target)
            ) from None
        raise
    return target


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as pretty JSON, atomically."""
    return write_atomic(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def json_depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether arrays/objects in ``text`` nest more than ``limit`` deep (strings skipped).
    Linear, without recursion, so it is safe on any input."""
    depth = 0
    for m in _JSON_BRACKET.finditer(_JSON_STRING.sub('""', text)):
        if m.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file; errors name the file and the line/column, or the limit exceeded."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_JSON_BYTES:
            raise SpecError(
                f"file of {size} bytes is larger than the limit of {MAX_JSON_BYTES} bytes",
                where=str(p),
                expected="a smaller JSON document",
            )
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("file not found", where=str(p)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"cannot read file: {err}", where=str(p)) from None
    return parse_json(text, str(p))


def parse_json(text: str, source: str) -> Any:
    """Parse JSON ``text`` read from ``source``, with the errors of :func:`read_json`."""
    if json_depth_exceeds(text):
        raise SpecError(
            f"arrays/objects nested more than {MAX_JSON_DEPTH} levels deep",
            where=source,
            expected=f"a JSON document nested at most {MAX_JSON_DEPTH} levels "
            "(attncert's files use fewer than 10)",
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(
            f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}",
            where=source,
            expected="a JSON document",
        ) from None
    except ValueError as err:  # e.g. an integer of more than 4,300 digits
        raise SpecError(f"unreadable JSON value: {err}", where=source) from None
    except RecursionError:  # pragma: no cover - json_depth_exceeds comes first
        raise SpecError("JSON nested too deeply", where=source) from None


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
