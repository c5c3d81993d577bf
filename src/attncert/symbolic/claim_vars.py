"""Symbols, parameter variables and source names shared by the claim lists
(:mod:`.claims_stages`, :mod:`.claims_lll`) — Hahn 2020 §5.1 and supplement S1 notation."""

from __future__ import annotations

import sympy as sp

from attncert.symbolic import formulas as F
from attncert.symbolic.claim_types import FRACTION_C, INT, POS, UNIT_HALF, UNIT_OPEN, Var, unit_open

S = sp.Symbol
R_ = sp.Rational

c, H, k, n, C, Cp, eta, q, delta = F.c, F.H, F.k, F.n, F.C, F.Cp, F.eta, F.q, F.delta
m = S("m", positive=True)  # a number of input bits
U = S("U", positive=True)  # number of Stage 2 iterations
T = S("T", positive=True)  # number of tuples
F0, F1, F3 = S("F0", positive=True), S("F1", positive=True), S("F3", positive=True)
Nb = S("Nb", positive=True)  # layer-0 heads fed by one input bit
Th = S("Th", positive=True)  # unsatisfied tuples k-depending on one layer-0 head
Bh = S("Bh", positive=True)  # input bits one head/tuple k-depends on
Tb = S("Tb", positive=True)  # unsatisfied tuples k-depending on one input bit
j = S("j", nonnegative=True, integer=True)
p = S("p", positive=True)
s_ = S("s", positive=True)
x_ = S("x", positive=True)
D1 = S("D1", positive=True)
Dv = S("Dv", positive=True)
R = S("R", positive=True)
a_ = S("a", positive=True)
G = S("G", positive=True)
Av = S("A", positive=True)
Bv = S("B", positive=True)
fv = S("f", positive=True)
fa = S("f_actual", positive=True)
E = S("E", positive=True)
Vz = S("Vz", positive=True)  # values of one layer-0 activation
Pk = S("Pk", positive=True)  # layer-0 positions a tuple k-depends on
Bc = S("Bc", positive=True)  # input bits of one layer-0 activation
L = S("L", positive=True)  # length of S1's sequence (9)/(10)
NX = S("NX", positive=True)  # number of events X
Dn = S("Dn", positive=True)  # events one Y_t depends on
bb = S("b", positive=True)  # a probability base in (0, 1)
ee = S("e", positive=True)  # a positive exponent
w = S("w", positive=True, integer=True)  # distinct inputs of a dependency structure

# common variables with search samples
V_c = Var(c, INT(1), (sp.Integer(1), sp.Integer(2), sp.Integer(3)))
V_H = Var(H, INT(1), (sp.Integer(1), sp.Integer(2)))
V_C = Var(C, FRACTION_C, (sp.Integer(1), R_(9, 10), R_(1, 2)))
V_eta = Var(eta, UNIT_HALF, (R_(1, 4), R_(1, 10), R_(1, 100)))
V_q = Var(q, UNIT_OPEN, (R_(1, 100), R_(1, 10), R_(1, 3)))
V_delta = Var(delta, POS, (R_(1, 2), sp.Integer(1), sp.Integer(50)))
V_n = Var(n, INT(1), (sp.Integer(8), sp.Integer(10), sp.Integer(40)))
V_A = unit_open(Av, (R_(1, 4),), "a")
V_B = unit_open(Bv, (R_(1, 2),), "b")

PAPER = "Hahn 2020 §5.1"
EXTRACT = "Hahn 2020 §5 (extract)"
SUPP = "Hahn 2020 supplement S1"
ATTNCERT = "attncert"
