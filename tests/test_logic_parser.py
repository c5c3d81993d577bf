"""Parser/printer: round trip on generated formulas, precedence, located errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from logic_strategies import formulas

from attncert.errors import SpecError
from attncert.logic import parse, to_text
from attncert.logic import syntax as s
from attncert.logic.parser import FormulaSyntaxError

__implements__ = (
    "Yang Definition 10",
    "Yang Definition 14",
    "Yang Definition 19",
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(formulas("ab()01", max_leaves=12))
def test_print_parse_round_trip(f):
    text = to_text(f)
    assert parse(text) == f, text
    assert to_text(parse(text)) == text


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("Q_a | Q_b & Q_c", s.Or(s.Atom("a"), s.And(s.Atom("b"), s.Atom("c")))),
        ("Q_a & Q_b | Q_c", s.Or(s.And(s.Atom("a"), s.Atom("b")), s.Atom("c"))),
        ("Q_a & Q_b & Q_c", s.And(s.And(s.Atom("a"), s.Atom("b")), s.Atom("c"))),
        ("!Q_a S Q_b", s.Since(s.Not(s.Atom("a")), s.Atom("b"))),
        ("!(Q_a S Q_b)", s.Not(s.Since(s.Atom("a"), s.Atom("b")))),
        ("prev Q_a U Q_b & Q_c", s.And(s.Until(s.Prev(s.Atom("a")), s.Atom("b")), s.Atom("c"))),
        ("¬◁Q_a ∧ ▷⊤ ∨ ⊥", s.Or(s.And(s.Not(s.Prev(s.Atom("a"))), s.Next(s.Top())), s.Bottom())),
        ("Q_( S Q_)", s.Since(s.Atom("("), s.Atom(")"))),
        (
            "-2*#<[Q_a] + #→[Q_b] - 3 ≥ 1",
            s.Compare(
                s.Linear(((-2, s.CountLeft(s.Atom("a"))), (1, s.CountRight(s.Atom("b")))), -3),
                s.CmpOp.GE,
                s.Linear((), 1),
            ),
        ),
        ("ODD(#<[Q_1])", s.CountPred("ODD", s.CountLeft(s.Atom("1")))),
        ("SQUARE(i) & first", s.And(s.PosPred("SQUARE"), s.First())),
        (
            "#<[Q_a] == 2",
            s.Compare(s.Linear(((1, s.CountLeft(s.Atom("a"))),)), "=", s.Linear((), 2)),
        ),
    ],
)
def test_parse_known_trees(text, tree):
    assert parse(text) == tree
    assert parse(to_text(tree)) == tree


@pytest.mark.parametrize(
    ("text", "line", "column", "expected_part"),
    [
        ("Q_a & ", 1, 7, "an atom Q_a"),
        ("Q_a S Q_b S Q_c", 1, 11, "')'"),
        ("Q_a @ Q_b", 1, 5, "'&'"),
        ("(Q_a | Q_b", 1, 11, "')'"),
        ("Q_a\n  & (Q_b |", 2, 11, "'prev'"),
        ("#<[Q_a] >= ", 1, 12, "an integer"),
        ("ODD(j)", 1, 5, "'i'"),
        ("prev", 1, 5, "an atom Q_a"),
    ],
)
def test_malformed_formulas_are_located(text, line, column, expected_part):
    with pytest.raises(FormulaSyntaxError) as info:
        parse(text)
    err = info.value
    assert (err.line, err.column) == (line, column)
    assert expected_part in err.expected
    assert f"formula:{line}:{column}" in str(err)
    assert isinstance(err, SpecError)
    assert err.context().splitlines()[-1] == " " * (column - 1) + "^"


def test_unknown_predicate_and_zero_coefficient():
    with pytest.raises(FormulaSyntaxError) as info:
        parse("Q_a & FOO(i)")
    assert (info.value.line, info.value.column) == (1, 7)
    assert "ODD" in info.value.expected
    with pytest.raises(SpecError, match="zero coefficient"):
        parse("0*#<[Q_a] >= 1")
    with pytest.raises(SpecError):
        parse("   ")
