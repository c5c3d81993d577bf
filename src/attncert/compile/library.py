"""Compiled library formulas know their language (issue 42).

A library formula (:data:`attncert.logic.LIBRARY`) that defines a language of
:mod:`attncert.languages` over its alphabet names it (``NamedFormula.language``: odd
parity is ``parity-odd``, since the language ``parity`` is even parity). Compiled here,
the model's ``meta`` records the formula and that language, and ``verify``, ``report``
and ``certify`` use it when no ``--language`` is given.

    >>> from attncert.compile.library import compile_library
    >>> m = compile_library("parity-odd")
    >>> m.name, m.meta["formula"], m.meta["language"]
    ('parity-odd [temperature]', 'ODD(#<[Q_1])', 'parity-odd')

Command line: ``attncert compile parity-odd --library -o parity-odd.json``; formula text
equal to a library formula over the same alphabet records the language too.
"""

from __future__ import annotations

from collections.abc import Iterable

from attncert.compile.regime import Regime
from attncert.logic import syntax as s
from attncert.logic.library import LIBRARY, NamedFormula, library_formula
from attncert.model.spec import Model


def library_language(nf: NamedFormula, alphabet: Iterable[str]) -> str | None:
    """The language ``nf`` defines over ``alphabet``: its ``language`` when ``alphabet``
    is its own (as a set), else None (over other symbols it is another language)."""
    if nf.language is None or set(alphabet) != set(nf.alphabet):
        return None
    return nf.language


def library_match(formula: s.Formula, alphabet: Iterable[str]) -> NamedFormula | None:
    """The library formula that ``formula`` is (the same syntax tree) over the same
    alphabet, if one defines a language; else None."""
    syms = set(alphabet)
    for nf in LIBRARY.values():
        if nf.language is not None and set(nf.alphabet) == syms and nf.formula == formula:
            return nf
    return None


def compile_library(
    name: str,
    regime: Regime | str = Regime.TEMPERATURE,
    *,
    alphabet: str | Iterable[str] | None = None,
) -> Model:
    """The library formula ``name`` (a deprecated name warns and resolves) compiled in
    ``regime`` over ``alphabet`` (default: its own), named ``"NAME [regime]"``; its
    ``meta["language"]`` is the language it defines, when it defines one over that
    alphabet (:func:`library_language`)."""
    from attncert.compile.compiler import compile_formula

    nf = library_formula(name)
    syms = tuple(alphabet) if alphabet is not None else tuple(nf.alphabet)
    return compile_formula(
        nf.formula,
        regime,
        alphabet=syms,
        name=f"{nf.name} [{Regime.parse(regime).value}]",
        language=library_language(nf, syms),
    )
