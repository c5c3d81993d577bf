"""Theorem 26's symbolic run (kernel/tieless/program), pinned where a mutation survived
(issue 34): rule FFN's magnitude bound scales each unit's bound by |w|, and the derived
gap is the argmax heads' (1 when no head needs one)."""

from __future__ import annotations

from flint import fmpq

from attncert.compile import compile_formula
from attncert.compile.dyck import dyck_program_model
from attncert.compile.tieless import to_average_hard
from attncert.kernel.tieless.polynomial import atom, scale
from attncert.kernel.tieless.program import _Run, derive


def test_ffn_magnitude_bound_is_weight_times_unit_bound_plus_bias():
    run = _Run(dyck_program_model(1))
    i = atom(("I", ("i",)))
    mag, values, integer = run.ffn_range([(0, fmpq(2))], [scale(i, 3)], fmpq(-5))
    assert mag == {0: fmpq(5), 1: fmpq(6)} and values is None and integer is True


def test_the_derived_gap_is_the_argmax_heads():
    prev = to_average_hard(compile_formula("prev Q_1", regime="unbounded", alphabet="01"))
    der = derive(prev)
    assert der.heads == ("L0H0: ARG-B (gap ≥ 3)",) and der.gap == 3
    first = to_average_hard(compile_formula("first", regime="temperature", alphabet="ab"))
    der = derive(first)
    assert der.heads == () and der.gap == 1
