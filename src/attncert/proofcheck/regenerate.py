"""Regenerate the ``proofs/`` tree deterministically: ``attncert proofs regenerate [DIR]`` or
``python -m attncert.proofcheck.regenerate [DIR]``.

For each entry of :data:`attncert.proofcheck.catalog.CATALOG` the kind's generator runs the
(untrusted) search or computation once into a fresh temporary directory, the manifest is
written, and the directory replaces ``DIR/<path>`` — so an interrupted run never leaves a
half-written artifact. Then ``DIR/index.json`` lists every artifact and its manifest's sha256.
Timings are scrubbed from the files, so running it twice gives identical bytes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from attncert.errors import InputError
from attncert.io import write_json
from attncert.proofcheck.catalog import CATALOG, ArtifactSpec
from attncert.proofcheck.kinds import get_kind
from attncert.proofcheck.manifest import MANIFEST, load_manifest, sha256_file
from attncert.proofcheck.tree import INDEX, INDEX_FORMAT, check_artifact, find_artifacts

__all__ = ["add_artifact", "main", "regenerate", "write_index"]


def _generate_one(root: Path, spec: ArtifactSpec) -> Path:
    kind = get_kind(spec.kind)
    assert kind is not None
    target = root / spec.path
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        manifest = kind.generate(tmp, spec)
        if spec.formula is not None and manifest.formula is None:
            from dataclasses import replace

            manifest = replace(manifest, formula=spec.formula)
        manifest.save(tmp)
        check = check_artifact(tmp, spec.path)
        if not check.ok:
            raise InputError(
                "the regenerated artifact does not pass its checker: " + "; ".join(check.reasons),
                where=spec.path,
            )
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            if old.exists():
                shutil.rmtree(old)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def write_index(root: str | os.PathLike[str]) -> Path:
    """Write ``root/index.json``: every artifact under ``root`` with its manifest's sha256."""
    base = Path(root)
    arts = []
    for d in find_artifacts(base):
        m = load_manifest(d)
        arts.append(
            {
                "path": d.relative_to(base).as_posix(),
                "kind": m.kind,
                "result": m.exhibits.label(),
                "manifest_sha256": sha256_file(d / MANIFEST),
            }
        )
    return write_json(base / INDEX, {"format": INDEX_FORMAT, "version": 1, "artifacts": arts})


def regenerate(
    proofs_dir: str | os.PathLike[str] = "proofs",
    *,
    only: Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Path], list[str]]:
    """Regenerate every catalog artifact (or those whose path starts with one of ``only``)
    under ``proofs_dir`` and rewrite the index. Returns (written directories, skipped
    entries with the reason)."""
    root = Path(proofs_dir)
    root.mkdir(parents=True, exist_ok=True)
    prefixes = tuple(only) if only else ("",)
    written: list[Path] = []
    skipped: list[str] = []
    for spec in CATALOG:
        if not spec.path.startswith(prefixes):
            continue
        if get_kind(spec.kind) is None:
            skipped.append(f"{spec.path}: kind {spec.kind!r} is not available")
            continue
        if progress is not None:
            progress(spec.path)
        written.append(_generate_one(root, spec))
    write_index(root)
    return written, skipped


def add_artifact(proofs_dir: str | os.PathLike[str], spec: ArtifactSpec) -> Path:
    """Generate one artifact (e.g. for your own model: ``spec.model`` may be a
    :class:`~attncert.model.Model`) under ``proofs_dir`` and update the index; the artifact
    is checked before it replaces anything."""
    root = Path(proofs_dir)
    root.mkdir(parents=True, exist_ok=True)
    if get_kind(spec.kind) is None:
        raise InputError(f"unknown artifact kind {spec.kind!r}", where=spec.path)
    target = _generate_one(root, spec)
    write_index(root)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m attncert.proofcheck.regenerate", description=__doc__
    )
    ap.add_argument("dir", nargs="?", default="proofs")
    ap.add_argument("--only", action="append", help="path prefix under DIR (repeatable)")
    args = ap.parse_args(argv)
    written, skipped = regenerate(
        args.dir, only=args.only, progress=lambda p: print(f"… {p}", file=sys.stderr)
    )
    for w in written:
        print(f"wrote {w}")
    for s in skipped:
        print(f"skipped {s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
