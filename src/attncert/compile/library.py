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
from attncert.errors import SpecError
from attncert.logic import syntax as s
from attncert.logic.library import LIBRARY, NamedFormula, library_formula
from attncert.model.spec import Model

#: strings per length at most, for checking a claimed language against the formula
CHECK_STRINGS = 1024


def check_language(name: str, alphabet: Iterable[str], formula: s.Formula | None = None) -> str:
    """``name``'s registry name (:func:`attncert.languages.canonical_name`); SpecError
    unless it names a language over exactly ``alphabet`` (as a set) and — given the
    ``formula`` — one that agrees with the formula at the last position (the reference
    interpreter) on every string of every length n ≥ 1 with |Σ|ⁿ ≤ :data:`CHECK_STRINGS`
    (a claim checked where it is cheap, not proved)."""
    from attncert.languages import all_strings, canonical_name
    from attncert.languages import language as make_language
    from attncert.logic.interpreter import evaluate_batch

    canon = canonical_name(name) if isinstance(name, str) else None
    if canon is None:
        raise SpecError(
            f"language {name!r}", where="language", expected="a name of attncert.languages"
        )
    lang = make_language(canon)
    syms = tuple(alphabet)
    if set(lang.alphabet) != set(syms):
        raise SpecError(
            f"language {canon!r} is over {''.join(lang.alphabet)!r}, the model over "
            f"{''.join(syms)!r}",
            where="language",
            expected="a language over exactly the model's alphabet",
        )
    n = 1
    while formula is not None and len(syms) ** n <= CHECK_STRINGS:
        words = list(all_strings(syms, n))
        for w, value in zip(words, evaluate_batch(formula, words)[:, -1], strict=True):
            if bool(value) != lang.contains(w):
                raise SpecError(
                    f"the formula is not the language {canon!r}: on {w!r} the formula "
                    f"{'holds' if value else 'fails'} at the last position, while {w!r} is "
                    f"{'' if lang.contains(w) else 'not '}a member",
                    where="language",
                    expected="the language the formula defines (or none)",
                )
        n += 1
    return canon


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
