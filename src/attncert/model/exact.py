"""Exact forward pass for hard and average-hard attention.

Every float64 weight is read as the exact dyadic rational it is; positional
features have exact values (:mod:`attncert.model.positional`); all arithmetic
is rational (python-flint ``fmpq``/``fmpq_mat``). Hence every decision — score
comparisons, argmax, ties, the readout's sign — is exact. Softmax attention is
not rational and is refused with :class:`UnsupportedError`.

This module is part of the trusted base of the hard-attention checker
(:mod:`attncert.hard.checker`): it imports no solver.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import fmpq, fmpq_mat

from attncert.errors import InputError, UnsupportedError
from attncert.model.positional import feature_matrix_exact
from attncert.model.spec import AttentionKind, Model


def q(x: float | int | Fraction) -> fmpq:
    """The exact rational value of a float64 / int / Fraction."""
    if isinstance(x, Fraction):
        return fmpq(x.numerator, x.denominator)
    num, den = float(x).as_integer_ratio() if not isinstance(x, int) else (x, 1)
    return fmpq(num, den)


def qmat(a: np.ndarray) -> fmpq_mat:
    """Exact rational matrix of a 2-d float64 array."""
    a = np.asarray(a, dtype=np.float64)
    r, c = a.shape
    return fmpq_mat(r, c, [q(v) for v in a.ravel().tolist()])


def qcol(a: np.ndarray) -> fmpq_mat:
    """Exact column vector (k × 1) of a 1-d float64 array."""
    a = np.asarray(a, dtype=np.float64)
    return qmat(a.reshape(-1, 1))


def to_fraction(x: fmpq) -> Fraction:
    return Fraction(int(x.p), int(x.q))


@dataclass(frozen=True, eq=False)
class ExactHead:
    wqk: fmpq_mat  # W_Qᵀ W_K (d × d): score(i, j) = yᵢᵀ (W_Qᵀ W_K) yⱼ
    wov: fmpq_mat  # (W_O W_V)ᵀ (d × d): row-vector values y W_Vᵀ W_Oᵀ


@dataclass(frozen=True, eq=False)
class ExactLayer:
    heads: tuple[ExactHead, ...]
    w1t: fmpq_mat | None
    b1: fmpq_mat | None  # 1 × d_ff
    w2t: fmpq_mat | None
    b2: fmpq_mat | None  # 1 × d


@dataclass(frozen=True, eq=False)
class ExactWeights:
    """The model's weights as exact rationals (computed once per model)."""

    word: fmpq_mat
    pos_weight_t: fmpq_mat
    table: fmpq_mat | None
    layers: tuple[ExactLayer, ...]
    readout: fmpq_mat  # d × 1
    bias: fmpq


_CACHE: weakref.WeakKeyDictionary[Model, ExactWeights] = weakref.WeakKeyDictionary()


def exact_weights(model: Model) -> ExactWeights:
    """Rational copies of the weights; attention is folded into bilinear forms
    (exact, since products of rationals are exact)."""
    cached = _CACHE.get(model)
    if cached is not None:
        return cached
    layers = []
    for layer in model.layers:
        heads = tuple(
            ExactHead(
                wqk=qmat(h.w_q).transpose() * qmat(h.w_k),
                wov=(qmat(h.w_o) * qmat(h.w_v)).transpose(),
            )
            for h in layer.heads
        )
        f = layer.ffn
        if f is None:
            layers.append(ExactLayer(heads, None, None, None, None))
        else:
            layers.append(
                ExactLayer(
                    heads,
                    qmat(f.w1).transpose(),
                    qmat(f.b1.reshape(1, -1)),
                    qmat(f.w2).transpose(),
                    qmat(f.b2.reshape(1, -1)),
                )
            )
    emb = model.embedding
    ew = ExactWeights(
        word=qmat(emb.word),
        pos_weight_t=qmat(emb.pos_weight).transpose(),
        table=None if emb.table is None else qmat(emb.table),
        layers=tuple(layers),
        readout=qcol(model.readout.weight),
        bias=q(model.readout.bias),
    )
    _CACHE[model] = ew
    return ew


def _rows(m: fmpq_mat) -> list[list[fmpq]]:
    return [[m[i, j] for j in range(m.ncols())] for i in range(m.nrows())]


def _relu_rows(m: fmpq_mat) -> fmpq_mat:
    zero = fmpq(0)
    return fmpq_mat(
        m.nrows(), m.ncols(), [v if v > zero else zero for row in _rows(m) for v in row]
    )


def _add_bias(m: fmpq_mat, b: fmpq_mat) -> fmpq_mat:
    ones = fmpq_mat(m.nrows(), 1, [1] * m.nrows())
    return m + ones * b


@dataclass(frozen=True, eq=False)
class ExactLayerTrace:
    scores: tuple[fmpq_mat, ...]  # per head N × N (masked entries meaningless)
    chosen: tuple[
        tuple[tuple[int, ...], ...], ...
    ]  # per head, per query: attended positions (0-based)
    after_attention: fmpq_mat  # N × d
    output: fmpq_mat  # N × d


@dataclass(frozen=True, eq=False)
class ExactTrace:
    tokens: tuple[int, ...]
    embeddings: fmpq_mat
    layers: tuple[ExactLayerTrace, ...]
    logit: fmpq
    accept: bool
    outputs: tuple[tuple[fmpq, ...], ...]  # per position, designated output coordinates

    @property
    def final(self) -> fmpq_mat:
        return self.layers[-1].output if self.layers else self.embeddings

    def logit_fraction(self) -> Fraction:
        return to_fraction(self.logit)


def position_part_exact(model: Model, n_tok: int) -> fmpq_mat:
    """Exact positional part W_pos φ(i, N) (+ table rows) of layer 0, N × d."""
    ew = exact_weights(model)
    d = model.d
    emb = model.embedding
    y = fmpq_mat(n_tok, d)
    if emb.features:
        phi = feature_matrix_exact(emb.features, n_tok)
        phi_m = fmpq_mat(n_tok, len(emb.features), [q(v) for row in phi for v in row])
        y = y + phi_m * ew.pos_weight_t
    if ew.table is not None:
        if n_tok > ew.table.nrows():
            raise InputError(
                f"sequence of {n_tok} tokens is longer than the learned position table "
                f"({ew.table.nrows()} rows)"
            )
        y = y + fmpq_mat(n_tok, d, [v for row in _rows(ew.table)[:n_tok] for v in row])
    return y


def embed_exact(model: Model, tokens: list[int]) -> fmpq_mat:
    """Exact layer-0 activations (N × d)."""
    ew = exact_weights(model)
    word_rows = _rows(ew.word)
    y = fmpq_mat(len(tokens), model.d, [v for t in tokens for v in word_rows[t]])
    return y + position_part_exact(model, len(tokens))


def _require_hard(model: Model) -> None:
    for li, layer in enumerate(model.layers):
        for hi, h in enumerate(layer.heads):
            if not h.kind.is_hard:
                raise UnsupportedError(
                    f"exact evaluation of softmax attention (layers[{li}].heads[{hi}]) is not "
                    "supported: softmax weights are irrational",
                    expected="leftmost, rightmost or average hard attention",
                )


def forward_exact(model: Model, string: str) -> ExactTrace:
    """Exact forward pass of a hard / average-hard model on one string."""
    return forward_exact_tokens(model, model.encode(string))


def forward_exact_tokens(model: Model, tokens: list[int]) -> ExactTrace:
    """Exact forward pass on token ids (softmax heads are refused, never approximated)."""
    _require_hard(model)
    n_tok = len(tokens)
    if n_tok == 0:
        raise InputError(
            "the model sees no tokens (empty input and no BOS/EOS)", expected="a non-empty string"
        )
    ew = exact_weights(model)
    d = model.d
    y = embed_exact(model, tokens)
    emb0 = y
    layer_traces = []
    for layer, elayer in zip(model.layers, ew.layers, strict=True):
        total = fmpq_mat(n_tok, d)
        scores_l, chosen_l = [], []
        for head, eh in zip(layer.heads, elayer.heads, strict=True):
            scores = y * eh.wqk * y.transpose()
            values = _rows(y * eh.wov)
            srows = _rows(scores)
            chosen_h = []
            out_rows = []
            for i in range(n_tok):
                visible = [j for j in range(n_tok) if head.mask.allowed(i, j)]
                if not visible:
                    chosen_h.append(())
                    out_rows.append([fmpq(0)] * d)
                    continue
                best = max(srows[i][j] for j in visible)
                maxima = [j for j in visible if srows[i][j] == best]
                if head.kind is AttentionKind.LEFTMOST:
                    pick = (maxima[0],)
                elif head.kind is AttentionKind.RIGHTMOST:
                    pick = (maxima[-1],)
                else:
                    pick = tuple(maxima)
                chosen_h.append(pick)
                inv = fmpq(1, len(pick))
                out_rows.append(
                    [sum((values[j][c] for j in pick), fmpq(0)) * inv for c in range(d)]
                )
            total = total + fmpq_mat(n_tok, d, [v for row in out_rows for v in row])
            scores_l.append(scores)
            chosen_l.append(tuple(chosen_h))
        after = y + total if layer.residual else total
        if elayer.w1t is not None:
            hidden = _relu_rows(_add_bias(after * elayer.w1t, elayer.b1))
            ff = _add_bias(hidden * elayer.w2t, elayer.b2)
            out = after + ff if layer.residual else ff
        else:
            out = after
        layer_traces.append(ExactLayerTrace(tuple(scores_l), tuple(chosen_l), after, out))
        y = out
    r = model.readout
    pos = r.index(n_tok)
    logit = sum((y[pos, c] * ew.readout[c, 0] for c in range(d)), fmpq(0)) + ew.bias
    outputs = tuple(tuple(y[i, c] for c in r.output_coords) for i in range(n_tok))
    return ExactTrace(tuple(tokens), emb0, tuple(layer_traces), logit, logit > 0, outputs)


def accepts_exact(model: Model, string: str) -> bool:
    """The exact decision of a hard-attention model on ``string``."""
    return forward_exact(model, string).accept
