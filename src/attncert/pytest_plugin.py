"""pytest plugin: re-check proof artifacts in any project's test run.

Installed with attncert (entry point ``pytest11: attncert``). It does nothing unless asked::

    pytest --attncert-proofs proofs            # one test item per artifact (+ the index)
    pytest --attncert-proofs proofs -m attncert_proof   # only the proof items

Each directory under DIR holding a ``manifest.json`` becomes a test item
``DIR/<artifact>::attncert-proof`` that passes iff :func:`attncert.proofcheck.check_artifact`
verifies it with the trusted checkers (a missing, stale or tampered artifact fails with the
reason); if DIR has an ``index.json``, one more item checks that every listed artifact still
exists with an unchanged manifest. See ``docs/ci-recipe.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

OPTION = "--attncert-proofs"
MARKER = "attncert_proof"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attncert", "attncert proof artifacts")
    group.addoption(
        OPTION,
        action="append",
        default=[],
        metavar="DIR",
        help="re-check every attncert proof artifact under DIR (repeatable)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: an attncert proof artifact re-check")


class ProofCheckFailed(Exception):
    """An artifact did not re-verify; the message lists the reasons."""


class ArtifactItem(pytest.Item):
    """One artifact directory (or the tree's index), re-verified when run."""

    def __init__(self, *, directory: Path, artifact: str, root: Path, **kw: Any) -> None:
        super().__init__(**kw)
        self.directory = directory
        self.artifact = artifact
        self.root = root
        self.add_marker(MARKER)

    def runtest(self) -> None:
        from attncert.proofcheck.tree import INDEX, check_artifact, check_index

        if self.artifact == INDEX:
            problems = check_index(self.root)
            if problems:
                raise ProofCheckFailed("\n".join(problems))
            return
        result = check_artifact(self.directory, self.artifact)
        if not result.ok:
            raise ProofCheckFailed(
                f"{result.artifact} [{result.kind}, {result.result}]: {result.status}\n"
                + "\n".join(result.reasons)
            )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ProofCheckFailed):
            return f"attncert proof check failed: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.directory, None, f"attncert proof {self.artifact}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    dirs = config.getoption(OPTION, default=None)
    if not dirs:
        return
    from attncert.proofcheck.tree import INDEX, find_artifacts

    for text in dirs:
        root = Path(text)
        if not root.is_dir():
            raise pytest.UsageError(f"{OPTION} {text}: not a directory")
        found = find_artifacts(root)
        if not found and not (root / INDEX).is_file():
            raise pytest.UsageError(f"{OPTION} {text}: no manifest.json found under it")
        entries = [(d, d.relative_to(root).as_posix()) for d in found]
        if (root / INDEX).is_file():
            entries.append((root, INDEX))
        for directory, artifact in entries:
            items.append(
                ArtifactItem.from_parent(
                    session,
                    name=f"{root.as_posix()}/{artifact}::attncert-proof",
                    nodeid=f"{root.as_posix()}/{artifact}::attncert-proof",
                    directory=directory,
                    artifact=artifact,
                    root=root,
                )
            )
