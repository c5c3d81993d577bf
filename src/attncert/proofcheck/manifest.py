"""The proof-artifact manifest: ``manifest.json`` in every artifact directory.

An *artifact* is a directory holding a ``manifest.json`` and the files it lists. The
manifest says what the artifact exhibits and how it is re-verified::

    {
     "format": "attncert-proof-manifest", "version": 1,
     "kind": "hard_certificate",                  # which checker re-verifies it
     "exhibits": {"paper": "Hahn 2020", "results": ["Theorem 1", "Corollary 2"],
                  "statement": "…in words…"},
     "model": {"ref": "zoo:random-L2-H2-d16" | "model.json", "sha256": "…", "name": "…"},
     "formula": null,                             # or the formula text (logic artifacts)
     "parameters": {"n": 256, "language": "parity", …},
     "files": [{"path": "certificate.json", "sha256": "…", "role": "certificate"}],
     "checked": {"by": "attncert.hard.checker.check", "means": "…what 'checked' means…"},
     "expect": {…kind-specific claims the checker must confirm…},
     "generated_by": "attncert proofs regenerate"
    }

``model.sha256`` is the model's content hash (:attr:`attncert.model.Model.digest`) at
generation time: if a zoo model's weights change, the artifact is *stale*. Every file's
``sha256`` is the hash of its bytes: a mismatch means the file was *tampered* with.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from attncert.errors import SpecError
from attncert.io import check_header, read_json, write_json
from attncert.io import require as _get

FORMAT = "attncert-proof-manifest"
VERSION = 1
MANIFEST = "manifest.json"

__all__ = [
    "FORMAT",
    "MANIFEST",
    "VERSION",
    "Exhibits",
    "FileEntry",
    "Manifest",
    "ModelRef",
    "load_manifest",
    "sha256_file",
]


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes (hex)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass(frozen=True)
class Exhibits:
    """Which result of which paper the artifact exhibits on a concrete instance."""

    paper: str  # e.g. "Hahn 2020"
    results: tuple[str, ...]  # e.g. ("Theorem 1", "Corollary 2")
    statement: str = ""

    def label(self) -> str:
        return f"{self.paper}, {' / '.join(self.results)}"


@dataclass(frozen=True)
class ModelRef:
    """``ref`` is ``zoo:NAME`` or a file name inside the artifact directory."""

    ref: str
    sha256: str
    name: str = ""

    @property
    def is_zoo(self) -> bool:
        return self.ref.startswith("zoo:")


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative, POSIX, inside the artifact directory
    sha256: str
    role: str = ""


@dataclass(frozen=True)
class Manifest:
    kind: str
    exhibits: Exhibits
    files: tuple[FileEntry, ...]
    checked_by: str
    checked_means: str
    model: ModelRef | None = None
    formula: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    expect: Mapping[str, Any] = field(default_factory=dict)
    generated_by: str = "attncert proofs regenerate"

    def file(self, role: str) -> FileEntry:
        """The (first) file with this role."""
        for f in self.files:
            if f.role == role:
                return f
        raise SpecError(f"no file with role {role!r}", where="manifest.json: files")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "kind": self.kind,
            "exhibits": {
                "paper": self.exhibits.paper,
                "results": list(self.exhibits.results),
                "statement": self.exhibits.statement,
            },
            "model": None
            if self.model is None
            else {"ref": self.model.ref, "sha256": self.model.sha256, "name": self.model.name},
            "formula": self.formula,
            "parameters": dict(self.parameters),
            "files": [{"path": f.path, "sha256": f.sha256, "role": f.role} for f in self.files],
            "checked": {"by": self.checked_by, "means": self.checked_means},
            "expect": dict(self.expect),
            "generated_by": self.generated_by,
        }

    def save(self, directory: str | os.PathLike[str]) -> Path:
        return write_json(Path(directory) / MANIFEST, self.to_dict())


def _relative(path: str, where: str) -> str:
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or not p.parts or "\\" in path:
        raise SpecError(
            f"file path {path!r} leaves the artifact directory",
            where=where,
            expected="a relative POSIX path inside the artifact directory",
        )
    return str(p)


def manifest_from_dict(data: Any, source: str = MANIFEST) -> Manifest:
    """Parse a manifest; every error names the field."""
    check_header(data, source, FORMAT, VERSION)
    kind = _get(data, "kind", source, str)
    ex = _get(data, "exhibits", source, dict)
    results = _get(ex, "results", f"{source}: exhibits", list)
    exhibits = Exhibits(
        paper=_get(ex, "paper", f"{source}: exhibits", str),
        results=tuple(str(r) for r in results),
        statement=str(ex.get("statement", "")),
    )
    files = []
    for i, f in enumerate(_get(data, "files", source, list)):
        w = f"{source}: files[{i}]"
        files.append(
            FileEntry(
                path=_relative(_get(f, "path", w, str), w),
                sha256=_get(f, "sha256", w, str),
                role=str(f.get("role", "")) if isinstance(f, dict) else "",
            )
        )
    m = _get(data, "model", source, dict, optional=True)
    model = None
    if m is not None:
        w = f"{source}: model"
        ref = _get(m, "ref", w, str)
        if not ref.startswith("zoo:"):
            ref = _relative(ref, w)
        model = ModelRef(ref=ref, sha256=_get(m, "sha256", w, str), name=str(m.get("name", "")))
    checked = _get(data, "checked", source, dict)
    return Manifest(
        kind=kind,
        exhibits=exhibits,
        files=tuple(files),
        checked_by=_get(checked, "by", f"{source}: checked", str),
        checked_means=_get(checked, "means", f"{source}: checked", str),
        model=model,
        formula=_get(data, "formula", source, str, optional=True),
        parameters=_get(data, "parameters", source, dict, optional=True) or {},
        expect=_get(data, "expect", source, dict, optional=True) or {},
        generated_by=str(data.get("generated_by", "")),
    )


def load_manifest(directory: str | os.PathLike[str]) -> Manifest:
    """Read ``DIR/manifest.json``."""
    path = Path(directory) / MANIFEST
    return manifest_from_dict(read_json(path), source=str(path))
