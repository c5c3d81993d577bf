"""Named formulas (Yang et al. §4 examples and classic tasks), each with its alphabet.

``LIBRARY[name]`` is a :class:`NamedFormula`; ``library_formula(name)`` looks one up.
A string is accepted when the formula holds at its last position. Where a formula
defines a language of :mod:`attncert.languages` over its alphabet, ``language`` names it
and the formula carries that language's name (odd parity is ``parity-odd``, as in
:func:`attncert.languages.language`; ``parity`` there is *even* parity), so that a
library name never means another language than the language of the same name.

* ``parity-odd`` — ODD(#←[Q_1]) (§4.4: PARITY with a numerical predicate): an odd
  number of 1s, the language ``parity-odd``;
* ``parity-odd-nopred`` — the same language without numerical predicates (§4.5): the
  number of 1s is odd iff no position i has |{j < i : 1}| = |{j ≥ i : 1}|;
  ¬◆(#←[◁Q_1] = #→[Q_1]) with ◆χ = χ ∨ (⊤ S χ) ("at some position ≤ i");
* ``majority`` — more 1s than 0s (the language ``majority``);
* ``flip-flop`` — Liu et al.'s flip-flop language over writes 0/1 and reads x/y
  (read-0/read-1): every read returns the last bit written before it;
* ``ngram`` — the trigram abc ends here (◁◁Q_a ∧ ◁Q_b ∧ Q_c); ``ngram-next`` — the
  trigram abc starts here (§4.1's n-gram detector, with ▷);
* ``dyck1`` — Dyck-1 via the counting part of the Appendix-E program (the language
  ``dyck1``): no prefix has more ) than (, and the counts are equal. Dyck-k for k ≥ 2
  needs the program's "nearest bracket at the same depth" step, which is not a formula of
  K_t[#] (the paper conjectures Dyck-2 is not definable there); it is the
  average-hard program ``dyck2``/``dyck3``/``dyck4`` of :mod:`attncert.compile.dyck`
  (Theorem 26 makes it softmax; ``attncert compile dyck2 --library``).
* ``first``, ``last``, ``previous-symbol`` (◁Q_1), ``since`` (Q_a S Q_b),
  ``until`` (Q_a U Q_b), ``square-count``, ``count-mixed``.

Deprecated names (:data:`DEPRECATED`) still resolve, with a :class:`DeprecationWarning`:
``parity`` (it always meant ODD(#←[Q_1]); the language ``parity`` is even parity) is
``parity-odd``, ``parity-nopred`` is ``parity-odd-nopred``.

    >>> LIBRARY["parity-odd"].language
    'parity-odd'
    >>> "parity" in LIBRARY, "parity" in LIBRARY_NAMES
    (True, False)
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

from attncert.errors import InputError
from attncert.logic import syntax as s
from attncert.logic.parser import parse


@dataclass(frozen=True)
class NamedFormula:
    name: str
    text: str
    alphabet: str
    description: str
    causal: bool  # uses only the past (◁, S, #←, n-free predicates): future-masked regimes
    #: the :func:`attncert.languages.language` name of the language the formula defines
    #: over ``alphabet`` (at the last position), None when the registry has none
    language: str | None = None

    @cached_property
    def formula(self) -> s.Formula:
        return parse(self.text)

    def regimes(self) -> tuple[str, ...]:
        """Names of the compiler regimes (:class:`attncert.compile.regime.Regime`) that
        support this formula: every formula in the two encoder regimes; causal ones in
        the future-masked regime too, and in its unbounded variant if they do not count
        (Yang et al. Thm 21 needs temperature scaling for counting). Plain names, so
        that the logic layer does not depend on the compiler."""
        counts = any(isinstance(f, (s.Compare, s.CountPred)) for f in self.formula.subformulas())
        out = ["temperature", "unbounded"]
        if self.causal:
            out.append("future-masked")
            if not counts:
                out.append("future-masked-unbounded")
        return tuple(out)


_EQ = "#<[prev Q_1] = #>[Q_1]"
_DYCK_ERR = "#<[Q_)] > #<[Q_(]"

_ENTRIES = {
    f.name: f
    for f in (
        NamedFormula("first", "first", "ab", "position 1", True),
        NamedFormula("last", "last", "ab", "position n", False),
        NamedFormula("previous-symbol", "prev Q_1", "01", "◁Q_1: the previous symbol is 1", True),
        NamedFormula("since", "Q_a S Q_b", "abc", "a b, then only a's up to here (strict)", True),
        NamedFormula("until", "Q_a U Q_b", "abc", "mirror image of since", False),
        NamedFormula(
            "parity-odd",
            "ODD(#<[Q_1])",
            "01",
            "odd number of 1s (ODD predicate)",
            True,
            "parity-odd",
        ),
        NamedFormula(
            "parity-odd-nopred",
            f"!({_EQ} | true S ({_EQ}))",
            "01",
            "odd number of 1s without numerical predicates (§4.5)",
            False,
            "parity-odd",
        ),
        NamedFormula("majority", "#<[Q_1] > #<[Q_0]", "01", "more 1s than 0s", True, "majority"),
        NamedFormula(
            "flip-flop",
            "!(true S ((Q_x & !((Q_x | Q_y) S Q_0)) | (Q_y & !((Q_x | Q_y) S Q_1)))"
            " | (Q_x & !((Q_x | Q_y) S Q_0)) | (Q_y & !((Q_x | Q_y) S Q_1)))",
            "01xy",
            "writes 0/1, reads x (expects 0) / y (expects 1): each read returns the last "
            "written bit",
            True,
        ),
        NamedFormula(
            "ngram", "prev prev Q_a & prev Q_b & Q_c", "abc", "the trigram abc ends here", True
        ),
        NamedFormula(
            "ngram-next",
            "Q_a & next (Q_b & next Q_c)",
            "abc",
            "the trigram abc starts here (§4.1)",
            False,
        ),
        NamedFormula(
            "dyck1",
            f"!(true S ({_DYCK_ERR}) | {_DYCK_ERR}) & #<[Q_(] = #<[Q_)]",
            "()",
            "Dyck-1 via Appendix E: no prefix with more ) than (, equal counts",
            True,
            "dyck1",
        ),
        NamedFormula(
            "square-count",
            "SQUARE(#<[Q_a]) & EVEN(i)",
            "ab",
            "the number of a's so far is a square, at an even position",
            True,
        ),
        NamedFormula(
            "count-mixed",
            "2*#<[Q_a] - #>[Q_b] >= 1 | HALF(#>[Q_a])",
            "ab",
            "left and right counts in one comparison; an n-relative predicate",
            False,
        ),
    )
}

#: Old names → current ones. Each resolves to the formula it always named (proofs,
#: notebooks and scripts keep working) under a name that matches its language.
DEPRECATED: Mapping[str, str] = MappingProxyType(
    {"parity": "parity-odd", "parity-nopred": "parity-odd-nopred"}
)


class _Library(Mapping[str, NamedFormula]):
    """The named formulas: iteration, ``len`` and ``items()`` give the current names
    only; looking up a deprecated name (:data:`DEPRECATED`) warns and returns the
    renamed entry."""

    def __getitem__(self, name: str) -> NamedFormula:
        if name in _ENTRIES:
            return _ENTRIES[name]
        if name in DEPRECATED:
            warnings.warn(deprecation_note(name), DeprecationWarning, stacklevel=2)
            return _ENTRIES[DEPRECATED[name]]
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in _ENTRIES or name in DEPRECATED

    def __iter__(self) -> Iterator[str]:
        return iter(_ENTRIES)

    def __len__(self) -> int:
        return len(_ENTRIES)

    def __repr__(self) -> str:
        return f"LIBRARY({', '.join(_ENTRIES)})"


LIBRARY: Mapping[str, NamedFormula] = _Library()
LIBRARY_NAMES: tuple[str, ...] = tuple(_ENTRIES)


def deprecation_note(name: str) -> str:
    """Why the deprecated library name ``name`` is deprecated and what replaces it."""
    new = DEPRECATED[name]
    return f"library name {name!r} is deprecated: it is {new!r} ({_ENTRIES[new].description}); " + (
        "the language 'parity' is even parity"
        if name == "parity"
        else "a library name now says which language it defines"
    )


def resolve(name: str) -> tuple[NamedFormula, str | None]:
    """The library formula called ``name`` and, for a deprecated name, the note saying
    what replaces it (no warning: for the command line, which prints the note)."""
    if name in DEPRECATED:
        return _ENTRIES[DEPRECATED[name]], deprecation_note(name)
    return library_formula(name), None


def library_formula(name: str) -> NamedFormula:
    """``LIBRARY[name]`` (a deprecated name warns); an unknown name raises InputError."""
    if name in DEPRECATED:
        warnings.warn(deprecation_note(name), DeprecationWarning, stacklevel=2)
        return _ENTRIES[DEPRECATED[name]]
    try:
        return _ENTRIES[name]
    except KeyError:
        raise InputError(
            f"no library formula {name!r}", expected="one of " + ", ".join(LIBRARY_NAMES)
        ) from None
