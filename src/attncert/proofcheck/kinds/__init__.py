"""Artifact kinds: one module per kind, each registering an :class:`ArtifactKind`.

A kind knows how to **generate** its artifact deterministically (running the untrusted
search or computation once) and how to **re-verify** it with the trusted checkers — never
by re-running the search. Built-in kinds:

- ``hard_certificate`` — Hahn 2020 Theorem 1 / Corollary 2 restriction certificates,
  re-verified by :func:`attncert.hard.checker.check` (:mod:`.hard_certificate`);
- ``lll_report`` — Lemma 4's LLL claims and constants k, N, re-verified with exact/arb
  arithmetic and the claim checker (:mod:`.lll_report`);
- ``constants_report`` — Theorem 1's constant chain (:mod:`.constants_report`);
- ``uniform_sensitivity`` — Hahn 2020 Lemma 5 / Theorem 6 at every n ≥ N₀, re-verified by
  :func:`attncert.kernel.uniform.checker.check` (:mod:`.uniform_sensitivity`);
- ``all_lengths`` — Yang et al. Proposition 11, Theorems 12–21, Corollaries 17, 18, 22, 23
  for every length n ≥ 1: the all-length kernel plus the bounded z3 part
  (:mod:`.all_lengths`);
- ``tieless_simulation`` — Yang et al. Theorem 26: a uniform–tieless average-hard model and
  its softmax simulation decide a language up to length N (:mod:`.tieless_simulation`).

Adding a kind: write ``attncert/proofcheck/kinds/<name>.py`` defining ``KIND =
ArtifactKind(...)`` and add ``<name>`` to :data:`BUILTIN` (or call :func:`register` from
any module). A module whose own dependencies are missing is skipped.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attncert.errors import SpecError
from attncert.io import read_json
from attncert.model.spec import Model
from attncert.proofcheck.manifest import FileEntry, Manifest, sha256_file

__all__ = [
    "BUILTIN",
    "ArtifactKind",
    "Context",
    "Outcome",
    "entry",
    "get_kind",
    "kind_names",
    "register",
]

BUILTIN = (
    "hard_certificate",
    "lll_report",
    "constants_report",
    "lemma5",
    "z3_agreement",
    "tieless_simulation",
    "soft_certificate",
    "uniform_sensitivity",
    "all_lengths",
)


@dataclass(frozen=True)
class Context:
    """What a kind's checker sees: the artifact directory, its manifest and its model
    (already resolved and hash-checked against the manifest, or ``None``)."""

    directory: Path
    manifest: Manifest
    model: Model | None = None

    def path(self, role: str) -> Path:
        return self.directory / self.manifest.file(role).path

    def read_json(self, role: str) -> Any:
        return read_json(self.path(role))

    def param(self, name: str) -> Any:
        if name not in self.manifest.parameters:
            raise SpecError(f"missing parameter {name!r}", where="manifest.json: parameters")
        return self.manifest.parameters[name]


@dataclass(frozen=True)
class Outcome:
    """A kind checker's verdict: failures (empty = verified) and the facts established."""

    failures: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class ArtifactKind:
    """``check(ctx) -> Outcome`` re-verifies; ``generate(directory, spec) -> Manifest`` writes
    the artifact's files into ``directory`` and returns its manifest (not yet saved)."""

    name: str
    check: Callable[[Context], Outcome]
    generate: Callable[[Path, Any], Manifest]
    description: str = ""
    needs_model: bool = field(default=False)


_KINDS: dict[str, ArtifactKind] = {}
_loaded = False


def register(kind: ArtifactKind) -> ArtifactKind:
    """Add (or replace) a kind in the registry."""
    _KINDS[kind.name] = kind
    return kind


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in BUILTIN:
        mod = f"attncert.proofcheck.kinds.{name}"
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as err:
            # the kind's module (or the subpackage it wraps) does not exist yet
            if err.name is not None and (err.name == mod or err.name.startswith("attncert.")):
                continue
            raise
        except ImportError:
            continue  # the subpackage exists but lacks the API the kind needs
        if hasattr(module, "KIND"):
            register(module.KIND)


def get_kind(name: str) -> ArtifactKind | None:
    _load_builtin()
    return _KINDS.get(name)


def kind_names() -> list[str]:
    _load_builtin()
    return sorted(_KINDS)


def entry(directory: str | os.PathLike[str], name: str, role: str) -> FileEntry:
    """The manifest entry of a file just written into ``directory``."""
    return FileEntry(path=name, sha256=sha256_file(Path(directory) / name), role=role)


def scrub_timings(obj: Any) -> Any:
    """Drop wall-clock fields (keys starting with ``seconds``) so artifacts are deterministic."""
    if isinstance(obj, Mapping):
        return {k: scrub_timings(v) for k, v in obj.items() if not str(k).startswith("seconds")}
    if isinstance(obj, list | tuple):
        return [scrub_timings(v) for v in obj]
    return obj
