"""Formal languages of Hahn (2020): PARITY, Dyck-k, 1*, aⁿbⁿ, first = last, majority, any DFA.

Every language is a :class:`Language` (``name``, ``alphabet``, ``contains(s)``);
the regular ones give their automaton with ``as_dfa()``. Look one up by name
with :func:`language` (``"parity"``, ``"parity-odd"``, ``"dyck1"``, ``"dyck2"``,
``"ones_star"``, ``"anbn"``, ``"first_last"``, ``"majority"``, ``"dfa"``; every name
without parameters: :data:`NAMES`); :func:`recorded_language` reads the one a model's
``meta`` records.

    >>> from attncert.languages import language
    >>> L = language("dyck2")
    >>> L.contains("([])[]"), L.contains("([)]")
    (True, False)

Names are imported lazily (the trusted kernel needs membership, not the Theorem 6
distributions).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "AnBn": "attncert.languages.anbn",
    "DEFAULT_BRACKETS": "attncert.languages.dyck",
    "DFA": "attncert.languages.dfa",
    "Dyck": "attncert.languages.dyck",
    "FirstLast": "attncert.languages.firstlast",
    "Majority": "attncert.languages.majority",
    "DyckDistribution": "attncert.languages.distributions",
    "ALIASES": "attncert.languages.registry",
    "LANGUAGE_NAMES": "attncert.languages.registry",
    "NAMES": "attncert.languages.registry",
    "Language": "attncert.languages.base",
    "OnesStar": "attncert.languages.regular",
    "Parity": "attncert.languages.regular",
    "ParityDistribution": "attncert.languages.distributions",
    "all_strings": "attncert.languages.base",
    "canonical_name": "attncert.languages.registry",
    "language": "attncert.languages.registry",
    "load_dfa": "attncert.languages.dfa",
    "recorded_language": "attncert.languages.registry",
    "save_dfa": "attncert.languages.save",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'attncert.languages' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
