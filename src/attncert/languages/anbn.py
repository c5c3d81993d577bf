"""aⁿbⁿ (n ≥ 0): Hahn 2020 §5's context-free language that hard attention *can* recognize.

Membership with one counter and a phase flag: count a's, switch to the b phase
at the first b, count b's down, reject an a after a b or a negative count.
The empty string (n = 0) is a member.
"""

from __future__ import annotations

from dataclasses import dataclass

from attncert.languages.base import Language, Word


@dataclass(frozen=True)
class AnBn(Language):
    """{aⁿbⁿ : n ≥ 0} over {a, b}."""

    @property
    def alphabet(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("a", "b")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "anbn"

    def _member(self, s: Word) -> bool:
        count = 0
        in_b = False
        for c in s:
            if c == "a":
                if in_b:
                    return False
                count += 1
            else:
                in_b = True
                count -= 1
                if count < 0:
                    return False
        return count == 0
