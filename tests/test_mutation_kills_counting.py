"""Exact counts over cubes (:mod:`attncert.languages.counting`): the refusals' full text and
the deterministic completions that the enumeration tests of ``test_verify.py`` accept
whichever they are (issue 34: mutation score)."""

from __future__ import annotations

import pytest

from attncert.errors import InputError, UnsupportedError
from attncert.languages import language
from attncert.languages.base import Language
from attncert.languages.counting import completion, count_members


class _Palindromes(Language):
    name = "palindromes"
    alphabet = ("a", "b")

    def _member(self, s) -> bool:
        return list(s) == list(s)[::-1]


def test_a_foreign_symbol_is_refused_naming_it_and_the_alphabet():
    with pytest.raises(InputError) as e:
        count_members(language("dyck2"), "(*x*")
    assert str(e.value) == (
        "symbol 'x' at position 3 of a cube for language dyck2 (expected symbols of ()[] or '*')"
    )


@pytest.mark.parametrize("fn", [count_members, lambda lang, rho: completion(lang, rho, True)])
def test_a_language_without_cube_counts_is_refused_with_the_reason(fn):
    with pytest.raises(UnsupportedError) as e:
        fn(_Palindromes(), "a*")
    assert str(e.value) == (
        "exact counts over cubes are implemented for regular languages (DFAs), majority, "
        "Dyck-k and aⁿbⁿ, not for palindromes "
        "(expected a language whose cube counts are implemented)"
    )


def test_a_majority_non_member_carries_as_many_free_ones_as_it_can():
    # n = 4, no fixed 1: members need ≥ 3 ones, so the non-member takes 2 (the first two
    # free positions); with one fixed 1, one more
    maj = language("majority")
    assert completion(maj, "****", False) == "1100"
    assert completion(maj, "1***", False) == "1100"
    assert completion(maj, "*0*0*", False) == "10100"
    assert completion(maj, "****", True) == "1110"
    assert completion(maj, "11*1", False) is None


def test_a_dyck_non_member_changes_the_first_free_position_to_the_second_symbol():
    # "(" everywhere free, unless that makes a member: then the first free position gets Σ's
    # second symbol ")" (a member with one symbol changed is never a member)
    d2 = language("dyck2")
    assert completion(d2, "*)", False) == "))"
    assert completion(d2, "*)*)", False) == "))()"
    assert completion(d2, "*]", False) == "(]"
    assert completion(d2, "(*", False) == "(("
