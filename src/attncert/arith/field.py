"""Numbers for rigorous evaluation: exact rationals or arb balls, and decisions on them.

A :class:`Field` is either exact (``prec is None``: python-flint ``fmpq``) or a ball
field at ``prec`` bits (python-flint ``arb``; every operation must run inside
``flint.ctx.workprec(prec)``, which :func:`escalate` arranges).

Decisions (:meth:`Field.sign`, :meth:`Field.compare`):

* exact numbers are compared exactly;
* balls are compared only when they separate; a ball comparison that does not
  separate raises :class:`NeedPrecision`, and :func:`escalate` re-runs the whole
  computation at the next precision of :data:`PRECISIONS` (53 → 4096 bits);
* exact equality of irrational values can never be seen by balls, so it is decided
  *structurally* by the caller: two values carry the same identity key exactly when
  they are the same computation applied to identical exact inputs (see
  :class:`Interner`), and :meth:`Field.compare` reports equality for equal keys
  without looking at the numbers;
* a comparison still open at the cap is an :class:`Undecided` error: reported, and the
  certificate refused — never guessed.

Part of the trusted base (imports no solver, no search code).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
from flint import arb, arb_mat, ctx, fmpq, fmpq_mat

from attncert.errors import AttncertError

PRECISIONS: tuple[int, ...] = (53, 128, 256, 512, 1024, 2048, 4096)

T = TypeVar("T")
Number = Any  # fmpq | arb
Matrix = Any  # fmpq_mat | arb_mat


class NeedPrecision(Exception):
    """A ball comparison did not separate at the current precision (internal signal:
    :func:`escalate` catches it and retries with more bits)."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


class Undecided(AttncertError):
    """A comparison that matters was still undecided at the precision cap."""


@dataclass(frozen=True)
class Field:
    """Exact rationals (``prec=None``) or arb balls at ``prec`` bits."""

    prec: int | None

    @property
    def exact(self) -> bool:
        return self.prec is None

    # ----- construction ------------------------------------------------------------
    def num(self, x: float | int | Fraction | fmpq) -> Number:
        """The exact value of a float64 / int / rational, as a field element (a ball
        field may round a rational to the working precision, outward)."""
        if isinstance(x, fmpq):
            q = x
        elif isinstance(x, Fraction):
            q = fmpq(x.numerator, x.denominator)
        elif isinstance(x, (int, np.integer)):
            q = fmpq(int(x))
        else:
            num, den = float(x).as_integer_ratio()
            if self.prec is not None and den & (den - 1) == 0:
                return arb(float(x))  # a float64 is exactly representable as a ball midpoint
            q = fmpq(num, den)
        return q if self.prec is None else arb(q)

    def mat(self, a: np.ndarray) -> Matrix:
        """The exact matrix of a 2-d float64 array."""
        a = np.asarray(a, dtype=np.float64)
        r, c = a.shape
        vals = a.ravel().tolist()
        if self.prec is None:
            return fmpq_mat(r, c, [fmpq(*v.as_integer_ratio()) for v in vals])
        return arb_mat(r, c, [arb(v) for v in vals])

    def row(self, a: np.ndarray) -> Matrix:
        """A 1 × k matrix of a 1-d float64 array."""
        return self.mat(np.asarray(a, dtype=np.float64).reshape(1, -1))

    def matrix(self, rows: int, cols: int, entries: Sequence[Number]) -> Matrix:
        """A matrix from field elements (row-major)."""
        if self.prec is None:
            return fmpq_mat(rows, cols, list(entries))
        return arb_mat(rows, cols, list(entries))

    def lift(self, m: Matrix) -> Matrix:
        """An exact rational matrix as a matrix of this field."""
        return m if self.prec is None else arb_mat(m)

    def zero(self) -> Number:
        return fmpq(0) if self.prec is None else arb(0)

    # ----- decisions -----------------------------------------------------------------
    def sign(self, x: Number, what: str = "a sign") -> int:
        """−1, 0 or 1; raises :class:`NeedPrecision` if a ball contains 0 but is not the
        exact zero."""
        if self.prec is None:
            return (x > 0) - (x < 0)
        if x > 0:
            return 1
        if x < 0:
            return -1
        if x.is_zero():
            return 0
        raise NeedPrecision(what)

    def compare(self, a: Number, b: Number, same: bool = False, what: str = "a comparison") -> int:
        """sign(a − b); ``same`` = the two values are structurally identical (then 0
        without looking at the numbers)."""
        if same:
            return 0
        return self.sign(a - b, what)


def to_floats(m: Matrix) -> tuple[np.ndarray, np.ndarray]:
    """(mid, rad) float64 arrays with |exact − mid| ≤ rad entrywise, rigorously.

    fmpq: mid correctly rounded (Python int division), rad = |mid|·2⁻⁵² (covers the
    rounding, ≤ |mid|·2⁻⁵³, and subnormal slack via 2⁻¹⁰⁷⁰). arb: mid = the ball's
    midpoint rounded to nearest, rad = the ball's radius (an exact dyadic number with a
    30-bit mantissa, so float() is exact when in range) plus the midpoint's rounding."""
    rows, cols = m.nrows(), m.ncols()
    ents = m.entries()
    if isinstance(m, fmpq_mat):
        mid = np.array([int(x.p) / int(x.q) for x in ents], dtype=np.float64)
        rad = np.abs(mid) * 2.0**-52 + 2.0**-1070
    else:
        mid = np.array([float(x.mid()) for x in ents], dtype=np.float64)
        rad = np.array([float(x.rad()) for x in ents], dtype=np.float64)
        if not (np.all(np.isfinite(mid)) and np.all(np.isfinite(rad))):
            raise NeedPrecision("a ball is not finite in float64")
        rad = (rad + np.abs(mid) * 2.0**-52 + 2.0**-1070) * (1 + 2.0**-50)
    return mid.reshape(rows, cols), rad.reshape(rows, cols)


def field_for(rational: bool, prec: int | None = None) -> Field:
    """The exact field for a rational model, else a ball field at ``prec`` bits."""
    return Field(None) if rational else Field(prec or PRECISIONS[0])


def escalate(
    compute: Callable[[Field], T],
    *,
    rational: bool,
    precisions: Sequence[int] = PRECISIONS,
    what: str = "a comparison",
) -> T:
    """Run ``compute(field)``: once in exact arithmetic if ``rational``, else at each
    precision of ``precisions`` in turn until no comparison is left open (each attempt
    inside ``flint.ctx.workprec``). Raises :class:`Undecided` at the cap, naming the
    comparison that stayed open."""
    if rational:
        return compute(Field(None))
    last = None
    for prec in precisions:
        try:
            with ctx.workprec(prec):
                return compute(Field(prec))
        except NeedPrecision as err:
            last = err
    raise Undecided(
        f"{last.what if last else what} is still undecided at {precisions[-1]} bits of "
        "precision (the values may be exactly equal without being structurally identical)",
        expected="a model whose decisions are separated, or structurally tied",
    )


class Interner:
    """Identity keys for values: ``key(description)`` returns the same small integer for
    equal descriptions and different integers for different ones (a dictionary, not a
    hash, so no two different descriptions ever share a key). A description is a
    hashable record of *what* was computed from *which* inputs — e.g. the exact layer-0
    vector, or (layer, key of the query value, keys of the attended values) — so equal
    keys mean equal real values."""

    def __init__(self) -> None:
        self._ids: dict[Hashable, int] = {}
        self._exact: dict[bytes, list[tuple[tuple, int]]] = {}
        self._count = 0

    def key(self, description: Hashable) -> int:
        k = self._ids.get(description)
        if k is None:
            k = self._ids[description] = self._new()
        return k

    def key_exact(self, vec: tuple) -> int:
        """The key of an exact rational vector, by value: vectors are bucketed by their
        correctly rounded float64 copies (equal vectors have equal copies) and compared
        exactly within a bucket — cheaper than hashing rationals."""
        fb = np.array([int(x.p) / int(x.q) for x in vec], dtype=np.float64).tobytes()
        bucket = self._exact.setdefault(fb, [])
        for other, k in bucket:
            if other == vec:
                return k
        k = self._new()
        bucket.append((vec, k))
        return k

    def _new(self) -> int:
        self._count += 1
        return self._count

    def __len__(self) -> int:
        return self._count


def rows_of(m: Matrix) -> list[list[Number]]:
    """The rows of a flint matrix as lists of entries."""
    ents = m.entries()
    c = m.ncols()
    return [ents[k * c : (k + 1) * c] for k in range(m.nrows())]
