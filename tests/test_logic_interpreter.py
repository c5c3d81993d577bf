"""The interpreter against independent, definitional implementations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logic_strategies import formulas

from attncert.languages import language
from attncert.logic import LIBRARY, count_values, evaluate, evaluate_batch, holds, parse
from attncert.logic import syntax as s
from attncert.logic.numpred import PREDICATES

__implements__ = (
    "Yang Definition 10",
    "Yang Definition 14",
    "Yang Definition 19",
)


def words(alphabet: str, max_len: int):
    for n in range(1, max_len + 1):
        for w in itertools.product(alphabet, repeat=n):
            yield "".join(w)


def naive(f: s.Formula, w: str, i: int) -> bool:
    """Definitions 10, 14, 19 read literally (1-based i), one position at a time."""
    n = len(w)
    if isinstance(f, s.Top):
        return True
    if isinstance(f, s.Bottom):
        return False
    if isinstance(f, s.First):
        return i == 1
    if isinstance(f, s.Last):
        return i == n
    if isinstance(f, s.Atom):
        return w[i - 1] == f.symbol
    if isinstance(f, s.Not):
        return not naive(f.arg, w, i)
    if isinstance(f, s.And):
        return naive(f.left, w, i) and naive(f.right, w, i)
    if isinstance(f, s.Or):
        return naive(f.left, w, i) or naive(f.right, w, i)
    if isinstance(f, s.Prev):
        return i > 1 and naive(f.arg, w, i - 1)
    if isinstance(f, s.Next):
        return i < n and naive(f.arg, w, i + 1)
    if isinstance(f, s.Since):
        return any(
            naive(f.right, w, j) and all(naive(f.left, w, k) for k in range(j + 1, i))
            for j in range(1, i)
        )
    if isinstance(f, s.Until):
        return any(
            naive(f.right, w, j) and all(naive(f.left, w, k) for k in range(i + 1, j))
            for j in range(i + 1, n + 1)
        )
    if isinstance(f, s.PosPred):
        return PREDICATES[f.pred](i, n)
    if isinstance(f, s.CountPred):
        return PREDICATES[f.pred](naive_count(f.term, w, i), n)
    if isinstance(f, s.Compare):

        def val(lin):
            return lin.const + sum(c * naive_count(t, w, i) for c, t in lin.terms)

        return f.op.holds(val(f.left), val(f.right))
    raise TypeError(f)


def naive_count(t: s.CountTerm, w: str, i: int) -> int:
    rng = range(1, i + 1) if isinstance(t, s.CountLeft) else range(i, len(w) + 1)
    return sum(naive(t.arg, w, j) for j in rng)


@settings(max_examples=150, deadline=None)
@given(formulas("ab", max_leaves=6), st.lists(st.sampled_from("ab"), min_size=1, max_size=7))
def test_interpreter_matches_definitions(f, letters):
    w = "".join(letters)
    assert evaluate(f, w) == tuple(naive(f, w, i) for i in range(1, len(w) + 1))


@pytest.mark.slow
def test_parity_majority_dyck_against_direct_definitions():
    parity = LIBRARY["parity"].formula
    parity_np = LIBRARY["parity-nopred"].formula
    majority = LIBRARY["majority"].formula
    lang_parity = language("parity-odd")
    for w in words("01", 11):
        odd = w.count("1") % 2 == 1
        assert holds(parity, w) == odd == lang_parity.contains(w)
        assert holds(parity_np, w) == odd
        assert holds(majority, w) == (w.count("1") > w.count("0"))
    dyck = language("dyck1")
    f = LIBRARY["dyck1"].formula
    for w in words("()", 12):
        assert holds(f, w) == dyck.contains(w)


@pytest.mark.slow
def test_flip_flop_and_ngrams_direct():
    ff = LIBRARY["flip-flop"].formula
    for w in words("01xy", 6):
        last, ok = None, True
        for c in w:
            if c in "01":
                last = c
            elif (c == "x" and last != "0") or (c == "y" and last != "1"):
                ok = False
        assert holds(ff, w) == ok, w
    ngram, ngram_next = LIBRARY["ngram"].formula, LIBRARY["ngram-next"].formula
    for w in words("abc", 6):
        n = len(w)
        assert evaluate(ngram, w) == tuple(
            i >= 3 and w[i - 3 : i] == "abc" for i in range(1, n + 1)
        )
        assert evaluate(ngram_next, w) == tuple(w[i - 1 : i + 2] == "abc" for i in range(1, n + 1))


def test_counts_and_predicates():
    w = "abaab"
    assert count_values(s.CountLeft(s.Atom("a")), w) == (1, 1, 2, 3, 3)
    assert count_values(s.CountRight(s.Atom("a")), w) == (3, 2, 2, 1, 0)
    assert evaluate(parse("SQUARE(#<[Q_a])"), w) == (True, True, False, False, False)
    assert evaluate(parse("HALF(#>[Q_b]) | GTHALF(i)"), "abbb") == (False, False, True, True)
    for name, p in PREDICATES.items():
        assert p.at_zero == p(0, 7) == p(0, 2), name  # θ_n(0) independent of n
        assert all(p(k, 6) == p.fn(k, 6) for k in range(7))
    assert [PREDICATES["SQUARE"](k, 20) for k in range(10)] == [
        math.isqrt(k) ** 2 == k for k in range(10)
    ]


def test_batch_equals_single():
    f = LIBRARY["flip-flop"].formula
    ws = ["01xy0", "1yx0x", "y1y0x"]
    batch = evaluate_batch(f, ws)
    assert np.array_equal(batch, np.array([evaluate(f, w) for w in ws]))
