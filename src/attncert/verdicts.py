"""The fixed set of verdicts every certificate and report carries.

============================  ====  =====================================================
verdict                       exit  what it promises
============================  ====  =====================================================
``CERTIFIED``                 0     checked by the trusted kernel, non-trivial, and the
                                    theorem's hypotheses hold for this instance
``CERTIFIED-TRIVIAL``         4     checked, but vacuous: no free position; no checked
                                    non-constancy witness (the model may be constant at
                                    n, and then a restriction and a "misclassified" pair
                                    show nothing a constant function would not satisfy);
                                    or, with a language, no misclassified pair
``OUTSIDE-THEOREM``           5     a checked fact about the model, but a hypothesis of
                                    the theorem (or a quantitative invariant of its
                                    proof) fails: e.g. average-hard heads, unbounded
                                    temperatures, a paper invariant that does not hold
``REFUTED``                   1     rejected by the kernel, a counterexample, a refuted
                                    claim
``UNDECIDED``                 3     a comparison undecided at the precision cap, or a
                                    solver time-out: no verdict either way
============================  ====  =====================================================

Bad input (a malformed file, impossible parameters) exits with status 2 and no
verdict. The JSON output of every command carries the same word under ``"verdict"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Verdict(str, Enum):
    CERTIFIED = "CERTIFIED"
    CERTIFIED_TRIVIAL = "CERTIFIED-TRIVIAL"
    OUTSIDE_THEOREM = "OUTSIDE-THEOREM"
    REFUTED = "REFUTED"
    UNDECIDED = "UNDECIDED"

    @property
    def exit_code(self) -> int:
        return _EXIT[self]

    @property
    def checked(self) -> bool:
        """True for the verdicts whose claims the kernel verified."""
        return self in (Verdict.CERTIFIED, Verdict.CERTIFIED_TRIVIAL, Verdict.OUTSIDE_THEOREM)


_EXIT = {
    Verdict.CERTIFIED: 0,
    Verdict.REFUTED: 1,
    Verdict.UNDECIDED: 3,
    Verdict.CERTIFIED_TRIVIAL: 4,
    Verdict.OUTSIDE_THEOREM: 5,
}

EXIT_BAD_INPUT = 2


@dataclass(frozen=True)
class Assessment:
    """A verdict with the reasons for it, in words (each reason one sentence)."""

    verdict: Verdict
    reasons: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict:
        return {"verdict": self.verdict.value, "reasons": list(self.reasons)}

    def headline(self, subject: str) -> str:
        return f"{self.verdict.value}: {subject}"
