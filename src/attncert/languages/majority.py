"""MAJORITY: strictly more 1s than 0s — a counting language outside hard attention.

MAJORITY over {0, 1}: #1(x) > #0(x) (ties, including the empty string, are not
members). Soft attention computes it easily (a uniform head averages the 1s), but
after any restriction that leaves more than a bounded number of positions free, the
answer depends on all of them; so by Hahn (2020), Theorem 1, no unique-hard attention
transformer recognizes it, and Corollary-2 pairs exist whenever the output's
dependency set leaves a free position that can tip the count
(:func:`attncert.hard.corollary.separating_pair` constructs them directly).

Not regular: membership is a count.
"""

from __future__ import annotations

from dataclasses import dataclass

from attncert.languages.base import Language, Word


@dataclass(frozen=True)
class Majority(Language):
    """{x ∈ {0,1}* : #1(x) > #0(x)}."""

    @property
    def alphabet(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("0", "1")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "majority"

    def _member(self, s: Word) -> bool:
        ones = sum(1 for c in s if c == "1")
        return 2 * ones > len(s)
