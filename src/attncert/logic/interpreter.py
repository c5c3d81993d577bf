"""Reference interpreter: the truth value of a formula at every position.

Semantics as in Yang et al. Defs. 10, 14, 19 (positions 1…n; a string is accepted
when the formula holds at position n). Vectorised over a batch of equal-length
strings with numpy: a node's value is a (B, n) bool array (count terms: int).
Since/Until use the recurrences S(i) = ψ(i−1) ∨ (φ(i−1) ∧ S(i−1)), S(1) = false
(and mirror for U), which are equivalent to the definitions and independent of
the "rightmost ψ ∨ ¬φ" characterisation the compiler uses.

    >>> from attncert.logic import parse, evaluate
    >>> evaluate(parse("Q_a S Q_b"), "baab")
    (False, True, True, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attncert.errors import InputError
from attncert.logic import syntax as s
from attncert.logic.numpred import predicate

__implements__ = (
    "Yang Definition 10",
    "Yang Definition 14",
    "Yang Definition 19",
)


def _chars(strings: Sequence[str]) -> np.ndarray:
    strings = list(strings)
    if not strings:
        raise InputError("empty batch of strings")
    n = len(strings[0])
    if any(len(w) != n for w in strings):
        raise InputError("strings in one batch must have equal length")
    if n == 0:
        raise InputError("formulas are evaluated on non-empty strings", expected="length ≥ 1")
    return np.array([list(w) for w in strings], dtype="<U1").reshape(len(strings), n)


class _Eval:
    def __init__(self, chars: np.ndarray):
        self.chars = chars
        self.b, self.n = chars.shape
        self.memo: dict[int, tuple[object, np.ndarray]] = {}

    def term(self, t: s.CountTerm) -> np.ndarray:
        v = self.formula(t.arg).astype(np.int64)
        if isinstance(t, s.CountLeft):
            return np.cumsum(v, axis=1)
        return np.cumsum(v[:, ::-1], axis=1)[:, ::-1]

    def linear(self, lin: s.Linear) -> np.ndarray:
        out = np.full((self.b, self.n), lin.const, dtype=np.int64)
        for c, t in lin.terms:
            out = out + c * self.term(t)
        return out

    def formula(self, f: s.Formula) -> np.ndarray:
        hit = self.memo.get(id(f))
        if hit is not None and hit[0] is f:
            return hit[1]
        v = self._compute(f)
        self.memo[id(f)] = (f, v)
        return v

    def _compute(self, f: s.Formula) -> np.ndarray:
        b, n = self.b, self.n
        if isinstance(f, s.Top):
            return np.ones((b, n), dtype=bool)
        if isinstance(f, s.Bottom):
            return np.zeros((b, n), dtype=bool)
        if isinstance(f, s.First):
            out = np.zeros((b, n), dtype=bool)
            out[:, 0] = True
            return out
        if isinstance(f, s.Last):
            out = np.zeros((b, n), dtype=bool)
            out[:, -1] = True
            return out
        if isinstance(f, s.Atom):
            return self.chars == f.symbol
        if isinstance(f, s.Not):
            return ~self.formula(f.arg)
        if isinstance(f, s.And):
            return self.formula(f.left) & self.formula(f.right)
        if isinstance(f, s.Or):
            return self.formula(f.left) | self.formula(f.right)
        if isinstance(f, s.Prev):
            v = self.formula(f.arg)
            out = np.zeros((b, n), dtype=bool)
            out[:, 1:] = v[:, :-1]
            return out
        if isinstance(f, s.Next):
            v = self.formula(f.arg)
            out = np.zeros((b, n), dtype=bool)
            out[:, :-1] = v[:, 1:]
            return out
        if isinstance(f, s.Since):
            phi, psi = self.formula(f.left), self.formula(f.right)
            out = np.zeros((b, n), dtype=bool)
            for i in range(1, n):
                out[:, i] = psi[:, i - 1] | (phi[:, i - 1] & out[:, i - 1])
            return out
        if isinstance(f, s.Until):
            phi, psi = self.formula(f.left), self.formula(f.right)
            out = np.zeros((b, n), dtype=bool)
            for i in range(n - 2, -1, -1):
                out[:, i] = psi[:, i + 1] | (phi[:, i + 1] & out[:, i + 1])
            return out
        if isinstance(f, s.Compare):
            left, right = self.linear(f.left), self.linear(f.right)
            return {
                s.CmpOp.LT: left < right,
                s.CmpOp.LE: left <= right,
                s.CmpOp.EQ: left == right,
                s.CmpOp.NE: left != right,
                s.CmpOp.GE: left >= right,
                s.CmpOp.GT: left > right,
            }[f.op]
        if isinstance(f, s.PosPred):
            theta = predicate(f.pred)
            row = np.array([theta(i, n) for i in range(1, n + 1)], dtype=bool)
            return np.broadcast_to(row, (b, n)).copy()
        if isinstance(f, s.CountPred):
            theta = predicate(f.pred)
            table = np.array([theta(k, n) for k in range(n + 1)], dtype=bool)
            return table[self.term(f.term)]
        raise TypeError(f"not a formula: {f!r}")


def evaluate_batch(formula: s.Formula, strings: Sequence[str]) -> np.ndarray:
    """(B, n) bool array: the value of ``formula`` at every position of every string."""
    return _Eval(_chars(strings)).formula(formula)


def evaluate_nodes(
    formula: s.Formula, strings: Sequence[str], nodes: Sequence[s.Formula]
) -> dict[s.Formula, np.ndarray]:
    """Values of several subformulas at once (shared work), keyed by subformula."""
    ev = _Eval(_chars(strings))
    ev.formula(formula)
    return {f: ev.formula(f) for f in nodes}


def evaluate(formula: s.Formula, string: str) -> tuple[bool, ...]:
    """The truth value of ``formula`` at positions 1…n of ``string``."""
    return tuple(bool(v) for v in evaluate_batch(formula, [string])[0])


def holds(formula: s.Formula, string: str) -> bool:
    """Whether ``string`` satisfies ``formula`` (its value at the last position)."""
    return evaluate(formula, string)[-1]


def count_values(term: s.CountTerm, string: str) -> tuple[int, ...]:
    """The integer value of a count term at positions 1…n."""
    return tuple(int(v) for v in _Eval(_chars([string])).term(term)[0])
