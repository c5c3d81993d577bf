"""The row graph of the hard kernel (attncert.arith.rows): a positional head's query and key
of a row are computed at that row's token position (issue 34: mutation score)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.hard.decide import decide
from attncert.model.decoders import random_decoder


def test_an_alibi_head_below_the_float_filter_is_decided_at_each_rows_position():
    """A causal leftmost ALiBi head whose keys are all 0 and whose slope is 2⁻⁶⁰: every
    score is −2⁻⁶⁰·(i − j), far below the float error bound, so the kernel's decision
    (kernel.hard.decide) compares scores in the field, row by row (RowGraph.head_rows). Each
    query attends its own position (the only score 0), and the decisions on every string of
    length 1 to 4 are those of the rigorous forward pass (kernel.core.trace), which are not
    all equal. Kills ``xǁRowGraphǁhead_rows__mutmut_40`` (the row's position not passed)."""
    base = random_decoder(1, 1, 4, positions="alibi", norm="rms", mlp="gelu", kind="leftmost")
    layer = base.layers[0]
    heads = tuple(
        dataclasses.replace(h, alibi=2.0**-60, w_k=np.zeros_like(h.w_k)) for h in layer.heads
    )
    model = dataclasses.replace(base, layers=(dataclasses.replace(layer, heads=heads),))
    decisions = set()
    for n in range(1, 5):
        for s in map("".join, itertools.product("01", repeat=n)):
            trace = forward_rigorous(model, s)
            (chosen,) = trace.layers[0].chosen
            assert chosen == tuple((i,) for i in range(n + 1))  # BOS, then the input
            assert decide(model, s) == trace.accept, s
            decisions.add(trace.accept)
    assert decisions == {False, True}
