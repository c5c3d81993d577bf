"""Rejections of the trusted checker: a :class:`Failure` names the claim, where and why
(part of the trust boundary, with :mod:`attncert.kernel.hard.checker`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Failure:
    claim: str  # "model", "restrictions", "dependency_sets", "output", "misclassified", ...
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.claim} ({self.where}): {self.reason}"


@dataclass(frozen=True)
class CheckReport:
    """A checker's answer: accepted, or the failures; the facts it re-derived."""

    accepted: bool
    failures: tuple[Failure, ...]
    facts: tuple[str, ...]

    def summary(self) -> str:
        if self.accepted:
            return "CHECKED: " + "; ".join(self.facts)
        return "REJECTED: " + "; ".join(str(f) for f in self.failures)


class _Reject(Exception):
    def __init__(self, failure: Failure):
        super().__init__(str(failure))
        self.failure = failure


def _fail(claim: str, where: str, reason: str):
    """Reject the certificate: ``claim`` failed at ``where`` because ``reason``."""
    raise _Reject(Failure(claim, where, reason))


def _fmt(positions) -> str:
    return "{" + ", ".join(str(u + 1) for u in sorted(positions)) + "}"
