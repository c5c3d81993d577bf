"""Writing files atomically (untrusted: nothing a checker decides is written here), and the
JSON reader of :mod:`attncert.jsonread` re-exported for callers that read and write.

Nothing half-written is ever left behind: :func:`write_atomic` writes to a
temporary file in the target directory and renames it into place; the file gets
the permissions an ordinary ``open(path, "w")`` would give it (``0666`` less the
umask, or the mode of the file it replaces). An output path that is a directory,
or lies under a regular file, is refused with an :class:`~attncert.errors.InputError`
before anything is written (:func:`check_output_path`; the CLI checks before a long
computation starts). Reading — :func:`read_json` with its limits
(:data:`MAX_JSON_DEPTH`, :data:`MAX_JSON_BYTES`), :func:`check_header`, :func:`require`,
:func:`canonical_json` — is :mod:`attncert.jsonread`, the half the trusted kernel imports.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from attncert.errors import InputError
from attncert.jsonread import (  # the reading half (trusted), re-exported for callers
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    canonical_json,
    check_header,
    json_depth_exceeds,
    parse_json,
    read_json,
    require,
)

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "canonical_json",
    "check_header",
    "check_output_dir",
    "check_output_path",
    "json_depth_exceeds",
    "parse_json",
    "read_json",
    "require",
    "write_atomic",
    "write_json",
]


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
