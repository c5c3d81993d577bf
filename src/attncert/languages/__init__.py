"""Formal languages of Hahn (2020): PARITY, Dyck-k, 1*, aⁿbⁿ, first = last, majority, any DFA.

Every language is a :class:`Language` (``name``, ``alphabet``, ``contains(s)``);
the regular ones give their automaton with ``as_dfa()``. Look one up by name
with :func:`language` (``"parity"``, ``"parity-odd"``, ``"dyck1"``, ``"dyck2"``,
``"ones_star"``, ``"anbn"``, ``"first_last"``, ``"majority"``, ``"dfa"``).

    >>> from attncert.languages import language
    >>> L = language("dyck2")
    >>> L.contains("([])[]"), L.contains("([)]")
    (True, False)
"""

from attncert.languages.anbn import AnBn
from attncert.languages.base import Language, all_strings
from attncert.languages.dfa import DFA, load_dfa, save_dfa
from attncert.languages.distributions import DyckDistribution, ParityDistribution
from attncert.languages.dyck import DEFAULT_BRACKETS, Dyck
from attncert.languages.firstlast import FirstLast
from attncert.languages.majority import Majority
from attncert.languages.registry import LANGUAGE_NAMES, language
from attncert.languages.regular import OnesStar, Parity

__all__ = [
    "DEFAULT_BRACKETS",
    "DFA",
    "LANGUAGE_NAMES",
    "AnBn",
    "Dyck",
    "DyckDistribution",
    "FirstLast",
    "Language",
    "Majority",
    "OnesStar",
    "Parity",
    "ParityDistribution",
    "all_strings",
    "language",
    "load_dfa",
    "save_dfa",
]
