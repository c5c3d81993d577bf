"""First symbol equals last symbol: a regular language a hard-attention model can recognize.

FIRST-LAST over {0, 1}: the non-empty strings whose first and last symbols are equal
(a one-symbol string is a member; the empty string has no first symbol and is not).
It is regular — a five-state DFA remembers the first symbol and the latest one — and
two hard heads (one to position 1, one to position n) decide it at every length, so
unlike PARITY it is not ruled out by Hahn (2020), Theorem 1: after a restriction the
output depends on the two end positions only. Corollary-2 pairs come from the DFA
(:func:`attncert.hard.corollary.separating_pair`).

Membership is computed directly from the ends, independently of :meth:`as_dfa`, so
the two can be cross-checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from attncert.languages.base import Language, Word
from attncert.languages.dfa import DFA


@dataclass(frozen=True)
class FirstLast(Language):
    """{x ∈ {0,1}⁺ : x₁ = xₙ}."""

    @property
    def alphabet(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("0", "1")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "first_last"

    def _member(self, s: Word) -> bool:
        return len(s) > 0 and s[0] == s[-1]

    @property
    def is_regular(self) -> bool:
        return True

    def as_dfa(self) -> DFA:
        """States: start, then (first symbol, last symbol read); accepting iff equal."""
        # 0 start, 1 = (0,0), 2 = (0,1), 3 = (1,1), 4 = (1,0); columns "0", "1"
        return DFA(
            states=("start", "first0-last0", "first0-last1", "first1-last1", "first1-last0"),
            alphabet=("0", "1"),
            delta=((1, 3), (1, 2), (1, 2), (4, 3), (4, 3)),
            start=0,
            accepting=frozenset({1, 3}),
            name=self.name,
        )
