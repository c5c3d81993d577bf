"""Activation rows computed once in float enclosures, and in the field only on demand.

A :class:`RowGraph` records *how* each activation row of an evaluation was computed —
a layer-0 row from (token, position), a layer-ℓ row from its own layer-(ℓ−1) row and,
per head, the layer-(ℓ−1) rows the head attended to — and gives each row an identity
key (equal keys ⇒ the same computation on identical exact inputs ⇒ equal values; see
:class:`~attncert.arith.field.Interner`). Callers evaluate every row vectorized in
float enclosures (:mod:`attncert.arith.enclose`) and ask the graph for the exact (or
arb) value of a row only when an enclosure leaves a comparison open:
:meth:`RowGraph.value` and :meth:`RowGraph.head_rows` recompute that row, and
recursively the rows it was computed from, with the maps of
:mod:`attncert.arith.positionwise`, memoized.

The graph holds no decision: which rows a head attended to is decided by its caller
(the search's collapse, the kernel's checker or the rigorous forward pass, each with
its own procedure). It is the model's arithmetic, shared like the rest of
:mod:`attncert.arith`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from flint import fmpq

from attncert.arith.field import Field, Interner, Number, rows_of
from attncert.arith.positionwise import (
    attention_inputs,
    finish_layer,
    model_maps,
    position_rows,
    projections,
    readout_terms,
)
from attncert.model.positional import feature_matrix_exact
from attncert.model.spec import Model

Attended = tuple[tuple[int, ...], ...]  # per head: the attended rows (empty: no key visible)


def _q(x: float) -> fmpq:
    return fmpq(*float(x).as_integer_ratio())


def embedding_row_exact(model: Model, token: int, t: int, n_tok: int) -> list[fmpq]:
    """The exact layer-0 row word[token] + W_pos φ(t + 1, N) + table[t] (0-based t)."""
    emb = model.embedding
    row = [_q(v) for v in emb.word[token].tolist()]
    if emb.features:
        phi = [
            fmpq(f.numerator, f.denominator) for f in feature_matrix_exact(emb.features, n_tok)[t]
        ]
        w = emb.pos_weight.tolist()
        row = [
            r + sum((_q(w[c][k]) * phi[k] for k in range(len(phi)) if phi[k] != 0), fmpq(0))
            for c, r in enumerate(row)
        ]
    if emb.table is not None:
        row = [r + _q(v) for r, v in zip(row, emb.table[t].tolist(), strict=True)]
    return row


class RowGraph:
    """Rows of one evaluation of ``model`` on ``n_tok`` tokens in ``field`` (module
    docstring). Row ids are consecutive integers from 0."""

    def __init__(self, model: Model, n_tok: int, field: Field, interner: Interner | None = None):
        self.model = model
        # RoPE / ALiBi: a score depends on the rows' positions, so every row is made
        # position-specific (its identity includes its position) and a head's q, k of a
        # row are taken at that position (position_rows)
        self.positional = any(h.positional for layer in model.layers for h in layer.heads)
        self.n_tok = n_tok
        self.field = field
        self.maps = model_maps(model, field)
        self.interner = interner or Interner()
        self.layer: list[int] = []
        self.own: list[int] = []  # layer 0: the token id; else the own row below
        self.pos: list[int] = []  # layer 0: the position; else -1
        self.att: list[Attended] = []
        self.keys: list[int] = []
        self._value: dict[int, list[Number]] = {}
        self._heads: dict[
            tuple[int, int, int], tuple[list[Number], list[Number], list[Number]]
        ] = {}
        self._phi_keys: dict[int, int] = {}
        self._by_key: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.layer)

    def positions(self, rows: np.ndarray) -> np.ndarray:
        """The 0-based token position of each row (defined when :attr:`positional`)."""
        out = np.array([self.pos[int(r)] for r in rows], dtype=np.int64)
        if len(out) and out.min() < 0:  # pragma: no cover - rows are position-specific
            raise ValueError("a row without a position in a positional model")
        return out

    # ----- building ---------------------------------------------------------------------
    def _phi_key(self, t: int) -> int:
        k = self._phi_keys.get(t)
        if k is None:
            emb = self.model.embedding
            phi = feature_matrix_exact(emb.features, self.n_tok)[t] if emb.features else ()
            table = emb.table[t].tobytes() if emb.table is not None else None
            at = t if self.positional else None
            k = self._phi_keys[t] = self.interner.key(("phi", tuple(phi), table, at))
        return k

    def add_embedding(self, tokens: Sequence[int], positions: Sequence[int]) -> np.ndarray:
        """Layer-0 rows for (token, 0-based position) pairs; their ids."""
        start = len(self.layer)
        for tok, t in zip(tokens, positions, strict=True):
            tok, t = int(tok), int(t)
            self.layer.append(0)
            self.own.append(tok)
            self.pos.append(t)
            self.att.append(())
            self.keys.append(self.interner.key(("emb", tok, self._phi_key(t))))
        return np.arange(start, len(self.layer), dtype=np.int64)

    def add_rows(self, ell: int, own: Sequence[int], attended: Sequence[Attended]) -> np.ndarray:
        """Layer-ℓ rows (ℓ ≥ 1): each from its own row and the rows its heads attended;
        rows with the same provenance are the same row (the existing id is returned)."""
        out = np.empty(len(own), dtype=np.int64)
        keys = self.keys
        by_key = self._by_key
        for t, (o, att) in enumerate(zip(own, attended, strict=True)):
            o = int(o)
            prov = (ell, keys[o], tuple(tuple(sorted(keys[a] for a in h)) for h in att))
            key = self.interner.key(prov)
            rid = by_key.get(key)
            if rid is None:
                rid = by_key[key] = len(self.layer)
                self.layer.append(ell)
                self.own.append(o)
                self.pos.append(self.pos[o] if self.positional else -1)
                self.att.append(tuple(tuple(int(a) for a in h) for h in att))
                keys.append(key)
            out[t] = rid
        return out

    # ----- field values on demand ---------------------------------------------------------
    def value(self, r: int) -> list[Number]:
        """The row's value in the field (exact, or an arb enclosure)."""
        got = self._value.get(r)
        if got is not None:
            return got
        fld = self.field
        ell = self.layer[r]
        if ell == 0:
            exact = embedding_row_exact(self.model, self.own[r], self.pos[r], self.n_tok)
            got = exact if fld.exact else [fld.num(v) for v in exact]
        else:
            li = ell - 1
            d = self.model.d
            x = fld.matrix(1, d, self.value(self.own[r]))
            acc = [fld.zero()] * d
            for hi, rows in enumerate(self.att[r]):
                bo = rows_of(self.maps.layers[li].heads[hi].bo)[0]
                if rows:
                    ovs = [self.head_rows(a, li, hi)[2] for a in rows]
                    if len(ovs) == 1:
                        mean = ovs[0]
                    else:
                        inv = fld.num(1) / len(ovs)
                        mean = [sum((o[c] for o in ovs), fld.zero()) * inv for c in range(d)]
                    acc = [a + m + b for a, m, b in zip(acc, mean, bo, strict=True)]
                else:
                    acc = [a + b for a, b in zip(acc, bo, strict=True)]
            out = finish_layer(self.maps, li, x, fld.matrix(1, d, acc))
            got = out.entries()
        self._value[r] = got
        return got

    def head_rows(
        self, r: int, li: int, hi: int
    ) -> tuple[list[Number], list[Number], list[Number]]:
        """(q, k, ov) of head ``hi`` of layer ``li`` (0-based) for the layer-``li`` row r."""
        got = self._heads.get((r, li, hi))
        if got is None:
            fld = self.field
            u = attention_inputs(self.maps, li, fld.matrix(1, self.model.d, self.value(r)))
            q, k, ov = projections(self.maps, li, hi, u)
            head = self.model.layers[li].heads[hi]
            if head.positional:
                q, k = position_rows(fld, head, q, k, [self.pos[r]])
            got = self._heads[(r, li, hi)] = (q.entries(), k.entries(), ov.entries())
        return got

    def score(self, qrow: int, krow: int, li: int, hi: int) -> Number:
        """The exact (or enclosed) score of query row ``qrow`` against key row ``krow``."""
        q = self.head_rows(qrow, li, hi)[0]
        k = self.head_rows(krow, li, hi)[1]
        return sum((a * b for a, b in zip(q, k, strict=True)), self.field.zero())

    def readout_term(self, r: int) -> Number:
        """w · r (after the final norm), without the bias."""
        return readout_terms(self.maps, self.field.matrix(1, self.model.d, self.value(r)))[0]
