"""Formula → softmax transformer (Yang, Strobl, Chiang, Angluin §4) and §5's
uniform–tieless average-hard → softmax transformer (Theorem 26).

    >>> from attncert.compile import compile_formula
    >>> from attncert.model import forward
    >>> m = compile_formula("ODD(#<[Q_1])", regime="unbounded", alphabet="01")
    >>> bool(forward(m, ["0110100"]).accept[0])
    True

A library formula compiled with :func:`compile_library` records the language it defines
(``meta["language"]``), which ``verify``, ``report`` and ``certify`` then default to.
"""

from attncert.compile.compiler import compile_formula
from attncert.compile.explain import explain
from attncert.compile.library import compile_library
from attncert.compile.regime import REGIMES, Regime

__all__ = ["REGIMES", "Regime", "compile_formula", "compile_library", "explain"]
