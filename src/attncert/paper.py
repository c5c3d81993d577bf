"""Explicit links from code, tests and notebooks to the papers' numbered results.

Mark what implements (or tests) a numbered result, with the result's name as listed in
:data:`attncert.proofcheck.results.RESULTS` (``"Hahn Theorem 1"``, ``"Hahn eq. (8)"``,
``"Hahn S1 Lemma 15"``, ``"Hahn S1 eq. (27)"``, ``"Hahn S2 eq. (35)"``,
``"Yang Theorem 26"``, …):

- a function, class or test function::

      from attncert.paper import implements

      @implements("Hahn S1 Lemma 6")
      def stage1(...): ...

- a whole module: a module-level tuple ``__implements__ = ("Hahn S1 Definition 7", ...)``;
- a notebook section: a markdown cell containing ``<!-- implements: Hahn S1 Lemma 6;
  Hahn S1 Lemma 15 -->``;
- a proof artifact: its manifest's ``exhibits`` (paper + results).

``python -m attncert.proofcheck.traceability`` reads these markers *statically* (from the
source, without importing anything) and regenerates ``docs/traceability.md``;
``tests/test_traceability.py`` fails on an unknown name, and when a numbered result has
neither code + test nor a reasoned "not applicable" entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["implements"]

T = TypeVar("T")


def implements(*results: str) -> Callable[[T], T]:
    """Decorator recording that the object implements (or tests) ``results``; the object is
    returned unchanged apart from an ``__implements__`` attribute."""
    if not results or not all(isinstance(r, str) and r for r in results):
        raise TypeError("implements() needs one or more result names")

    def mark(obj: T) -> T:
        try:
            prev = getattr(obj, "__implements__", ())
            obj.__implements__ = (*prev, *results)  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # pragma: no cover - builtins, slotted objects
            pass
        return obj

    return mark
