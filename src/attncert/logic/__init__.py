"""Temporal logics TL[◁,▷], TL[S,U], TL[#] and K_t[#] (Yang, Strobl, Chiang, Angluin §4).

    >>> from attncert.logic import parse, evaluate, holds
    >>> f = parse("ODD(#<[Q_1])")
    >>> evaluate(f, "0110"), holds(f, "0111")
    ((False, True, False, False), True)

Syntax trees: :mod:`~attncert.logic.syntax`; text: :func:`parse` / :func:`to_text`;
semantics: :func:`evaluate`; named formulas: :data:`LIBRARY`; numerical predicates:
:data:`PREDICATES`. Compile to a transformer with :func:`attncert.compile_formula`.
"""

from attncert.logic.interpreter import (
    count_values,
    evaluate,
    evaluate_batch,
    evaluate_nodes,
    holds,
)
from attncert.logic.library import LIBRARY, LIBRARY_NAMES, NamedFormula, library_formula
from attncert.logic.numpred import PREDICATE_NAMES, PREDICATES, NumPred
from attncert.logic.parser import FormulaSyntaxError, parse
from attncert.logic.printer import to_text
from attncert.logic.syntax import (
    And,
    Atom,
    Bottom,
    CmpOp,
    Compare,
    CountLeft,
    CountPred,
    CountRight,
    CountTerm,
    First,
    Formula,
    Last,
    Linear,
    Next,
    Not,
    Or,
    PosPred,
    Prev,
    Since,
    Top,
    Until,
)

__all__ = [
    "LIBRARY",
    "LIBRARY_NAMES",
    "PREDICATES",
    "PREDICATE_NAMES",
    "And",
    "Atom",
    "Bottom",
    "CmpOp",
    "Compare",
    "CountLeft",
    "CountPred",
    "CountRight",
    "CountTerm",
    "First",
    "Formula",
    "FormulaSyntaxError",
    "Last",
    "Linear",
    "NamedFormula",
    "Next",
    "Not",
    "NumPred",
    "Or",
    "PosPred",
    "Prev",
    "Since",
    "Top",
    "Until",
    "count_values",
    "evaluate",
    "evaluate_batch",
    "evaluate_nodes",
    "holds",
    "library_formula",
    "parse",
    "to_text",
]
