"""Languages by name, for the CLI and for scripts.

``language("parity")`` etc.; names: ``parity`` (even number of 1s, Hahn's PARITY),
``parity-odd``, ``ones_star`` (1*), ``anbn`` (aⁿbⁿ), ``dyck1``, ``dyck2`` (and
``dyckK`` for K ≤ 4, or ``dyck`` with ``k=``/``pairs=``), ``first_last`` (first symbol
equals last), ``majority`` (more 1s than 0s), and ``dfa`` with
``path=`` (a DFA JSON file) or ``dfa=`` (a :class:`DFA`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from attncert.errors import InputError
from attncert.languages.anbn import AnBn
from attncert.languages.base import Language
from attncert.languages.dfa import DFA, load_dfa
from attncert.languages.dyck import Dyck
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
