"""Languages: membership vs independent brute-force definitions; DFA validation and files."""

from __future__ import annotations

import doctest
import functools
import itertools
import json
import operator
import random
import re

import pytest

import attncert.languages
import attncert.languages.dfa
from attncert.errors import InputError, SpecError, UnsupportedError
from attncert.languages import (
    DFA,
    LANGUAGE_NAMES,
    AnBn,
    Dyck,
    OnesStar,
    Parity,
    all_strings,
    language,
    load_dfa,
    save_dfa,
)


def strings_upto(alphabet, n):
    for k in range(n + 1):
        yield from ("".join(t) for t in itertools.product(alphabet, repeat=k))


# ----- independent definitions -------------------------------------------------------


def parity_even_bf(s):
    return functools.reduce(operator.xor, (int(c) for c in s), 0) == 0


def dyck_bf(s, pairs):
    """Delete adjacent matched pairs until none is left (a different algorithm from a stack)."""
    prev = None
    while prev != s:
        prev = s
        for p in pairs:
            s = s.replace(p, "")
    return s == ""


def dyck_prefix_bf(s, pairs):
    prev = None
    while prev != s:
        prev = s
        for p in pairs:
            s = s.replace(p, "")
    return all(c in {p[0] for p in pairs} for c in s)


def test_parity_even_and_odd_match_xor_definition():
    even, odd = Parity(), Parity(odd=True)
    assert (even.name, odd.name) == ("parity", "parity-odd")
    count = 0
    for s in strings_upto("01", 12):
        assert even.contains(s) is parity_even_bf(s), s
        assert odd.contains(s) is (not parity_even_bf(s)), s
        count += 1
    assert count == 2**13 - 1
    assert even.contains("") and not odd.contains("")


def test_regular_languages_agree_with_their_dfa():
    for lang in (Parity(), Parity(odd=True), OnesStar()):
        dfa = lang.as_dfa()
        assert lang.is_regular and dfa.name == lang.name
        for s in strings_upto("01", 10):
            assert dfa.accepts(s) is lang.contains(s), (lang.name, s)


def test_ones_star_matches_regex():
    lang = OnesStar()
    for s in strings_upto("01", 12):
        assert lang.contains(s) is bool(re.fullmatch("1*", s)), s


def test_anbn_matches_definition():
    lang = AnBn()
    members = 0
    for s in strings_upto("ab", 12):
        k = len(s) // 2
        expected = s == "a" * k + "b" * k
        assert lang.contains(s) is expected, s
        members += expected
    assert members == 7  # n = 0..6
    assert not lang.is_regular
    with pytest.raises(UnsupportedError, match="not regular"):
        lang.as_dfa()


@pytest.mark.slow
@pytest.mark.parametrize(("k", "maxlen"), [(1, 12), (2, 8), (3, 6)])
def test_dyck_matches_pair_deletion(k, maxlen):
    lang = Dyck(k)
    pairs = ("()", "[]", "{}")[:k]
    assert lang.name == f"dyck{k}"
    assert lang.alphabet == tuple("".join(pairs))
    n_members = 0
    for s in strings_upto(lang.alphabet, maxlen):
        expected = dyck_bf(s, pairs)
        assert lang.contains(s) is expected, s
        assert lang.is_prefix(s) is dyck_prefix_bf(s, pairs), s
        assert lang.height(s) == sum(1 if c in "([{" else -1 for c in s)
        n_members += expected
    # members of length 2m: Catalan(m) · k^m
    catalan = [1, 1, 2, 5, 14, 42, 132]
    assert n_members == sum(catalan[m] * k**m for m in range(maxlen // 2 + 1))


def test_dyck_custom_pairs_and_errors():
    lang = Dyck(pairs=("ab", "cd"))
    assert lang.alphabet == ("a", "b", "c", "d") and lang.k == 2
    assert lang.contains("acdb") and not lang.contains("acbd")
    assert lang.name == "dyck[ab,cd]"
    with pytest.raises(InputError, match="needs explicit bracket pairs"):
        Dyck(5)
    with pytest.raises(InputError, match="bracket pair"):
        Dyck(pairs=("(",))
    with pytest.raises(SpecError, match="repeated symbol"):
        Dyck(pairs=("()", "(]"))
    assert Dyck(2) == language("dyck2") and Dyck(1) != Dyck(2)


def test_unknown_symbol_is_an_input_error_naming_the_position():
    with pytest.raises(InputError, match=r"unknown symbol '2' at position 3 of '012'"):
        Parity().contains("012")
    with pytest.raises(InputError, match="unknown symbol 'x'"):
        Dyck(2).contains("(x)")
    with pytest.raises(InputError, match="unknown symbol"):
        Parity().as_dfa().run("0a")


def test_language_lookup():
    for name in ("parity", "parity-odd", "dyck1", "dyck2", "ones_star", "anbn"):
        assert name in LANGUAGE_NAMES
        assert language(name).name == name
    assert language("dyck3").k == 3
    assert language("dyck", k=2) == Dyck(2)
    with pytest.raises(InputError) as err:
        language("parrity")
    msg = str(err.value)
    assert "unknown language 'parrity'" in msg
    for name in ("parity", "parity-odd", "dyck1", "dyck2", "ones_star", "anbn"):
        assert name in msg
    with pytest.raises(InputError, match="bad parameters"):
        language("parity", odd=True)
    with pytest.raises(InputError, match="exactly one of"):
        language("dfa")


def test_membership_helpers():
    assert list(all_strings("ab", 2)) == ["aa", "ab", "ba", "bb"]
    assert list(Dyck(1).members(4)) == ["(())", "()()"]
    assert "0110" in Parity() and "0111" not in Parity()


# ----- DFA ------------------------------------------------------------------------------


def mod_counter(m: int, accept: set[int]) -> DFA:
    """Counts 1s mod m: a redundant automaton for PARITY when m = 4 and accept = {0, 2}."""
    return DFA(
        states=tuple(f"c{r}" for r in range(m)),
        alphabet=("0", "1"),
        delta=tuple((r, (r + 1) % m) for r in range(m)),
        start=0,
        accepting=frozenset(accept),
        name=f"mod{m}",
    )


def test_dfa_run_is_state_after_prefix():
    dfa = Parity().as_dfa()
    for s in strings_upto("01", 8):
        assert dfa.run(s) == s.count("1") % 2
        q = dfa.start
        for c in s:
            q = dfa.delta[q][dfa.symbol_index[c]]
        assert q == dfa.run(s)
    assert dfa.run("1", state=1) == 0
    assert dfa.step(0, "1") == 1


def test_minimize_redundant_counter():
    big = mod_counter(4, {0, 2})
    small = big.minimize()
    assert small.num_states == 2
    assert small.is_equivalent(Parity().as_dfa())
    assert small.delta == Parity().as_dfa().delta
    assert mod_counter(4, {0}).minimize().num_states == 4
    # unreachable states are dropped
    extra = DFA(("a", "b", "z"), ("0",), ((0,), (1,), (0,)), 0, frozenset({0, 2}))
    assert extra.minimize().num_states == 1


def random_dfa(rng, n, sigma="01"):
    return DFA(
        states=tuple(f"s{i}" for i in range(n)),
        alphabet=tuple(sigma),
        delta=tuple(tuple(rng.randrange(n) for _ in sigma) for _ in range(n)),
        start=rng.randrange(n),
        accepting=frozenset(q for q in range(n) if rng.random() < 0.5),
    )


@pytest.mark.slow
def test_minimize_and_equivalence_against_brute_force():
    rng = random.Random(7)
    for _ in range(150):
        a, b = random_dfa(rng, rng.randint(1, 4)), random_dfa(rng, rng.randint(1, 3))
        ma = a.minimize()
        assert ma.num_states <= a.num_states
        assert ma.minimize() == ma  # canonical: idempotent
        # two DFAs with n1, n2 states that agree on all strings shorter than n1·n2 are equivalent
        horizon = a.num_states * b.num_states
        for s in strings_upto("01", max(horizon, 4)):
            assert ma.accepts(s) is a.accepts(s)
        disagree = [s for s in strings_upto("01", horizon) if a.accepts(s) != b.accepts(s)]
        w = a.distinguishing_string(b)
        if disagree:
            assert w is not None and a.accepts(w) != b.accepts(w)
            assert len(w) == min(len(s) for s in disagree)
        else:
            assert w is None and a.is_equivalent(b)
        # minimal DFAs of equivalent automata coincide
        assert (ma.delta == b.minimize().delta and ma.accepting == b.minimize().accepting) or (
            w is not None
        )


def test_complement():
    dfa = Parity().as_dfa().complement()
    for s in strings_upto("01", 6):
        assert dfa.accepts(s) is Parity(odd=True).contains(s)


@pytest.mark.parametrize(
    ("kwargs", "where", "what"),
    [
        ({"states": ()}, "DFA.states", "no states"),
        ({"states": ("a", "a")}, "DFA.states", "repeated state name 'a'"),
        ({"alphabet": ()}, "DFA.alphabet", "empty alphabet"),
        ({"alphabet": ("0", "10")}, "DFA.alphabet", "symbol '10'"),
        ({"delta": ((0, 1),)}, "DFA.delta", "1 rows for 2 states"),
        ({"delta": ((0, 1), (1,))}, "DFA.delta[1]", "1 entries for 2 symbols"),
        ({"delta": ((0, 1), (1, 2))}, "DFA.delta[1][1]", "state 2"),
        ({"delta": ((0, 1), (1, True))}, "DFA.delta[1][1]", "state True"),
        ({"start": 5}, "DFA.start", "state 5"),
        ({"accepting": frozenset({3})}, "DFA.accepting", "state 3"),
    ],
)
def test_dfa_validation_names_the_field(kwargs, where, what):
    base = {
        "states": ("even", "odd"),
        "alphabet": ("0", "1"),
        "delta": ((0, 1), (1, 0)),
        "start": 0,
        "accepting": frozenset({0}),
    }
    with pytest.raises(SpecError) as err:
        DFA(**{**base, **kwargs})
    assert err.value.where.startswith(where)
    assert what in err.value.message


def test_dfa_json_round_trip(tmp_path):
    for dfa in (Parity().as_dfa(), OnesStar().as_dfa(), mod_counter(4, {1, 3})):
        path = save_dfa(dfa, tmp_path / f"{dfa.name}.json")
        assert load_dfa(path) == dfa
        assert hash(load_dfa(path)) == hash(dfa)
    data = json.loads((tmp_path / "parity.json").read_text())
    assert data["transitions"] == {
        "even": {"0": "even", "1": "odd"},
        "odd": {"0": "odd", "1": "even"},
    }
    assert language("dfa", path=str(tmp_path / "parity.json")) == Parity().as_dfa()


@pytest.mark.parametrize(
    ("mutate", "where", "what"),
    [
        (
            lambda d: d["transitions"]["odd"].pop("1"),
            "transitions.odd",
            "no transition on symbol '1'",
        ),
        (
            lambda d: d["transitions"]["odd"].update({"1": "nowhere"}),
            "transitions.odd.1",
            "unknown state",
        ),
        (
            lambda d: d["transitions"]["odd"].update({"2": "odd"}),
            "transitions.odd",
            "unknown symbol '2'",
        ),
        (lambda d: d["transitions"].update({"ghost": {}}), "transitions", "unknown state 'ghost'"),
        (lambda d: d.update({"start": "zero"}), "start", "unknown state 'zero'"),
        (lambda d: d.update({"accepting": "even"}), "accepting", "a string"),
        (lambda d: d.pop("states"), "", "missing field 'states'"),
        (lambda d: d.update({"format": "dfa"}), "format", "format 'dfa'"),
        (lambda d: d.update({"states": ["even", "even"]}), "states", "repeated state name"),
    ],
)
def test_dfa_file_errors_are_located(tmp_path, mutate, where, what):
    data = Parity().as_dfa().to_dict()
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SpecError) as err:
        load_dfa(path)
    assert err.value.where.startswith(str(path))
    assert err.value.where.endswith(where)
    assert what in err.value.message


def test_dfa_malformed_json_names_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "attncert-dfa",\n "version": 1,,\n}')
    with pytest.raises(SpecError, match=r"line 2, column 15"):
        load_dfa(path)


def test_doctests():
    for module in (attncert.languages, attncert.languages.dfa):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0


def test_an_unknown_symbol_error_quotes_a_prefix_not_the_whole_string():
    from attncert.errors import InputError
    from attncert.languages import language

    with pytest.raises(InputError) as err:
        language("parity").contains("0" * 5000 + "2")
    msg = str(err.value)
    assert "position 5001" in msg and "(5001 symbols)" in msg and len(msg) < 300
