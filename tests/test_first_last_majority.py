"""FIRST-LAST and MAJORITY: membership, the DFA, and Corollary-2 pairs against brute force."""

from __future__ import annotations

import itertools

import pytest

from attncert.hard.corollary import separating_pair
from attncert.hard.restriction import Restriction
from attncert.languages import LANGUAGE_NAMES, FirstLast, Majority, all_strings, language


def test_membership_by_definition():
    fl, maj = FirstLast(), Majority()
    assert not fl.contains("") and fl.contains("0") and fl.contains("1")
    assert fl.contains("0110") and not fl.contains("0111") and fl.contains("10101")
    assert not maj.contains("") and maj.contains("1") and not maj.contains("0")
    assert not maj.contains("01") and maj.contains("011") and not maj.contains("0011")
    for n in range(0, 11):
        for s in all_strings("01", n):
            assert fl.contains(s) == (n > 0 and s[0] == s[-1])
            assert maj.contains(s) == (s.count("1") > s.count("0"))


def test_first_last_dfa_agrees_with_membership():
    fl = FirstLast()
    dfa = fl.as_dfa()
    assert fl.is_regular and dfa.name == "first_last"
    for n in range(0, 12):
        for s in all_strings("01", n):
            assert dfa.accepts(s) == fl.contains(s), s
    # the automaton is minimal: five states are needed (start, and first × last)
    assert dfa.minimize().num_states == 5


def test_majority_is_not_regular_and_both_are_registered():
    assert not Majority().is_regular
    for name in ("first_last", "majority"):
        assert name in LANGUAGE_NAMES and language(name).name == name


def _brute_force_pair_exists(lang, rho, S):
    groups: dict[tuple, set[bool]] = {}
    for s in rho.completions():
        key = tuple(s[u] for u in S)
        groups.setdefault(key, set()).add(lang.contains(s))
    return any(len(v) == 2 for v in groups.values())


def _all_cases(n_max, free_symbols=("", "1", "0")):
    for n in range(1, n_max + 1):
        for fixed in itertools.product((None, "0", "1"), repeat=n):
            for fs in free_symbols:
                rho = Restriction(("0", "1"), fixed, tuple(fs))
                free = rho.free_positions
                for k in range(len(free) + 1):
                    for S in itertools.combinations(free, k):
                        yield rho, S
                # S may name fixed positions too
                fixed_pos = [i for i in range(n) if fixed[i] is not None]
                if fixed_pos:
                    yield rho, tuple(sorted({fixed_pos[0], *free[:1]}))


@pytest.mark.slow
@pytest.mark.parametrize("lang", [Majority(), FirstLast()], ids=lambda x: x.name)
def test_separating_pairs_match_brute_force(lang):
    """Exact on every restriction and every S for n ≤ 6 (and single-symbol free sets):
    a pair is returned iff one exists, and a returned pair is checked."""
    found = exists = 0
    for rho, S in _all_cases(6):
        pair = separating_pair(lang, rho, S)
        want = _brute_force_pair_exists(lang, rho, S)
        assert (pair is not None) == want, (str(rho), S, rho.free_symbols)
        exists += want
        if pair is not None:
            a, b = pair
            found += 1
            assert rho.compatible(a) and rho.compatible(b)
            assert all(a[u] == b[u] for u in S)
            assert lang.contains(a) != lang.contains(b)
    assert found == exists > 100


def test_majority_pair_differs_in_one_position_outside_s():
    rho = Restriction.parse("01", "1*0**1**0*")
    S = (1, 3)
    a, b = separating_pair(Majority(), rho, S)
    diff = [i for i in range(rho.n) if a[i] != b[i]]
    assert len(diff) == 1 and diff[0] not in S
    assert Majority().contains(a) and not Majority().contains(b)
    # every free position in S: nothing can tip the count
    assert separating_pair(Majority(), rho, rho.free_positions) is None
    # already decided by the fixed positions: 1s are a majority whatever the free ones do
    assert separating_pair(Majority(), Restriction.parse("01", "1111*"), ()) is None


def test_majority_pair_at_large_n_is_fast_and_valid():
    n = 4096
    rho = Restriction.parse("01", "".join("1" if i % 3 == 0 else "*" for i in range(n)))
    S = tuple(rho.free_positions[:50])
    a, b = separating_pair(Majority(), rho, S)
    assert Majority().contains(a) != Majority().contains(b)
    assert all(a[u] == b[u] for u in S) and rho.compatible(a) and rho.compatible(b)


@pytest.mark.slow
@pytest.mark.parametrize(
    "lang", [Majority(), FirstLast(), language("parity")], ids=lambda x: x.name
)
def test_pairs_with_a_given_first_string_match_brute_force(lang):
    """With ``base`` (a ρ-compatible string), a pair starting with it is returned iff a
    partner exists (brute force over the completions, n ≤ 5); otherwise the pair is any
    pair, returned iff one exists."""
    with_base = 0
    for rho, S in _all_cases(5, free_symbols=("",)):
        completions = list(rho.completions())
        for base in completions[:: max(1, len(completions) // 3)]:
            pair = separating_pair(lang, rho, S, base=base)
            partner = any(
                all(s[u] == base[u] for u in S) and lang.contains(s) != lang.contains(base)
                for s in completions
            )
            assert (pair is not None) == _brute_force_pair_exists(lang, rho, S)
            if pair is None:
                continue
            a, b = pair
            assert rho.compatible(a) and rho.compatible(b) and all(a[u] == b[u] for u in S)
            assert lang.contains(a) != lang.contains(b)
            assert (a == base) == partner, (str(rho), S, base, pair)
            with_base += a == base
    assert with_base > 100
