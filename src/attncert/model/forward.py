"""Vectorized float64 forward pass over a batch of equal-length strings.

The semantics are those of :mod:`attncert.model.spec` (pre-/post-norm LayerNorm,
ReLU/GELU feed-forward, attention biases, final norm, last/first/mean readout);
this is the *float* evaluator, cross-checked against PyTorch's and Hugging Face's
own forward passes and against the rigorous evaluator.

Hard attention in float follows the definitions literally: argmax over the
visible positions, ties to the leftmost / rightmost maximum, or the average
over all positions attaining the maximum. Float ties are float equalities,
made faithful where they are structural: in a model with hard heads, equal rows go
through every position-wise map as one row (:class:`_Rows`), equal keys get equal
score columns, and weighted sums are computed row by row in one fixed order, so that
two keys carrying the same activation tie exactly, as they do in the real numbers,
instead of being told apart by where BLAS put them. :mod:`attncert.model.exact`
and :mod:`attncert.kernel.hard.decide` decide ties exactly. A query position that sees
no key (e.g. position 1 under a strict future mask) gets a zero head output.

Speed (issue 42): a model whose heads are all softmax heads is evaluated in blocks of
strings that stay in cache, every layer's heads at once (:mod:`attncert.model.fused`),
GELU's erf vectorized (:mod:`attncert.model.erf`) and token ids without a loop per
string (:mod:`attncert.model.tokens`) — within transformers' own float64 forward time
on its models (docs/benchmarks.md, "Every string of length n").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np

from attncert.errors import InputError
from attncert.model import fused
from attncert.model.erf import erf
from attncert.model.positional import feature_matrix
from attncert.model.spec import Activation, AttentionKind, FeedForward, Head, LayerNorm, Model
from attncert.model.tokens import encode_batch

__implements__ = (
    "Yang Definition 1",
    "Yang Definition 2",
    "Yang Definition 3",
    "Yang Definition 4",
)


@dataclass(frozen=True, eq=False)
class LayerTrace:
    """Activations of one layer for a batch (B strings, N tokens, H heads)."""

    scores: np.ndarray | None  # (B, H, N, N), masked -inf (before the temperature); None
    weights: np.ndarray | None  # (B, H, N, N) one-hot / uniform / softmax weights; None
    # when the pass ran with keep_attention=False (attention evaluated blockwise)
    values: np.ndarray | Callable[[], np.ndarray]  # head_values, or how to compute them
    after_attention: np.ndarray  # (B, N, d) the residual stream after the attention sublayer
    output: np.ndarray  # (B, N, d) after the FFN sublayer (and its norms)

    @cached_property
    def head_values(self) -> np.ndarray:
        """(B, H, N, d): W_O · attn(W_V u + b_V) + b_O per head (computed on first use
        when the layer's heads were evaluated together, :mod:`attncert.model.fused`)."""
        return self.values() if callable(self.values) else self.values


@dataclass(frozen=True, eq=False)
class Trace:
    """Every activation of a forward pass, not only the decision."""

    tokens: np.ndarray  # (B, N) token ids
    embeddings: np.ndarray  # (B, N, d) layer-0 activations
    layers: tuple[LayerTrace, ...]
    logits: np.ndarray  # (B,) readout value w·r+b (r: the decision position, or the mean)
    accept: np.ndarray  # (B,) bool, logit > 0
    outputs: np.ndarray  # (B, N, k) designated output coordinates
    lm_logits: np.ndarray | None  # (B, N, |lm_symbols|)

    final_normed: np.ndarray | None = None  # (B, N, d) after the model's final norm

    @property
    def final(self) -> np.ndarray:
        """The activations the readout reads (after the final norm, if any)."""
        if self.final_normed is not None:
            return self.final_normed
        return self.layers[-1].output if self.layers else self.embeddings


_HASH = np.random.default_rng(20261125).integers(1, 2**63, size=4096, dtype=np.uint64) | 1


class _Rows:
    """The rows of ``x`` (…, d) grouped bit for bit, so that a position-wise map gives
    equal rows bitwise-equal results.

    BLAS computes a row of a product with a kernel that depends on where the row lies in
    the matrix, so two equal rows of ``x @ W.T`` can differ in the last bit — and a hard
    head would then break an exact tie by rounding noise instead of by its rule (leftmost,
    rightmost, average). With ``exact`` set, a map is evaluated once per distinct row and
    copied to the rest; groups come from an integer hash of the bit patterns, confirmed
    row by row (a collision only costs a separate group)."""

    def __init__(self, x: np.ndarray, exact: bool):
        self.shape = x.shape[:-1]
        self.flat = x.reshape(-1, x.shape[-1])
        self.first: np.ndarray | None = None
        self.inverse: np.ndarray | None = None
        if exact and len(self.flat) > 1:
            first, inverse = _groups(self.flat)
            if len(first) < len(self.flat):
                self.first, self.inverse = first, inverse

    def map(self, f, x: np.ndarray | None = None) -> np.ndarray:
        """``f`` (rows → rows) on every row of ``x`` — by default the rows grouped, or an
        array whose rows are equal wherever those are — equal rows given equal results."""
        flat = self.flat if x is None else x.reshape(-1, x.shape[-1])
        out = f(flat) if self.first is None else f(flat[self.first])[self.inverse]
        return out.reshape(*self.shape, out.shape[-1])


def _groups(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, inverse): ``flat[first[inverse[r]]]`` equals ``flat[r]`` bit for bit."""
    bits = np.ascontiguousarray(flat).view(np.uint64)
    salt = np.resize(_HASH, bits.shape[1])
    key = (bits * salt).sum(axis=1, dtype=np.uint64)  # wraps: exact, order-free
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    clash = ~(bits[first[inverse]] == bits).all(axis=1)
    if clash.any():  # two rows share a hash: each colliding row its own group
        extra = np.flatnonzero(clash)
        first = np.concatenate([first, extra])
        inverse = inverse.copy()
        inverse[extra] = len(first) - len(extra) + np.arange(len(extra))
    return first, inverse


def _equal_columns(k: np.ndarray) -> np.ndarray | None:
    """For keys ``k`` (B, N, d): index (B, N) of the first key of the same string equal to
    each key bit for bit (None when no two keys of a string are equal)."""
    b, n, _ = k.shape
    first, inverse = _groups(k.reshape(b * n, -1))
    if len(first) == b * n:
        return None
    # the first occurrence of each (string, group) pair, as a position in that string
    pair = inverse.reshape(b, n) + (np.arange(b) * (b * n))[:, None]
    _, where, back = np.unique(pair.ravel(), return_index=True, return_inverse=True)
    return (where[back.ravel()] % n).reshape(b, n)


def layer_norm(norm: LayerNorm, y: np.ndarray) -> np.ndarray:
    """LN over the last axis (biased variance, ε inside the square root, as PyTorch);
    RMSNorm (``norm.rms``): γ ⊙ y/√(mean(y²) + ε) + β."""
    if norm.rms:
        ms = (y * y).mean(axis=-1, keepdims=True)
        return y / np.sqrt(ms + norm.eps) * norm.weight + norm.bias
    mu = y.mean(axis=-1, keepdims=True)
    c = y - mu
    var = (c * c).mean(axis=-1, keepdims=True)
    return c / np.sqrt(var + norm.eps) * norm.weight + norm.bias


def activate(activation: Activation, x: np.ndarray) -> np.ndarray:
    """The FFN non-linearity in float64 (GELU's erf: :func:`attncert.model.erf.erf`)."""
    if activation is Activation.RELU:
        return np.maximum(x, 0.0)
    if activation is Activation.GELU:
        return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    if activation is Activation.SILU:
        with np.errstate(over="ignore"):  # e^(−x) = inf for very negative x: SiLU → −0
            return x / (1.0 + np.exp(-x))
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
    return 0.5 * x * (1.0 + np.tanh(inner))


def feed_forward(ffn: FeedForward, y: np.ndarray, norm: LayerNorm | None = None) -> np.ndarray:
    """The FFN on ``y`` (first normed by ``norm``: a pre-norm layer's LN2)."""
    if norm is not None:
        y = layer_norm(norm, y)
    if ffn.gated:
        hidden = activate(ffn.activation, y @ ffn.w_gate.T + ffn.b_gate) * (y @ ffn.w1.T + ffn.b1)
        return hidden @ ffn.w2.T + ffn.b2
    return activate(ffn.activation, y @ ffn.w1.T + ffn.b1) @ ffn.w2.T + ffn.b2


def rotate(head: Head, x: np.ndarray) -> np.ndarray:
    """Queries or keys (B, N, d_k) of ``head`` rotated by their positions (RoPE, rotate-half
    layout, positions 0 … N − 1; :class:`~attncert.model.spec.Rotary`); unchanged without."""
    if head.rotary is None:
        return x
    return _rotate_half(head.rotary, x, head.rotary.angles(np.arange(x.shape[1]))[None])


def _rotate_half(rot, x: np.ndarray, ang: np.ndarray) -> np.ndarray:
    """(x_k, x_{k+h}) ↦ (x_k cos − x_{k+h} sin, x_{k+h} cos + x_k sin) over the last axis
    for k < h = dim/2 (angles ``ang`` broadcast against x[..., :h]); the rest unchanged."""
    cos, sin = np.cos(ang), np.sin(ang)
    h = rot.dim // 2
    x1, x2 = x[..., :h], x[..., h : rot.dim]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., rot.dim :]], axis=-1)


def position_transform(
    head: Head, q: np.ndarray, k: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Float queries and keys (R, d_k) of rows at 0-based token ``positions`` such that
    every score is a dot product: rotated by RoPE, and for ALiBi extended to
    q′ = [q, m, −m·i], k′ = [k, j, 1] (q′·k′ = q·k − m(i − j)) — the float counterpart of
    :func:`attncert.arith.enclose.projections_at`, for the search's rankings."""
    positions = np.asarray(positions)
    if head.rotary is not None:
        ang = head.rotary.angles(positions)
        q, k = _rotate_half(head.rotary, q, ang), _rotate_half(head.rotary, k, ang)
    if head.alibi is not None:
        t = positions.astype(np.float64)
        q = np.column_stack([q, np.full_like(t, head.alibi), -head.alibi * t])
        k = np.column_stack([k, t, np.ones_like(t)])
    return q, k


def position_bias(head: Head, rows: np.ndarray, n_tok: int) -> np.ndarray | None:
    """ALiBi's term −m·(i − j) for query rows ``rows`` and every key j (len(rows), N);
    None for a head without ALiBi."""
    if head.alibi is None:
        return None
    return -head.alibi * (np.asarray(rows, dtype=np.float64)[:, None] - np.arange(n_tok)[None, :])


def embed(model: Model, tokens: np.ndarray, *, exact_ties: bool = False) -> np.ndarray:
    """Layer-0 activations for a (B, N) token batch (``exact_ties``: see :class:`_Rows`)."""
    emb = model.embedding
    n_tok = tokens.shape[1]
    y = emb.word[tokens]
    if emb.features:
        phi = feature_matrix(emb.features, n_tok)
        y = y + _Rows(phi, exact_ties).map(lambda z: z @ emb.pos_weight.T)[None]
    if emb.table is not None:
        if n_tok > emb.table.shape[0]:
            raise InputError(
                f"sequence of {n_tok} tokens is longer than the learned position table "
                f"({emb.table.shape[0]} rows)"
            )
        y = y + emb.table[:n_tok][None]
    return y


def attention_weights(
    head: Head, scores: np.ndarray, n_tok: int, rows: np.ndarray | None = None
) -> np.ndarray:
    """Weights (B, N, N) from raw scores (B, N, N) for ``head``'s kind and mask; with
    ``rows``, the scores are those query rows only (B, len(rows), N)."""
    if rows is None:
        visible = head.mask.matrix(n_tok)[None]
    else:
        vis = head.mask.rows(rows, n_tok)
        visible = np.ones((1, len(rows), n_tok), dtype=bool) if vis is None else vis[None]
    if head.kind is AttentionKind.SOFTMAX:
        beta = head.temperature(n_tok)
        # scale only the visible scores: beta * -inf would be nan (beta = 0) or +inf (beta < 0)
        z = np.where(visible, beta * scores, -np.inf)
        zmax = np.max(z, axis=-1, keepdims=True)
        zmax = np.where(np.isfinite(zmax), zmax, 0.0)
        e = np.where(visible, np.exp(z - zmax), 0.0)
        total = e.sum(axis=-1, keepdims=True)
        w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        return w
    s = np.where(visible, scores, -np.inf)
    any_visible = visible.any(axis=-1)  # (1, N)
    smax = np.max(s, axis=-1, keepdims=True)
    is_max = (s == smax) & visible
    if head.kind is AttentionKind.AVERAGE:
        cnt = is_max.sum(axis=-1, keepdims=True)
        w = np.divide(is_max.astype(float), cnt, out=np.zeros(is_max.shape), where=cnt > 0)
    else:
        if head.kind is AttentionKind.LEFTMOST:
            idx = np.argmax(is_max, axis=-1)
        else:
            idx = n_tok - 1 - np.argmax(is_max[..., ::-1], axis=-1)
        w = np.zeros(is_max.shape)
        np.put_along_axis(w, idx[..., None], 1.0, axis=-1)
    return w * any_visible[..., None]


_BLOCK_ENTRIES = 1 << 20  # scores held at once by a keep_attention=False pass (8 MiB)


_UNIQUE = (AttentionKind.LEFTMOST, AttentionKind.RIGHTMOST)


def _weighted_sum(w: np.ndarray, v: np.ndarray, ordered: bool) -> np.ndarray:
    """w @ v over the last two axes; ``ordered``: each row summed in the same fixed order
    wherever it lies (einsum, no BLAS), so that equal weight rows give equal results."""
    return np.einsum("bij,bjd->bid", w, v, optimize=False) if ordered else w @ v


def _head_blockwise(
    head: Head,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    block: int,
    columns: np.ndarray | None = None,
    exact: bool = False,
):
    """attn(W_V u + b_V) for every query, scoring ``block`` query rows at a time (no
    N × N array). Unique-hard heads gather the attended row (what the one-hot matrix
    product computes exactly); average and softmax heads multiply their block of weights.
    ``columns`` (from :func:`_equal_columns`) makes equal keys' scores equal."""
    b, n_tok, _ = q.shape
    out = np.zeros((b, n_tok, v.shape[2]))
    kt = np.swapaxes(k, 1, 2)
    for c0 in range(0, n_tok, block):
        rows = np.arange(c0, min(n_tok, c0 + block))
        scores = q[:, rows] @ kt
        if columns is not None:
            scores = np.take_along_axis(scores, columns[:, None, :], axis=2)
        bias = position_bias(head, rows, n_tok)
        if bias is not None:
            scores = scores + bias[None]
        if head.kind in _UNIQUE:
            vis = head.mask.rows(rows, n_tok)
            s = scores if vis is None else np.where(vis[None], scores, -np.inf)
            smax = np.max(s, axis=-1, keepdims=True)
            is_max = s == smax
            if vis is not None:
                is_max &= vis[None]
            if head.kind is AttentionKind.LEFTMOST:
                idx = np.argmax(is_max, axis=-1)
            else:
                idx = n_tok - 1 - np.argmax(is_max[..., ::-1], axis=-1)
            got = np.take_along_axis(v, idx[..., None], axis=1)
            seen = is_max.any(axis=-1)
            out[:, rows] = np.where(seen[..., None], got, 0.0)
        else:
            out[:, rows] = _weighted_sum(attention_weights(head, scores, n_tok, rows), v, exact)
    return out


_STRING_CELLS = 1 << 18  # activations per array in one block of strings (fused, lean)


def forward_tokens(model: Model, tokens: np.ndarray, *, keep_attention: bool = True) -> Trace:
    """Forward pass on a (B, N) array of token ids.

    ``keep_attention=False``: no (B, H, N, N) score or weight array is kept (the trace's
    ``scores`` and ``weights`` are None); where a block of N × N arrays would be large,
    attention is evaluated in blocks of query rows — memory O(B·N·d) plus one block;
    every other field is the same.

    A model whose heads are all softmax heads and stack (:func:`attncert.model.fused.plan`)
    is evaluated every layer's heads at once — with ``keep_attention=False`` in blocks of
    strings small enough to stay in cache (a full trace is not blocked: its arrays would
    be copied once more); otherwise head by head, hard heads with exact ties
    (:class:`_Rows`)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if tokens.ndim != 2:
        raise InputError(f"token batch must be 2-dimensional, got shape {tokens.shape}")
    n_tok = tokens.shape[1]
    if n_tok == 0:
        raise InputError(
            "the model sees no tokens (empty input and no BOS/EOS)", expected="a non-empty string"
        )
    plans = [fused.plan(layer) for layer in model.layers]
    heads = max((len(layer.heads) for layer in model.layers), default=0)
    stack = all(p is not None or not ly.heads for p, ly in zip(plans, model.layers, strict=True))
    if stack and (keep_attention or heads * n_tok * n_tok <= _BLOCK_ENTRIES):
        width = max([model.d, heads * n_tok] + [f.w1.shape[0] for f in _ffns(model)])
        step = max(1, _STRING_CELLS // (n_tok * width))
        if keep_attention or len(tokens) <= step:  # a full trace: blocks would be copied
            return _forward(model, tokens, keep_attention, plans)
        parts = [
            _forward(model, tokens[s : s + step], keep_attention, plans)
            for s in range(0, len(tokens), step)
        ]
        return _concat(parts)
    return _forward(model, tokens, keep_attention, None)


def _ffns(model: Model):
    return [layer.ffn for layer in model.layers if layer.ffn is not None]


def _forward(model: Model, tokens: np.ndarray, keep_attention: bool, plans) -> Trace:
    n_tok = tokens.shape[1]
    # a model with hard heads: ties between equal activations must be exact (_Rows)
    exact = any(h.kind is not AttentionKind.SOFTMAX for layer in model.layers for h in layer.heads)
    y = embed(model, tokens, exact_ties=exact)
    emb = y
    traces = []
    for li, layer in enumerate(model.layers):
        pre = layer.pre_norm
        rows = _Rows(y, exact)
        u = rows.map(partial(layer_norm, layer.norm1)) if pre and layer.norm1 else y
        if plans is not None and plans[li] is not None:
            got = fused.attend(plans[li], u, keep_attention)
            attn_sum, scores, weights = got.total, got.scores, got.weights
            values = partial(got.head_values, plans[li])
        else:  # head by head (or a layer without heads)
            attn_sum, scores, weights, values = _heads(layer, rows, u, keep_attention, exact)
        if layer.parallel:  # GPT-NeoX: x + attn(LN₁(x)) + mlp(LN₂(x))
            ff = (
                _Rows(y, exact).map(partial(feed_forward, layer.ffn, norm=layer.norm2))
                if layer.ffn is not None
                else 0.0
            )
            after_attn = y + attn_sum
            out_y = after_attn + ff
        else:
            after_attn = y + attn_sum if layer.residual else attn_sum
            if not pre and layer.norm1 is not None:
                after_attn = _Rows(after_attn, exact).map(partial(layer_norm, layer.norm1))
            if layer.ffn is not None:
                norm2 = layer.norm2 if pre else None
                ff = _Rows(after_attn, exact).map(partial(feed_forward, layer.ffn, norm=norm2))
                out_y = after_attn + ff if layer.residual else ff
            else:
                out_y = after_attn
            if not pre and layer.norm2 is not None:
                out_y = _Rows(out_y, exact).map(partial(layer_norm, layer.norm2))
        traces.append(LayerTrace(scores, weights, values, after_attn, out_y))
        y = out_y
    final_normed = None
    if model.final_norm is not None:
        y = final_normed = _Rows(y, exact).map(lambda z: layer_norm(model.final_norm, z))
    r = model.readout
    pooled = y.mean(axis=1) if r.pooled else y[:, r.index(n_tok), :]
    logits = pooled @ r.weight + r.bias
    outputs = y[:, :, list(r.output_coords)]
    lm = (
        None
        if r.lm_weight is None
        else _Rows(y, exact).map(lambda z: z @ r.lm_weight.T + r.lm_bias)
    )
    return Trace(tokens, emb, tuple(traces), logits, logits > 0, outputs, lm, final_normed)


def _heads(layer, rows: _Rows, u: np.ndarray, keep: bool, exact: bool):
    """The layer's heads one by one: (Σ head outputs, scores, weights, head outputs)."""
    b, n_tok, d = u.shape
    scores_all, weights_all, values_all = [], [], []
    attn_sum = np.zeros((b, n_tok, d))
    for head in layer.heads:
        q = rotate(head, rows.map(lambda z, h=head: z @ h.w_q.T + h.bias("b_q"), u))
        k = rotate(head, rows.map(lambda z, h=head: z @ h.w_k.T + h.bias("b_k"), u))
        v = rows.map(lambda z, h=head: z @ h.w_v.T + h.bias("b_v"), u)
        # equal keys tie only when the score ignores positions (no RoPE, no ALiBi)
        columns = _equal_columns(k) if exact and not head.positional else None
        if keep:
            scores = q @ np.swapaxes(k, 1, 2)
            if columns is not None:
                scores = np.take_along_axis(scores, columns[:, None, :], axis=2)
            bias = position_bias(head, np.arange(n_tok), n_tok)
            if bias is not None:
                scores = scores + bias[None]
            w = attention_weights(head, scores, n_tok)
            attended = _weighted_sum(w, v, exact and head.kind not in _UNIQUE)
            scores_all.append(np.where(head.mask.matrix(n_tok)[None], scores, -np.inf))
            weights_all.append(w)
        else:
            block = max(1, _BLOCK_ENTRIES // max(1, n_tok * b))
            attended = _head_blockwise(head, q, k, v, block, columns, exact)
        out = _Rows(attended, exact).map(lambda z, h=head: z @ h.w_o.T + h.bias("b_o"))
        values_all.append(out)
        attn_sum = attn_sum + out
    h = len(values_all)
    empty = np.zeros((b, 0, n_tok, n_tok))
    return (
        attn_sum,
        (np.stack(scores_all, 1) if h else empty) if keep else None,
        (np.stack(weights_all, 1) if h else empty) if keep else None,
        np.stack(values_all, 1) if h else np.zeros((b, 0, n_tok, d)),
    )


def _concat(parts: list[Trace]) -> Trace:
    """The trace of a batch from the traces of its consecutive blocks."""

    def cat(xs):
        return None if xs[0] is None else np.concatenate(xs)

    layers = []
    for li in range(len(parts[0].layers)):
        ls = [p.layers[li] for p in parts]
        layers.append(
            LayerTrace(
                cat([x.scores for x in ls]),
                cat([x.weights for x in ls]),
                lambda ls=ls: np.concatenate([x.head_values for x in ls]),
                cat([x.after_attention for x in ls]),
                cat([x.output for x in ls]),
            )
        )
    return Trace(
        cat([p.tokens for p in parts]),
        cat([p.embeddings for p in parts]),
        tuple(layers),
        cat([p.logits for p in parts]),
        cat([p.accept for p in parts]),
        cat([p.outputs for p in parts]),
        cat([p.lm_logits for p in parts]),
        cat([p.final_normed for p in parts]),
    )


def forward(model: Model, strings: Sequence[str], *, keep_attention: bool = True) -> Trace:
    """Forward pass on a batch of input strings, all of the same length.

    ``strings`` is a sequence of strings; a bare string is refused (it would silently
    be read as a batch of one-symbol strings). ``keep_attention=False`` evaluates
    attention blockwise and keeps no N × N arrays (:func:`forward_tokens`)."""
    strings = _batch(strings, "forward")
    if not strings:
        raise InputError("empty batch of strings")
    lengths = {len(s) for s in strings}
    if len(lengths) != 1:
        raise InputError(
            f"strings in one batch must have equal length, got lengths {sorted(lengths)}"
        )
    return forward_tokens(model, encode_batch(model, strings), keep_attention=keep_attention)


def _batch(strings: Sequence[str], what: str) -> list[str]:
    if isinstance(strings, str):
        raise InputError(
            f"{what} takes a sequence of strings, got the bare string {strings[:40]!r}",
            expected=f"a list such as [{strings[:40]!r}]",
        )
    return list(strings)


def accepts(model: Model, strings: Sequence[str]) -> np.ndarray:
    """Float decisions for strings of any lengths (grouped by length)."""
    strings = _batch(strings, "accepts")
    out = np.zeros(len(strings), dtype=bool)
    by_len: dict[int, list[int]] = {}
    for k, s in enumerate(strings):
        by_len.setdefault(len(s), []).append(k)
    for idx in by_len.values():
        out[idx] = forward(model, [strings[k] for k in idx]).accept
    return out
