"""Print formulas in the text syntax of :mod:`attncert.logic.parser`.

The printer is defined with the syntax tree in :mod:`attncert.logic.syntax` (so that
``str(formula)`` needs no import back into that module); this module keeps the
public names ``to_text`` and ``linear_text``. Round trip: ``parse(to_text(f)) == f``.

    >>> from attncert.logic import parse
    >>> to_text(parse("(Q_a & Q_b) S !Q_c"))
    '(Q_a & Q_b) S !Q_c'
"""

from __future__ import annotations

from attncert.logic.syntax import linear_text, to_text

__all__ = ["linear_text", "to_text"]
