"""The balanced completion behind Corollary 2's Dyck pairs (attncert.hard.corollary):
exact against brute force over every restriction of small length — the O(n) greedy for
one bracket pair and the bitset interval DP for two."""

from __future__ import annotations

import itertools

import pytest

from attncert.hard.corollary import _dyck_member, separating_pair
from attncert.languages import language
from attncert.restriction import Restriction

__implements__ = ("Hahn Corollary 2",)


def _restrictions(alphabet: str, n: int):
    free_sets = [()] + [tuple(c) for c in alphabet]  # the alphabet, or one symbol only
    for fixed in itertools.product([None, *alphabet], repeat=n):
        for fs in free_sets:
            yield Restriction(tuple(alphabet), fixed, fs)


def _brute(lang, rho: Restriction) -> bool:
    free = rho.free_positions
    for values in itertools.product(rho.symbols, repeat=len(free)):
        if lang.contains(rho.complete(dict(zip(free, values, strict=True)))):
            return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize(("name", "alphabet", "max_n"), [("dyck1", "()", 8), ("dyck2", "()[]", 4)])
def test_a_balanced_completion_is_found_iff_one_exists(name, alphabet, max_n):
    lang = language(name)
    cases = found = 0
    for n in range(1, max_n + 1):
        for rho in _restrictions(alphabet, n):
            got = _dyck_member(lang, rho)
            want = _brute(lang, rho)
            assert (got is not None) == want, (name, str(rho), rho.free_symbols)
            if got is not None:
                assert rho.compatible(got) and lang.contains(got)
                found += 1
            cases += 1
    assert found > 0 and cases > found  # both outcomes exercised


def test_the_dyck1_pair_at_large_n_is_immediate():
    n = 20000
    rho = Restriction.parse("()", "(" + "*" * (n - 2) + ")")
    a, b = separating_pair(language("dyck1"), rho, ())
    assert language("dyck1").contains(a) and not language("dyck1").contains(b)
    assert sum(x != y for x, y in zip(a, b, strict=True)) == 1
