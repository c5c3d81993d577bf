"""The exact polynomial algebra of Theorem 26's symbolic run (kernel/tieless/polynomial),
checked operation by operation against hand-computed results (issue 34): cancellation to
the empty polynomial, monomials merged and sorted, substitution and powers, position paths
rebased, integrality, the N-polynomials' sum, product and maximum, rational matrices."""

from __future__ import annotations

import numpy as np
import pytest
from flint import fmpq

from attncert.kernel.tieless.polynomial import (
    ONE,
    add,
    atom,
    const,
    exact,
    is_integral,
    mat,
    matmul,
    mono_mul,
    mul,
    nadd,
    nmax,
    nmul,
    path_of,
    power,
    rebase,
    scale,
    subst,
    transpose,
    with_path,
)

X = ("B", 0, ("p",))
Y = ("I", 1, ("q", "r"))
N = ("N",)


def test_constants_atoms_and_exact_floats():
    assert const(0) == {} and const(fmpq(3, 2)) == {ONE: fmpq(3, 2)}
    assert atom(X) == {((X, 1),): fmpq(1)} and atom(X, 3) == {((X, 3),): fmpq(1)}
    assert exact(0.1) == fmpq(3602879701896397, 36028797018963968)
    assert exact(-2.5) == fmpq(-5, 2)


def test_sums_cancel_to_the_empty_polynomial():
    p = add(atom(X), const(2))
    assert add(p, scale(p, -1)) == {}
    assert add(p, atom(X), const(-2)) == {((X, 1),): fmpq(2)}
    assert add() == {}
    assert scale(p, 0) == {} and scale(p, fmpq(1, 3)) == {
        ((X, 1),): fmpq(1, 3),
        ONE: fmpq(2, 3),
    }


def test_monomials_multiply_by_adding_exponents_in_sorted_order():
    a, b = ((Y, 2),), ((X, 1), (Y, 1))
    assert mono_mul(a, b) == ((X, 1), (Y, 3))
    assert mono_mul(ONE, b) == b
    # (x + 1)(x − 1) = x² − 1: the x terms cancel
    p = mul(add(atom(X), const(1)), add(atom(X), const(-1)))
    assert p == {((X, 2),): fmpq(1), ONE: fmpq(-1)}
    assert mul(p, {}) == {}


def test_powers_and_substitution():
    p = add(atom(X), const(1))
    assert power(p, 0) == const(1)
    assert power(p, 3) == {
        ((X, 3),): fmpq(1),
        ((X, 2),): fmpq(3),
        ((X, 1),): fmpq(3),
        ONE: fmpq(1),
    }
    # 2·x²·y with x ↦ y + 1, y kept: 2y³ + 4y² + 2y
    q = scale(mul(atom(X, 2), atom(Y)), 2)
    r = subst(q, lambda a: add(atom(Y), const(1)) if a == X else None)
    assert r == {((Y, 3),): fmpq(2), ((Y, 2),): fmpq(4), ((Y, 1),): fmpq(2)}
    assert subst(const(5), lambda a: None) == const(5)


def test_position_paths_are_rebased():
    assert path_of(X) == ("p",) and path_of(N) == ()
    assert with_path(Y, ("s",)) == ("I", 1, ("s",))
    p = add(mul(atom(X), atom(Y)), atom(N))
    got = rebase(p, "q", ("u", "v"))
    assert got == {((X, 1), (("I", 1, ("u", "v", "r")), 1)): fmpq(1), ((N, 1),): fmpq(1)}
    assert rebase(p, "z", ("u",)) == p


def test_integrality_needs_integer_coefficients_and_integer_atoms():
    assert is_integral(add(scale(atom(X), 3), atom(N), const(-2)))
    assert not is_integral(scale(atom(X), fmpq(1, 2)))
    assert not is_integral(atom(("U", 0, ("p",))))
    assert not is_integral(atom(("R", 0, ("p",))))
    assert is_integral({})


def test_n_polynomials():
    a = {0: fmpq(1), 2: fmpq(3)}
    b = {1: fmpq(2), 2: fmpq(1, 2)}
    assert nadd(a, b) == {0: fmpq(1), 1: fmpq(2), 2: fmpq(7, 2)}
    assert a == {0: fmpq(1), 2: fmpq(3)}  # not changed in place
    assert nmul(a, b) == {1: fmpq(2), 2: fmpq(1, 2), 3: fmpq(6), 4: fmpq(3, 2)}
    assert nmax(a, b) == {0: fmpq(1), 1: fmpq(2), 2: fmpq(3)}
    assert nmax({}, {}) == {}


def test_rational_matrices():
    m = mat(np.array([[0.5, -1.0, 0.0], [2.0, 0.25, 3.0]]))
    assert m == [[fmpq(1, 2), fmpq(-1), fmpq(0)], [fmpq(2), fmpq(1, 4), fmpq(3)]]
    t = transpose(m)
    assert t == [[fmpq(1, 2), fmpq(2)], [fmpq(-1), fmpq(1, 4)], [fmpq(0), fmpq(3)]]
    assert transpose([]) == []
    assert matmul(m, t) == [[fmpq(5, 4), fmpq(3, 4)], [fmpq(3, 4), fmpq(209, 16)]]
    assert matmul([[fmpq(1)]], [[fmpq(2), fmpq(3)]]) == [[fmpq(2), fmpq(3)]]


def test_matrices_of_mismatched_shapes_are_refused():
    with pytest.raises(ValueError):
        transpose([[fmpq(1), fmpq(2)], [fmpq(3)]])  # ragged rows
    with pytest.raises(ValueError):
        matmul([[fmpq(1), fmpq(2)]], [[fmpq(1)], [fmpq(2)], [fmpq(3)]])  # 1×2 times 3×1
