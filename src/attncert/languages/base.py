"""The common interface of formal languages: a name, an alphabet Σ, membership.

A :class:`Language` is a set L ⊆ Σ* of strings over single-character symbols.
``contains(s)`` decides s ∈ L; a symbol outside Σ is an input error (not a silent
"no"), so a model and a language over different alphabets cannot be compared by
accident. Regular languages also give their automaton (:meth:`Language.as_dfa`);
the others (Dyck, aⁿbⁿ) decide membership with a counter or a stack.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence

from attncert.errors import InputError, SpecError, UnsupportedError, abbreviate

Word = str | Sequence[str]


class Language(ABC):
    """A language L ⊆ Σ*; subclasses define ``name``, ``alphabet`` and :meth:`_member`."""

    name: str
    alphabet: tuple[str, ...]

    @abstractmethod
    def _member(self, s: Word) -> bool:
        """Membership of a string already known to be over Σ."""

    def check(self, s: Word) -> None:
        """Raise :class:`InputError` naming the first symbol of ``s`` outside Σ."""
        sigma = frozenset(self.alphabet)
        for pos, sym in enumerate(s):
            if sym not in sigma:
                raise InputError(
                    f"unknown symbol {sym!r} at position {pos + 1} of "
                    f"{abbreviate(''.join(s), unit='symbols')!r} "
                    f"for language {self.name}",
                    expected="symbols of the alphabet " + "".join(self.alphabet),
                )

    def contains(self, s: Word) -> bool:
        """Whether ``s`` ∈ L (InputError if ``s`` has a symbol outside Σ)."""
        self.check(s)
        return self._member(s)

    def __contains__(self, s: object) -> bool:
        return self.contains(s)  # type: ignore[arg-type]

    @property
    def is_regular(self) -> bool:
        """True iff :meth:`as_dfa` gives an automaton for L."""
        return False

    def as_dfa(self) -> Language:
        """A DFA recognizing L (regular languages only): an
        :class:`attncert.languages.dfa.DFA`, which is itself a :class:`Language`. (Declared
        as ``Language`` here so that this base module does not depend on the automaton
        module, which depends on it; the regular languages declare ``-> DFA``.)"""
        raise UnsupportedError(
            f"language {self.name} is not regular: it has no DFA",
            expected="a regular language (e.g. parity, ones_star, or a DFA)",
        )

    def strings(self, n: int) -> Iterator[str]:
        """All strings of length ``n`` over Σ, in lexicographic order of Σ's listing."""
        return all_strings(self.alphabet, n)

    def members(self, n: int) -> Iterator[str]:
        """All members of L of length ``n``."""
        return (s for s in self.strings(n) if self._member(s))


def all_strings(alphabet: Sequence[str], n: int) -> Iterator[str]:
    """Every string of length ``n`` over ``alphabet`` (|Σ|ⁿ of them)."""
    if n < 0:
        raise InputError(f"string length {n} is negative")
    return ("".join(t) for t in itertools.product(alphabet, repeat=n))


def check_alphabet(alphabet: Sequence[str], where: str) -> tuple[str, ...]:
    """Validate a list of distinct single-character symbols; returns it as a tuple."""
    if isinstance(alphabet, str):
        alphabet = tuple(alphabet)
    try:
        sigma = tuple(alphabet)
    except TypeError:
        raise SpecError(
            f"alphabet {alphabet!r}", where=where, expected="a list of symbols"
        ) from None
    if not sigma:
        raise SpecError("empty alphabet", where=where, expected="at least one symbol")
    for s in sigma:
        if not isinstance(s, str) or len(s) != 1:
            raise SpecError(f"symbol {s!r}", where=where, expected="single characters")
    if len(set(sigma)) != len(sigma):
        dup = next(s for s in sigma if sigma.count(s) > 1)
        raise SpecError(f"repeated symbol {dup!r}", where=where, expected="distinct symbols")
    return sigma
