"""Proof artifacts: the ``proofs/`` tree, re-verified by the trusted checkers (issue 8).

- :mod:`.manifest` — ``manifest.json`` per artifact: what it exhibits (paper, result), model
  (``zoo:NAME`` or a file, with its content hash) or formula, parameters, files with sha256,
  and what "checked" means for it;
- :mod:`.kinds` — the registry of artifact kinds, one module per kind
  (``hard_certificate``, ``lll_report``, ``constants_report``; later ``lemma5``,
  ``z3_agreement``);
- :mod:`.catalog` / :mod:`.regenerate` — the repository's artifacts as data, regenerated
  deterministically by ``attncert proofs regenerate [DIR]``;
- :mod:`.tree` — :func:`check_tree` re-verifies every artifact (``attncert check DIR``);
  missing, stale (model hash changed) and tampered artifacts fail with the reason;
- :mod:`.traceability` — generates ``docs/traceability.md``.

Python::

    from attncert.proofcheck import check_tree
    report = check_tree("proofs")
    assert report.ok, [r.reasons for r in report.failed]
"""

from attncert.proofcheck.kinds import ArtifactKind, Context, Outcome, get_kind, kind_names, register
from attncert.proofcheck.manifest import Exhibits, Manifest, ModelRef, load_manifest
from attncert.proofcheck.regenerate import regenerate, write_index
from attncert.proofcheck.tree import ArtifactResult, TreeReport, check_artifact, check_tree

__all__ = [
    "ArtifactKind",
    "ArtifactResult",
    "Context",
    "Exhibits",
    "Manifest",
    "ModelRef",
    "Outcome",
    "TreeReport",
    "check_artifact",
    "check_tree",
    "get_kind",
    "kind_names",
    "load_manifest",
    "regenerate",
    "register",
    "write_index",
]
