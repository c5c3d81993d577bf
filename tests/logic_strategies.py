"""Hypothesis strategies for random formulas (shared by the logic and compile tests)."""

from __future__ import annotations

from hypothesis import strategies as st

from attncert.logic import syntax as s
from attncert.logic.numpred import PREDICATE_NAMES

CMP_OPS = list(s.CmpOp)


def formulas(
    symbols: str = "ab", *, counting: bool = True, max_leaves: int = 8, future: bool = True
):
    leaves = [
        st.sampled_from([s.Atom(a) for a in symbols]),
        st.just(s.Top()),
        st.just(s.Bottom()),
        st.just(s.First()),
    ]
    if future:
        leaves.append(st.just(s.Last()))
    if counting:
        leaves.append(st.builds(s.PosPred, st.sampled_from(PREDICATE_NAMES)))
    base = st.one_of(*leaves)

    def extend(children):
        unary = [s.Not, s.Prev] + ([s.Next] if future else [])
        binary = [s.And, s.Or, s.Since] + ([s.Until] if future else [])
        opts = [
            st.builds(lambda c, a: c(a), st.sampled_from(unary), children),
            st.builds(lambda c, a, b: c(a, b), st.sampled_from(binary), children, children),
        ]
        if counting:
            kinds = [s.CountLeft, s.CountRight] if future else [s.CountLeft]
            term = st.builds(lambda k, a: k(a), st.sampled_from(kinds), children)
            mono = st.tuples(st.integers(-3, 3).filter(bool), term)
            lin = st.builds(
                lambda ts, c: s.Linear(tuple(ts), c),
                st.lists(mono, min_size=0, max_size=2),
                st.integers(-3, 3),
            )
            opts.append(st.builds(s.Compare, lin, st.sampled_from(CMP_OPS), lin))
            opts.append(st.builds(s.CountPred, st.sampled_from(PREDICATE_NAMES), term))
        return st.one_of(*opts)

    return st.recursive(base, extend, max_leaves=max_leaves)
