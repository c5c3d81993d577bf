"""Reading JSON documents with errors that name the file, the line and the field
(trusted: every checker reads its certificate, and every model file, through it).

:func:`read_json` refuses files nested deeper than :data:`MAX_JSON_DEPTH` levels or
larger than :data:`MAX_JSON_BYTES`; :func:`check_header` and :func:`require` check a
document's format, version and fields, naming the place; :func:`canonical_json` is the
encoding a content hash is computed over. Writing files is :mod:`attncert.io` (atomic
writes, untrusted: nothing a checker decides is written there), which re-exports these
names for callers that read and write.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from attncert.errors import SpecError

# The limits of reading JSON, defined here (not in attncert.limits, which re-exports them)
# so that the trusted kernel, which reads certificates and models, does not import every
# size cap of the CLI.
#: Deepest nesting of JSON arrays/objects read from a file. attncert's own files nest at
#: most 7 levels; Python's JSON reader recurses once per level and would fail with a
#: RecursionError near 1,000.
MAX_JSON_DEPTH = 100
#: Largest JSON file read (a model with d = 1024 and 24 layers is about 400 MB of text).
MAX_JSON_BYTES = 2 * 2**30

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "canonical_json",
    "check_header",
    "json_depth_exceeds",
    "parse_json",
    "read_json",
    "require",
]


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
