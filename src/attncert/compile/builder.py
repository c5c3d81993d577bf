"""Assemble a :class:`~attncert.model.Model` from sparse, labelled pieces.

The compiler allocates residual coordinates by label, adds heads and FFN hidden
units to numbered layers (layer ℓ = 1, 2, …), and finally materialises the
dense float64 weights. All heads use softmax attention (the point of the
construction); a head's query/key/value rows are sparse linear forms over
coordinates (``{coord: coefficient}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attncert.model.positional import PosFeature
from attncert.model.spec import (
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    Mask,
    Model,
    Readout,
    Temperature,
)

Form = dict[int, float]


@dataclass
class HeadSpec:
    q: list[Form]
    k: list[Form]
    v: list[Form]
    out: list[int]  # value row r is written (added) to coordinate out[r]
    mask: Mask
    temperature: Temperature
    record: dict[str, Any]


@dataclass
class LayerSpec:
    heads: list[HeadSpec] = field(default_factory=list)
    hidden: list[tuple[Form, float]] = field(default_factory=list)
    outs: list[tuple[int, dict[int, float], float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Builder:
    """Coordinates, layers and the embedding of a model under construction."""

    ONE = "one"

    def __init__(self, alphabet: tuple[str, ...]):
        self.alphabet = alphabet
        self.labels: list[str] = []
        self.index: dict[str, int] = {}
        self.features: list[PosFeature] = []
        self.pe_coords: dict[str, int] = {}  # PE-combination label -> coordinate
        self.pe_weights: list[tuple[int, int, float]] = []  # (coord, feature index, coef)
        self.word: list[tuple[str, int, float]] = []  # (symbol, coord, value)
        self.layers: list[LayerSpec] = []
        self.one = self.coord(self.ONE)
        for a in alphabet:
            self.word.append((a, self.one, 1.0))

    # ----- coordinates ---------------------------------------------------------------
    def coord(self, label: str) -> int:
        """A fresh coordinate (labels are made unique by suffixing)."""
        base, k = label, 1
        while label in self.index:
            k += 1
            label = f"{base}#{k}"
        self.index[label] = len(self.labels)
        self.labels.append(label)
        return self.index[label]

    def symbol_coord(self, symbol: str) -> int:
        """Coordinate of Q_symbol (1 where the token is ``symbol``)."""
        label = f"Q_{symbol}"
        if label in self.index:
            return self.index[label]
        c = self.coord(label)
        if symbol in self.alphabet:
            self.word.append((symbol, c, 1.0))
        return c

    def feature_index(self, name: str) -> int:
        for k, f in enumerate(self.features):
            if f.name == name:
                return k
        self.features.append(PosFeature(name))
        return len(self.features) - 1

    def pe(self, combo: dict[str, float], label: str | None = None) -> int:
        """Coordinate holding Σ coef·φ_name(i, N) (a fixed positional encoding column)."""
        key = label or " + ".join(f"{c:g}*[{n}]" for n, c in sorted(combo.items()))
        if key in self.pe_coords:
            return self.pe_coords[key]
        if set(combo) == {"1"} and combo["1"] == 1.0:
            self.pe_coords[key] = self.one
            return self.one
        c = self.coord(f"pe:{key}")
        for name, coef in combo.items():
            self.pe_weights.append((c, self.feature_index(name), float(coef)))
        self.pe_coords[key] = c
        return c

    # ----- layers --------------------------------------------------------------------
    def layer(self, level: int) -> LayerSpec:
        """Layer ``level`` (1-based), creating empty layers up to it."""
        while len(self.layers) < level:
            self.layers.append(LayerSpec())
        return self.layers[level - 1]

    def add_head(self, level: int, head: HeadSpec) -> tuple[int, int]:
        """Add ``head`` to layer ``level``; returns its (0-based layer, head) index."""
        spec = self.layer(level)
        spec.heads.append(head)
        head.record["layer"] = level - 1
        head.record["head"] = len(spec.heads) - 1
        head.record["reads"] = {
            "query": sorted({c for row in head.q for c in row}),
            "key": sorted({c for row in head.k for c in row}),
            "value": sorted({c for row in head.v for c in row}),
        }
        head.record["writes"] = list(head.out)
        return level - 1, len(spec.heads) - 1

    def hidden(self, level: int, form: Form, bias: float) -> int:
        """A ReLU unit ReLU(form·y + bias) in layer ``level``'s FFN; returns its index."""
        spec = self.layer(level)
        spec.hidden.append((dict(form), float(bias)))
        return len(spec.hidden) - 1

    def ffn_out(self, level: int, coord: int, units: dict[int, float], bias: float = 0.0) -> None:
        """y[coord] += Σ units[u]·ReLU_u + bias in layer ``level``'s FFN."""
        self.layer(level).outs.append((coord, dict(units), float(bias)))

    # ----- materialise ------------------------------------------------------------------
    def build(
        self, *, readout_coord: int, output_coords: tuple[int, ...], name: str, meta: dict
    ) -> Model:
        d = len(self.labels)
        vocab = tuple(self.alphabet)
        word = np.zeros((len(vocab), d))
        for sym, c, v in self.word:
            word[vocab.index(sym), c] += v
        pos_weight = np.zeros((d, len(self.features)))
        for c, fk, coef in self.pe_weights:
            pos_weight[c, fk] += coef
        layers = []
        for spec in self.layers:
            heads = []
            for h in spec.heads:
                heads.append(
                    Head(
                        w_q=_rows(h.q, d),
                        w_k=_rows(h.k, d),
                        w_v=_rows(h.v, d),
                        w_o=_out(h.out, d),
                        kind=AttentionKind.SOFTMAX,
                        mask=h.mask,
                        temperature=h.temperature,
                    )
                )
            ffn = None
            if spec.hidden:
                w1 = _rows([f for f, _ in spec.hidden], d)
                b1 = np.array([b for _, b in spec.hidden])
                w2 = np.zeros((d, len(spec.hidden)))
                b2 = np.zeros(d)
                for c, units, bias in spec.outs:
                    for u, coef in units.items():
                        w2[c, u] += coef
                    b2[c] += bias
                ffn = FeedForward(w1=w1, b1=b1, w2=w2, b2=b2)
            layers.append(Layer(tuple(heads), ffn))
        weight = np.zeros(d)
        weight[readout_coord] = 1.0
        return Model(
            alphabet=vocab,
            embedding=Embedding(
                vocab=vocab, word=word, features=tuple(self.features), pos_weight=pos_weight
            ),
            layers=tuple(layers),
            readout=Readout(weight=weight, bias=-0.5, output_coords=output_coords),
            name=name,
            meta=meta,
        )


def _rows(forms: list[Form], d: int) -> np.ndarray:
    m = np.zeros((len(forms), d))
    for r, form in enumerate(forms):
        for c, v in form.items():
            m[r, c] += v
    return m


def _out(out: list[int], d: int) -> np.ndarray:
    m = np.zeros((d, len(out)))
    for r, c in enumerate(out):
        m[c, r] = 1.0
    return m
