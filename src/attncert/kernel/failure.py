"""Rejections of the trusted checker: a :class:`Failure` names the claim, where and why
(part of the trust boundary, with :mod:`attncert.kernel.hard`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Failure:
    claim: str  # "model", "restrictions", "dependency_sets", "output", "misclassified", ...
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.claim} ({self.where}): {self.reason}"


class _Reject(Exception):
    def __init__(self, failure: Failure):
        super().__init__(str(failure))
        self.failure = failure


def _fail(claim: str, where: str, reason: str):
    """Reject the certificate: ``claim`` failed at ``where`` because ``reason``."""
    raise _Reject(Failure(claim, where, reason))


def _fmt(positions) -> str:
    return "{" + ", ".join(str(u + 1) for u in sorted(positions)) + "}"
