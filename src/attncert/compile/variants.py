"""Variants of a compiled model for experiments: a different temperature on some heads."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from attncert.model.spec import Layer, Model, Temperature


def with_temperature(
    model: Model, temperature: Temperature, heads: Iterable[tuple[int, int]] | None = None
) -> Model:
    """The same model with ``temperature`` on the given (layer, head) pairs (default: every
    non-uniform head, i.e. every head with W_Q, W_K not both zero)."""
    chosen = None if heads is None else set(heads)
    layers = []
    for li, layer in enumerate(model.layers):
        hs = []
        for hi, h in enumerate(layer.heads):
            pick = (li, hi) in chosen if chosen is not None else (h.w_q.any() and h.w_k.any())
            hs.append(dataclasses.replace(h, temperature=temperature) if pick else h)
        layers.append(Layer(tuple(hs), layer.ffn, layer.residual))
    return dataclasses.replace(model, layers=tuple(layers), name=f"{model.name} [β={temperature}]")
