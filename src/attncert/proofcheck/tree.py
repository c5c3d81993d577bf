"""Re-verify a tree of proof artifacts: :func:`check_tree` and :func:`check_artifact`.

Every directory holding a ``manifest.json`` is an artifact. For each, in order:

1. the manifest parses and names a registered kind (else ``invalid``);
2. every file it lists exists (else ``missing``) and has the listed sha256 (else
   ``tampered``);
3. its model (``zoo:NAME`` or a file of the artifact) still has the content hash recorded at
   generation (else ``stale`` — e.g. a zoo model's weights changed);
4. what the manifest claims to exhibit is a result of the paper that this kind of artifact,
   with this content, can show (:mod:`attncert.proofcheck.exhibits`; else ``rejected``) —
   so a copied artifact whose manifest claims "Theorem 7" or another result is refused
   wherever it lies;
5. the kind's trusted checker re-verifies the content (else ``rejected``).

Step 5 runs even when a file's hash does not match, so a tampered certificate is reported
with both reasons; it is skipped when a file is missing or the model cannot be used.

If the root holds ``index.json`` (written by :func:`attncert.proofcheck.regenerate`), every
artifact it lists must exist with an unchanged manifest, so deleting a whole artifact
directory or editing a manifest is caught too.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attncert.errors import AttncertError, InputError
from attncert.io import read_json
from attncert.proofcheck.exhibits import exhibit_problems
from attncert.proofcheck.kinds import Context, get_kind
from attncert.proofcheck.manifest import MANIFEST, Manifest, load_manifest, sha256_file

INDEX = "index.json"
INDEX_FORMAT = "attncert-proofs-index"

__all__ = [
    "INDEX",
    "ArtifactResult",
    "TreeReport",
    "check_artifact",
    "check_index",
    "check_tree",
    "find_artifacts",
]

# severity order: the first problem found decides the status column
STATUSES = ("ok", "invalid", "missing", "stale", "tampered", "rejected", "error")


@dataclass(frozen=True)
class ArtifactResult:
    """One row of the table: artifact (path relative to the root), result, status, time."""

    artifact: str
    result: str  # which paper/result it exhibits
    kind: str
    status: str  # one of STATUSES
    seconds: float
    reasons: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()
    checked_means: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_dict(self) -> dict[str, Any]:
        return {
            "artifact": self.artifact,
            "result": self.result,
            "kind": self.kind,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "reasons": list(self.reasons),
            "facts": list(self.facts),
            "checked_means": self.checked_means,
        }


@dataclass(frozen=True)
class TreeReport:
    root: str
    results: tuple[ArtifactResult, ...]
    seconds: float = 0.0
    problems: tuple[str, ...] = field(default=())  # tree-level (index) problems

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results) and not self.problems

    @property
    def failed(self) -> tuple[ArtifactResult, ...]:
        return tuple(r for r in self.results if not r.ok)

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "ok": self.ok,
            "artifacts": [r.as_dict() for r in self.results],
            "failed": [r.artifact for r in self.failed],
            "seconds": round(self.seconds, 3),
        }


def find_artifacts(root: str | os.PathLike[str]) -> list[Path]:
    """Artifact directories under ``root`` (sorted; hidden directories skipped)."""
    base = Path(root)
    found = []
    for m in base.rglob(MANIFEST):
        rel = m.parent.relative_to(base)
        if any(part.startswith(".") for part in rel.parts):
            continue
        found.append(m.parent)
    return sorted(found, key=lambda p: p.relative_to(base).as_posix())


def _name(root: Path, directory: Path) -> str:
    rel = directory.relative_to(root).as_posix()
    return rel


def _resolve_model(directory: Path, manifest: Manifest) -> tuple[Any, str | None, str]:
    """(model or None, reason or None, status for the reason)."""
    from attncert.model import load_model, zoo_model

    ref = manifest.model
    assert ref is not None
    if ref.is_zoo:
        try:
            model = zoo_model(ref.ref[4:])
        except AttncertError as err:
            return None, f"stale: model {ref.ref} no longer exists ({err.message})", "stale"
        status = "stale"
    else:
        if ref.ref not in {f.path for f in manifest.files}:
            return None, f"model file {ref.ref} is not listed in the manifest's files", "invalid"
        path = directory / ref.ref
        if not path.is_file():
            return None, f"missing file {ref.ref} (the model, listed in the manifest)", "missing"
        try:
            model = load_model(path)
        except AttncertError as err:
            return None, f"tampered: model file {ref.ref} does not load: {err}", "tampered"
        status = "tampered"
    if model.digest != ref.sha256:
        return (
            None,
            f"{status}: model {ref.ref} now hashes to {model.digest[:12]}…, the artifact was "
            f"generated for {ref.sha256[:12]}… (the model changed; regenerate with "
            f"`attncert proofs regenerate`)",
            status,
        )
    return model, None, "ok"


def check_artifact(directory: str | os.PathLike[str], name: str | None = None) -> ArtifactResult:
    """Re-verify the artifact in ``directory`` (see the module docstring)."""
    d = Path(directory)
    label = name if name is not None else d.name
    t0 = time.perf_counter()
    reasons: list[tuple[str, str]] = []  # (status, reason)

    def result(manifest: Manifest | None, facts: tuple[str, ...] = ()) -> ArtifactResult:
        status = "ok"
        if reasons:
            status = min((s for s, _ in reasons), key=STATUSES.index)
        return ArtifactResult(
            artifact=label,
            result="?" if manifest is None else manifest.exhibits.label(),
            kind="?" if manifest is None else manifest.kind,
            status=status,
            seconds=time.perf_counter() - t0,
            reasons=tuple(f"{label}: {r}" for _, r in reasons),
            facts=facts,
            checked_means="" if manifest is None else manifest.checked_means,
        )

    try:
        manifest = load_manifest(d)
    except AttncertError as err:
        reasons.append(("invalid", f"manifest: {err}"))
        return result(None)
    kind = get_kind(manifest.kind)
    if kind is None:
        reasons.append(("invalid", f"no checker registered for artifact kind {manifest.kind!r}"))
        return result(manifest)
    missing = False
    for f in manifest.files:
        path = d / f.path
        if not path.is_file():
            reasons.append(("missing", f"missing file {f.path} (listed in the manifest)"))
            missing = True
            continue
        actual = sha256_file(path)
        if actual != f.sha256:
            reasons.append(
                (
                    "tampered",
                    f"tampered: {f.path} has sha256 {actual[:12]}…, the manifest lists "
                    f"{f.sha256[:12]}…",
                )
            )
    model = None
    if manifest.model is not None:
        if not missing:
            model, why, status = _resolve_model(d, manifest)
            if why is not None:
                reasons.append((status, why))
                return result(manifest)
    elif kind.needs_model:
        reasons.append(("invalid", f"kind {kind.name} needs a model, the manifest names none"))
        return result(manifest)
    if missing:
        return result(manifest)
    for why in exhibit_problems(d, manifest, model):
        reasons.append(("rejected", f"overclaims: {why}"))
    try:
        outcome = kind.check(Context(d, manifest, model))
    except AttncertError as err:
        reasons.append(("rejected", f"checker rejected the content: {err}"))
        return result(manifest)
    except Exception as err:  # a malformed file the kind did not anticipate
        tb = traceback.extract_tb(err.__traceback__)[-1]
        reasons.append(
            (
                "error",
                f"checker failed on the content: {type(err).__name__}: {err} "
                f"({Path(tb.filename).name}:{tb.lineno})",
            )
        )
        return result(manifest)
    reasons.extend(("rejected", f) for f in outcome.failures)
    return result(manifest, outcome.facts)


def _index_problems(root: Path, names: list[str]) -> tuple[list[ArtifactResult], set[str]]:
    """Rows for index entries whose artifact is gone or whose manifest changed, and the
    names of artifacts found but not listed."""
    path = root / INDEX
    if not path.is_file():
        return [], set()
    rows: list[ArtifactResult] = []
    try:
        data = read_json(path)
        if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
            raise InputError("not a proofs index", where=str(path), expected=INDEX_FORMAT)
        listed = {str(a["path"]): a for a in data["artifacts"]}
    except (AttncertError, KeyError, TypeError) as err:
        rows.append(ArtifactResult(INDEX, "?", "index", "invalid", 0.0, (f"{INDEX}: {err}",)))
        return rows, set()
    for rel, a in sorted(listed.items()):
        mpath = root / rel / MANIFEST
        if rel not in names:
            rows.append(
                ArtifactResult(
                    rel,
                    str(a.get("result", "?")),
                    str(a.get("kind", "?")),
                    "missing",
                    0.0,
                    (f"{rel}: missing artifact (listed in {INDEX}, no {MANIFEST} found)",),
                )
            )
        elif sha256_file(mpath) != a.get("manifest_sha256"):
            rows.append(
                ArtifactResult(
                    rel,
                    str(a.get("result", "?")),
                    str(a.get("kind", "?")),
                    "tampered",
                    0.0,
                    (f"{rel}: tampered: {MANIFEST} changed since it was generated ({INDEX})",),
                )
            )
    return rows, set(names) - set(listed)


def check_index(root: str | os.PathLike[str]) -> list[str]:
    """Problems with ``root/index.json``: listed artifacts that are gone or whose manifest
    changed, and artifacts not listed. Empty if all is well or there is no index."""
    base = Path(root)
    names = [_name(base, d) for d in find_artifacts(base)]
    rows, unlisted = _index_problems(base, names)
    out = [reason for r in rows for reason in r.reasons]
    out.extend(f"{name}: not listed in {INDEX} (regenerate the index)" for name in sorted(unlisted))
    return out


def check_tree(root: str | os.PathLike[str], progress: Any = None) -> TreeReport:
    """Re-verify every artifact under ``root``. ``progress(name)`` is called before each."""
    base = Path(root)
    if not base.is_dir():
        raise InputError(f"{root} is not a directory", where=str(root))
    t0 = time.perf_counter()
    dirs = find_artifacts(base)
    names = [_name(base, d) for d in dirs]
    index_rows, unlisted = _index_problems(base, names)
    if not dirs and not index_rows:
        raise InputError(
            f"no proof artifacts under {root}",
            where=str(root),
            expected=f"directories with a {MANIFEST} (see attncert.proofcheck.manifest)",
        )
    results: list[ArtifactResult] = []
    bad_index = {r.artifact: r for r in index_rows}
    for d, name in zip(dirs, names, strict=True):
        if progress is not None:
            progress(name)
        r = check_artifact(d, name)
        extra = list(bad_index.pop(name).reasons) if name in bad_index else []
        if name in unlisted:
            extra.append(f"{name}: not listed in {INDEX} (regenerate the index)")
        if extra:
            status = r.status
            if r.ok:
                status = "tampered" if any("tampered:" in e for e in extra) else "invalid"
            r = ArtifactResult(
                r.artifact,
                r.result,
                r.kind,
                status,
                r.seconds,
                (*r.reasons, *extra),
                r.facts,
                r.checked_means,
            )
        results.append(r)
    results.extend(bad_index.values())
    return TreeReport(str(root), tuple(results), time.perf_counter() - t0)
