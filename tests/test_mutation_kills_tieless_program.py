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


def test_rule_arg_b_needs_a_positive_factor_k():
    from attncert.kernel.tieless.polynomial import mono_mul
    from attncert.kernel.tieless.program import _arg_b

    jj = ("I", ("j",))

    def keyed(k_atom):
        km = ((k_atom, 1),)
        # −K·I(j)² + 2K·1·I(j) with K = k_atom
        return {mono_mul(km, ((jj, 2),)): fmpq(-1), mono_mul(km, ((jj, 1),)): fmpq(2)}

    assert _arg_b(keyed(("I", ("i",)))) == ("ARG-B", fmpq(1))  # I(i) ≥ 1
    assert _arg_b(keyed(("B", ("i",)))) is None  # [i = 1] can be 0


def test_a_learned_position_table_is_refused():
    import dataclasses

    import numpy as np
    import pytest

    from attncert.kernel.tieless.program import NotDerived
    from attncert.model import zoo_model

    m = zoo_model("dyck2_program")
    table = dataclasses.replace(m.embedding, table=np.zeros((40, m.embedding.d)))
    with pytest.raises(NotDerived, match=r"^a learned position table has no closed form in N$"):
        derive(dataclasses.replace(m, embedding=table))


def test_a_layer_without_residual_drops_its_input():
    """Without the residual the first layer's output is its heads' alone: the next
    layer's lookup then no longer sees the embedding and fits no argmax rule."""
    import pytest

    from attncert.kernel.tieless.program import NotDerived, symbolic_run
    from attncert.model import zoo_model
    from attncert.model.serialize import model_from_dict, model_to_dict

    d = model_to_dict(zoo_model("dyck2_program"))
    d["layers"][0]["residual"] = False
    with pytest.raises(NotDerived, match=r"^L1H0: its scores fit neither ARG-A nor ARG-B$"):
        symbolic_run(model_from_dict(d))
