"""The quantities of Hahn (2020) §5.1 / supplement S1 as sympy expressions (one source of truth).

Symbols carry the assumptions sympy needs (positive, integer). Names follow the paper:
``c`` (c-transformer), ``H`` (heads), ``C``/``Cp`` (free fractions C, C′), ``eta``, ``q``,
``delta`` (Definition 5), ``k`` (Stage 2's k), ``n`` (input length).
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "A",
    "B",
    "C",
    "Cp",
    "D",
    "E_paper",
    "E_supplement",
    "H",
    "c",
    "chernoff8",
    "delta",
    "eq9_bound",
    "eq11_rhs",
    "eta",
    "f_bound",
    "k",
    "n",
    "q",
    "rhs12",
]

c = sp.Symbol("c", positive=True, integer=True)
H = sp.Symbol("H", positive=True, integer=True)
k = sp.Symbol("k", positive=True, integer=True)
n = sp.Symbol("n", positive=True, integer=True)
C = sp.Symbol("C", positive=True)
Cp = sp.Symbol("Cp", positive=True)
eta = sp.Symbol("eta", positive=True)
q = sp.Symbol("q", positive=True)
delta = sp.Symbol("delta", positive=True)

#: LLL weights (paper: "Set A := 1/k², B := 1/2").
A = 1 / k**2
B = sp.Rational(1, 2)

#: f = E·k²: paper (end of Stage 2, and supplement eq. (30)) counts the neighbours of a *head*
#: (all its 2^c values z): E = 2^{2c} c² H/(ηC). Supplement Corollary 18 counts neighbours of
#: a *tuple* ((h,i),z), which k-depends on ≤ ck bits: E = 2^c c² H/(ηC).
E_paper = 2 ** (2 * c) * c**2 * H / (eta * C)
E_supplement = 2**c * c**2 * H / (eta * C)


def f_bound(version: str = "supplement") -> sp.Expr:
    """f = E·k², the bound on the number of unsatisfied k-neighbours (paper or supplement)."""
    return (E_paper if version == "paper" else E_supplement) * k**2


#: D = (1 − (q/2)^c)^{1/((1/η)c²/C)} of (12).
D = (1 - (q / 2) ** c) ** (eta * C / c**2)

#: Right-hand side of (9)/(19): P(X) ≤ (1 − (q/2)^c)^{k/((1/η)c²/C)}.
eq9_bound = (1 - (q / 2) ** c) ** (k * eta * C / c**2)


def rhs12(version: str = "supplement") -> sp.Expr:
    """A^{1/k} (1−B)^{1/k} (1−A)^{f/k}, the right-hand side of (12)/(33)."""
    return A ** (1 / k) * (1 - B) ** (1 / k) * (1 - A) ** (f_bound(version) / k)


#: (8)/(18): the Chernoff bound on P(X₀).
chernoff8 = sp.exp(-(delta**2) * q * (1 - 2 * eta) * C * n / 3)

#: Right-hand side of (11)/(32): B(1−A)^{2^c H n}.
eq11_rhs = B * (1 - A) ** (2**c * H * n)
