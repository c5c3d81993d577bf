"""Which coordinate of a model's output holds the formula's value.

A leaf module (imports only the model spec): the driver, the per-string enumerator and
the tieless check all need it, and keeping it here is what lets
:mod:`attncert.prove.enumerate` stay below :mod:`attncert.prove.driver` in the import
graph (no driver ↔ enumerate circle).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attncert.errors import SpecError
from attncert.model.spec import Model


def designated_coordinate(model: Model) -> int:
    """The coordinate read as the formula's value: the compiler's readout record, or a
    readout ``weight = e_c, bias = −½``."""
    rec = model.meta.get("readout") if model.meta else None
    if isinstance(rec, Mapping) and "coord" in rec:
        return int(rec["coord"])
    w = np.asarray(model.readout.weight)
    nz = np.flatnonzero(w)
    if len(nz) == 1 and w[nz[0]] == 1.0 and model.readout.bias == -0.5:
        return int(nz[0])
    raise SpecError(
        "cannot tell which coordinate holds the formula's value",
        where="coordinate",
        expected="coordinate=… (the readout is not 'y[c] > ½')",
    )
