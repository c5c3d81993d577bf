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
from functools import cached_property

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
    if model.extensions:
        raise UnsupportedError(
            "this exact rational evaluator covers models without "
            + ", ".join(model.extensions)
            + f" (model {model.name!r})",
            expected="attncert.forward_rigorous(model, string): exact or certified-interval "
            "evaluation of every model",
        )
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


_CHUNK = 512
_U = 2.0**-52
_TINY = 2.0**-1000


def float_matrix(m: fmpq_mat) -> np.ndarray:
    """Correctly rounded float64 copy of an exact matrix (Python int division rounds correctly)."""
    vals = [int(x.p) / int(x.q) for x in m.entries()]
    return np.array(vals, dtype=np.float64).reshape(m.nrows(), m.ncols())


def _dot(a: list[fmpq], b: list[fmpq]) -> fmpq:
    return sum((x * y for x, y in zip(a, b, strict=True)), fmpq(0))


@dataclass(frozen=True, eq=False)
class ScoreFilter:
    """Float64 attention scores with a rigorous error bound.

    For exact activations y whose float copies ỹ are correctly rounded, the float
    score s̃ = fl((W_Q ỹ_i)·(W_K ỹ_j)) satisfies |s̃ − s| ≤ e_ij with
    e_ij = (2d + d_k + 8)·2⁻⁵²·(|W_Q||ỹ_i|)·(|W_K||ỹ_j|) + 2⁻¹⁰⁰⁰: the standard bound
    γ_m ≤ m·u/(1 − m·u) for the 2d + d_k rounded operations of a dot-product chain
    plus the rounding of ỹ (u = 2⁻⁵³), taken with u doubled as a margin that also
    absorbs the rounding of e itself and the second-order terms.

    :meth:`bound` gives one number per query row, E_i ≥ max_j e_ij, by
    Cauchy–Schwarz (‖|W_Q||ỹ_i|‖₂ · max_j ‖|W_K||ỹ_j|‖₂, with a relative margin
    2⁻³⁰ ≫ the rounding of the norms). A decision is made in float only when the
    intervals [s̃ − E, s̃ + E] separate; otherwise it is made exactly.
    """

    qf: np.ndarray  # (R, d_k)
    kf: np.ndarray  # (R, d_k)
    aq: np.ndarray  # (R, d_k)
    ak: np.ndarray  # (R, d_k)
    coeff: float
    qnorm: np.ndarray  # (R,)
    knorm_max: float

    @classmethod
    def build(cls, head, floats: np.ndarray) -> ScoreFilter:
        d = floats.shape[1]
        dk = head.w_q.shape[0]
        absf = np.abs(floats)
        aq = absf @ np.abs(head.w_q).T
        ak = absf @ np.abs(head.w_k).T
        return cls(
            qf=floats @ head.w_q.T,
            kf=floats @ head.w_k.T,
            aq=aq,
            ak=ak,
            coeff=(2 * d + dk + 8) * _U,
            qnorm=np.sqrt((aq * aq).sum(axis=1)),
            knorm_max=float(np.sqrt((ak * ak).sum(axis=1)).max(initial=0.0)),
        )

    def scores(self, rows: np.ndarray, keys: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Float scores (len(rows), #keys)."""
        return self.qf[rows] @ self.kf[keys].T

    def bound(self, rows: np.ndarray) -> np.ndarray:
        """E_i ≥ |s̃_ij − s_ij| for every key j (one bound per query row)."""
        return self.coeff * self.qnorm[rows] * self.knorm_max * (1 + 2.0**-30) + _TINY

    def pairs(self, qrow: int, krows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores of one query row against some key rows, and entrywise error bounds."""
        s = self.qf[qrow] @ self.kf[krows].T
        e = self.coeff * (self.aq[qrow] @ self.ak[krows].T) * (1 + 2.0**-30) + _TINY
        return s, e


@dataclass(frozen=True, eq=False)
class ExactLayerTrace:
    inputs: fmpq_mat  # N × d activations entering the layer
    heads: tuple[ExactHead, ...]
    chosen: tuple[
        tuple[tuple[int, ...], ...], ...
    ]  # per head, per query: attended positions (0-based)
    after_attention: fmpq_mat  # N × d
    output: fmpq_mat  # N × d

    @cached_property
    def scores(self) -> tuple[fmpq_mat, ...]:
        """Exact score matrices per head, N × N (masked entries are not meaningful);
        computed on demand."""
        y = self.inputs
        return tuple(y * eh.wqk * y.transpose() for eh in self.heads)


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
    """Exact forward pass on token ids (softmax heads are refused, never approximated).

    The argmax of each query is found with the rigorous float filter of
    :class:`ScoreFilter`; every query whose top scores are not separated by the
    error bound is decided in exact rational arithmetic."""
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
        chosen_l = []
        y_rows = _rows(y)
        y_float = float_matrix(y)
        for head, eh in zip(layer.heads, elayer.heads, strict=True):
            flt = ScoreFilter.build(head, y_float)
            values = (y * eh.wov).entries()
            visible = head.mask.matrix(n_tok)
            chosen_h = []
            out_flat: list[fmpq] = []
            zero_row = [fmpq(0)] * d
            for c0 in range(0, n_tok, _CHUNK):
                rows = np.arange(c0, min(n_tok, c0 + _CHUNK))
                sc = flt.scores(rows)
                err = flt.bound(rows)
                vis = visible[rows]
                sc = np.where(vis, sc, -np.inf)
                top = sc.max(axis=1)
                # a key can be the argmax only if its score reaches top − 2E
                n_near = (sc >= (top - 2 * err)[:, None]).sum(axis=1)
                first = np.argmax(sc, axis=1)
                for k, i in enumerate(rows.tolist()):
                    if not vis[k].any():
                        chosen_h.append(())
                        out_flat.extend(zero_row)
                        continue
                    bound = top[k] - 2 * err[k]
                    finite = bool(np.isfinite(bound))
                    if finite and n_near[k] == 1:
                        j = int(first[k])
                        chosen_h.append((j,))
                        out_flat.extend(values[j * d : (j + 1) * d])
                        continue
                    # overflowed float facts (a score or E infinite or NaN): every visible
                    # key is a candidate — never a masked one — compared exactly
                    near = np.nonzero(sc[k] >= bound if finite else vis[k])[0].tolist()
                    zq = (fmpq_mat(1, d, y_rows[i]) * eh.wqk).entries()
                    exact = [_dot(zq, y_rows[j]) for j in near]
                    best = max(exact)
                    maxima = [j for j, v in zip(near, exact, strict=True) if v == best]
                    if head.kind is AttentionKind.LEFTMOST:
                        pick: tuple[int, ...] = (maxima[0],)
                    elif head.kind is AttentionKind.RIGHTMOST:
                        pick = (maxima[-1],)
                    else:
                        pick = tuple(maxima)
                    chosen_h.append(pick)
                    inv = fmpq(1, len(pick))
                    out_flat.extend(
                        sum((values[j * d + c] for j in pick), fmpq(0)) * inv for c in range(d)
                    )
            total = total + fmpq_mat(n_tok, d, out_flat)
            chosen_l.append(tuple(chosen_h))
        after = y + total if layer.residual else total
        if elayer.w1t is not None:
            hidden = _relu_rows(_add_bias(after * elayer.w1t, elayer.b1))
            ff = _add_bias(hidden * elayer.w2t, elayer.b2)
            out = after + ff if layer.residual else ff
        else:
            out = after
        layer_traces.append(ExactLayerTrace(y, elayer.heads, tuple(chosen_l), after, out))
        y = out
    r = model.readout
    pos = r.index(n_tok)
    logit = sum((y[pos, c] * ew.readout[c, 0] for c in range(d)), fmpq(0)) + ew.bias
    outputs = tuple(tuple(y[i, c] for c in r.output_coords) for i in range(n_tok))
    return ExactTrace(tuple(tokens), emb0, tuple(layer_traces), logit, logit > 0, outputs)


def accepts_exact(model: Model, string: str) -> bool:
    """The exact decision of a hard-attention model on ``string``."""
    return forward_exact(model, string).accept
