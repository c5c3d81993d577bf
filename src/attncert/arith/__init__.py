"""Rigorous arithmetic shared by the search and the trusted kernel.

Two kinds of numbers carry every decision attncert makes about a model:

* **exact rationals** (python-flint ``fmpq``): every float64 weight is an exact dyadic
  rational, so a model whose position-wise maps are rational (no LayerNorm, ReLU
  only) is evaluated exactly;
* **balls** (python-flint ``arb``, outward-rounded intervals at a working precision):
  LayerNorm's square root, GELU's erf and softmax's exp are irrational; every value is
  enclosed in a ball guaranteed to contain the true real number (arb's enclosure
  guarantee), and a comparison is decided only when the balls separate.

:mod:`attncert.arith.field` decides comparisons (exactly, or by separated balls with
precision escalating 53 → 4096 bits, or structurally: identical exact inputs to the
same computation give identical results) and converts values to float64 midpoints with
rigorous radii for fast filters; :mod:`attncert.arith.filter` bounds float64 score
matrices rigorously; :mod:`attncert.arith.positionwise` evaluates a model's
position-wise maps (affine maps, LayerNorm, activations, readout) in a field.

This package imports no solver and no search code; it is part of the trusted base.
"""

from attncert.arith.field import (
    PRECISIONS,
    Field,
    NeedPrecision,
    Undecided,
    escalate,
    field_for,
)

__all__ = ["PRECISIONS", "Field", "NeedPrecision", "Undecided", "escalate", "field_for"]
