"""PARITY and 1*: the two-state regular languages of Hahn (2020).

* PARITY (Hahn §3): bit strings over {0, 1} with an **even** number of 1s —
  :class:`Parity` (``name="parity"``). Its complement, an **odd** number of 1s,
  is ``Parity(odd=True)`` (``name="parity-odd"``). Hahn's Corollary 2 and
  Theorem 6 concern the even variant; both are equally hard for transformers.
* 1* (Hahn §5 discussion): strings with no 0 — :class:`OnesStar`.

Membership is computed directly (counting 1s / looking for a 0), independently
of the automaton returned by :meth:`as_dfa`, so the two can be cross-checked.
The empty string is in PARITY (zero 1s) and in 1*.
"""

from __future__ import annotations

from dataclasses import dataclass

from attncert.languages.base import Language, Word
from attncert.languages.dfa import DFA


@dataclass(frozen=True)
class Parity(Language):
    """PARITY: #1(s) even (Hahn 2020); with ``odd=True``, #1(s) odd."""

    odd: bool = False

    @property
    def alphabet(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("0", "1")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "parity-odd" if self.odd else "parity"

    def _member(self, s: Word) -> bool:
        return sum(1 for c in s if c == "1") % 2 == int(self.odd)

    @property
    def is_regular(self) -> bool:
        return True

    def as_dfa(self) -> DFA:
        """The two-state automaton: state = parity of the 1s read so far."""
        return DFA(
            states=("even", "odd"),
            alphabet=("0", "1"),
            delta=((0, 1), (1, 0)),
            start=0,
            accepting=frozenset({1 if self.odd else 0}),
            name=self.name,
        )


@dataclass(frozen=True)
class OnesStar(Language):
    """1*: strings over {0, 1} containing no 0 (Hahn 2020 §5, recognizable with hard attention)."""

    @property
    def alphabet(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("0", "1")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "ones_star"

    def _member(self, s: Word) -> bool:
        return all(c == "1" for c in s)

    @property
    def is_regular(self) -> bool:
        return True

    def as_dfa(self) -> DFA:
        """States ``ones`` (no 0 yet, accepting) and ``dead`` (a 0 was read)."""
        return DFA(
            states=("ones", "dead"),
            alphabet=("0", "1"),
            delta=((1, 0), (1, 1)),
            start=0,
            accepting=frozenset({0}),
            name=self.name,
        )
