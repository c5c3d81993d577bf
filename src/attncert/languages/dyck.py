"""Dyck languages: well-bracketed strings over k bracket pairs (Hahn 2020 §3).

``Dyck(k)`` uses the first k pairs of :data:`DEFAULT_BRACKETS` =
``("()", "[]", "{}", "<>")``, so Dyck-1 is over ``()``, Dyck-2 (Hahn's 2DYCK) over
``()[]``; the alphabet lists each pair's opening then closing symbol. Other
brackets (or k > 4) are given explicitly: ``Dyck(pairs=("ab", "cd"))``.

Membership: Dyck-1 with a counter (the height never drops below 0 and ends at
0), Dyck-k with a stack of open brackets. ``height`` (Hahn's H(x): opening minus
closing brackets) and ``is_prefix`` (x extends to a member) serve the Theorem 6
next-symbol analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

from attncert.errors import InputError
from attncert.languages.base import Language, Word, check_alphabet

DEFAULT_BRACKETS: tuple[str, ...] = ("()", "[]", "{}", "<>")


@dataclass(frozen=True, init=False)
class Dyck(Language):
    """Dyck-k over ``pairs`` (each a 2-character string: opening, closing symbol)."""

    pairs: tuple[str, ...]

    def __init__(self, k: int | None = None, pairs: tuple[str, ...] | None = None):
        if pairs is None:
            if k is None:
                k = 1
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(DEFAULT_BRACKETS):
                raise InputError(
                    f"Dyck-k with k = {k!r} needs explicit bracket pairs",
                    expected=f"1 ≤ k ≤ {len(DEFAULT_BRACKETS)} or pairs=(...)",
                )
            pairs = DEFAULT_BRACKETS[:k]
        pairs = tuple(pairs)
        if k is not None and k != len(pairs):
            raise InputError(f"k = {k} but {len(pairs)} bracket pairs given")
        for p in pairs:
            if not isinstance(p, str) or len(p) != 2:
                raise InputError(f"bracket pair {p!r}", expected="two characters: opening, closing")
        check_alphabet("".join(pairs), "Dyck.pairs")
        object.__setattr__(self, "pairs", pairs)

    @property
    def k(self) -> int:
        return len(self.pairs)

    @property
    def name(self) -> str:  # type: ignore[override]
        if self.pairs == DEFAULT_BRACKETS[: self.k]:
            return f"dyck{self.k}"
        return "dyck[" + ",".join(self.pairs) + "]"

    @property
    def alphabet(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple("".join(self.pairs))

    @property
    def openers(self) -> tuple[str, ...]:
        return tuple(p[0] for p in self.pairs)

    @property
    def closers(self) -> tuple[str, ...]:
        return tuple(p[1] for p in self.pairs)

    def height(self, s: Word) -> int:
        """H(s) = #opening − #closing brackets (Hahn 2020, footnote 4)."""
        self.check(s)
        opens = frozenset(self.openers)
        return sum(1 if c in opens else -1 for c in s)

    def _scan(self, s: Word) -> tuple[bool, int]:
        """(no mismatch so far, number of unclosed brackets)."""
        if self.k == 1:  # a counter suffices for one bracket type
            o = self.pairs[0][0]
            h = 0
            for c in s:
                h += 1 if c == o else -1
                if h < 0:
                    return False, 0
            return True, h
        partner = {p[1]: p[0] for p in self.pairs}
        stack: list[str] = []
        for c in s:
            if c in partner:
                if not stack or stack[-1] != partner[c]:
                    return False, len(stack)
                stack.pop()
            else:
                stack.append(c)
        return True, len(stack)

    def _member(self, s: Word) -> bool:
        ok, open_count = self._scan(s)
        return ok and open_count == 0

    def is_prefix(self, s: Word) -> bool:
        """Whether ``s`` is a prefix of some member (no closing bracket mismatches)."""
        self.check(s)
        return self._scan(s)[0]
