"""Languages by name, for the CLI and for scripts.

``language("parity")`` etc.; names: ``parity`` (even number of 1s, Hahn's PARITY),
``parity-odd``, ``ones_star`` (1*), ``anbn`` (aⁿbⁿ), ``dyck1``, ``dyck2`` (and
``dyckK`` for K ≤ 4, or ``dyck`` with ``k=``/``pairs=``), ``first_last`` (first symbol
equals last), ``majority`` (more 1s than 0s), and ``dfa`` with
``path=`` (a DFA JSON file) or ``dfa=`` (a :class:`DFA`).

:data:`NAMES` lists every name that needs no parameter (what a command's ``--language``
takes, besides ``dfa:PATH``); :func:`canonical_name` maps a name or a recorded spelling
(``1*``, ``a^n b^n``) to it; :func:`recorded_language` reads the language a model's
``meta`` records (a trained model's recipe, a compiled formula's language).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from attncert.errors import InputError
from attncert.languages.anbn import AnBn
from attncert.languages.base import Language
from attncert.languages.dfa import DFA, load_dfa
from attncert.languages.dyck import DEFAULT_BRACKETS, Dyck
from attncert.languages.firstlast import FirstLast
from attncert.languages.majority import Majority
from attncert.languages.regular import OnesStar, Parity


def _dfa(*, path: str | None = None, dfa: DFA | None = None) -> DFA:
    if (path is None) == (dfa is None):
        raise InputError("language 'dfa' needs exactly one of path=... or dfa=...")
    return dfa if dfa is not None else load_dfa(path)  # type: ignore[arg-type]


_FACTORIES: dict[str, Callable[..., Language]] = {
    "parity": lambda: Parity(odd=False),
    "parity-odd": lambda: Parity(odd=True),
    "ones_star": OnesStar,
    "anbn": AnBn,
    "dyck1": lambda: Dyck(1),
    "dyck2": lambda: Dyck(2),
    "dyck": Dyck,
    "first_last": FirstLast,
    "majority": Majority,
    "dfa": _dfa,
}

LANGUAGE_NAMES: tuple[str, ...] = tuple(_FACTORIES)

#: Every language by a name that needs no parameter: the factories' names, Dyck-k spelled
#: ``dyck1`` … ``dyck4`` (``dyck`` is ``dyck1``; ``dfa`` needs a file).
NAMES: tuple[str, ...] = tuple(
    name
    for factory in _FACTORIES
    if factory not in ("dyck", "dfa")
    for name in (
        (factory, *(f"dyck{k}" for k in range(3, len(DEFAULT_BRACKETS) + 1)))
        if factory == "dyck2"
        else (factory,)
    )
)

#: Other spellings of a language's name, as models record them (the built-in models'
#: ``meta.language``) → the name.
ALIASES: Mapping[str, str] = MappingProxyType(
    {"dyck": "dyck1", "1*": "ones_star", "a^n b^n": "anbn", "aⁿbⁿ": "anbn"}
)


def canonical_name(text: object) -> str | None:
    """The :data:`NAMES` entry that ``text`` names (itself or an :data:`ALIASES` spelling),
    or None when it names no language of the registry."""
    if not isinstance(text, str):
        return None
    if text in NAMES:
        return text
    return ALIASES.get(text)


def recorded_language(meta: Any) -> tuple[str, str | None] | None:
    """What a model's ``meta`` records as its language: ``(text, name)`` from a trained
    model's ``training.recipe.language`` (``attncert train``), else from ``language``
    (a compiled library formula, a built-in model), with ``name`` its
    :func:`canonical_name` — None when the text (``meta.language`` is free text in some
    models, e.g. ``"parity (even number of 1s)"``) names no language of the registry;
    None when nothing is recorded."""
    if not isinstance(meta, Mapping):
        return None
    training = meta.get("training")
    recipe = training.get("recipe") if isinstance(training, Mapping) else None
    for value in (
        recipe.get("language") if isinstance(recipe, Mapping) else None,
        meta.get("language"),
    ):
        if isinstance(value, str) and value.strip():
            return value, canonical_name(value)
    return None


def language(name: str, **kw: Any) -> Language:
    """The language called ``name`` (see module docstring); unknown names raise InputError."""
    factory = _FACTORIES.get(name)
    if factory is None:
        m = re.fullmatch(r"dyck(\d+)", name)
        if m is None:
            raise InputError(
                f"unknown language {name!r}", expected="one of " + ", ".join(LANGUAGE_NAMES)
            )
        k = int(m.group(1))
        factory = lambda: Dyck(k)  # noqa: E731
    try:
        return factory(**kw)
    except TypeError as err:
        raise InputError(f"bad parameters {sorted(kw)} for language {name!r}: {err}") from None
