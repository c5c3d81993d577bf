"""A compiled model's claimed language, checked against its formula where it is cheap (the
claim a compiled model records in ``meta.language``; :mod:`attncert.compile.library`)."""

from __future__ import annotations

from collections.abc import Iterable

from attncert.errors import SpecError
from attncert.logic import syntax as s

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
