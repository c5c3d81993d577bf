"""Vectorized float64 forward pass over a batch of equal-length strings.

The semantics are those of :mod:`attncert.model.spec` (pre-/post-norm LayerNorm,
ReLU/GELU feed-forward, attention biases, final norm, last/first/mean readout);
this is the *float* evaluator, cross-checked against PyTorch's and Hugging Face's
own forward passes and against the rigorous evaluator.

Hard attention in float follows the definitions literally: argmax over the
visible positions, ties to the leftmost / rightmost maximum, or the average
over all positions attaining the maximum. Float ties are float equalities;
:mod:`attncert.model.exact` decides them exactly. A query position that sees
no key (e.g. position 1 under a strict future mask) gets a zero head output.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attncert.errors import InputError
from attncert.model.positional import feature_matrix
from attncert.model.spec import Activation, AttentionKind, FeedForward, Head, LayerNorm, Model

__implements__ = (
    "Yang Definition 1",
    "Yang Definition 2",
    "Yang Definition 3",
    "Yang Definition 4",
)


@dataclass(frozen=True, eq=False)
class LayerTrace:
    """Activations of one layer for a batch (B strings, N tokens, H heads)."""

    scores: np.ndarray  # (B, H, N, N), masked entries -inf (before the temperature)
    weights: np.ndarray  # (B, H, N, N) attention weights (one-hot / uniform / softmax)
    head_values: np.ndarray  # (B, H, N, d) W_O · attn(W_V u + b_V) + b_O per head
    after_attention: np.ndarray  # (B, N, d) the residual stream after the attention sublayer
    output: np.ndarray  # (B, N, d) after the FFN sublayer (and its norms)


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


_ERF = np.frompyfunc(math.erf, 1, 1)


def layer_norm(norm: LayerNorm, y: np.ndarray) -> np.ndarray:
    """LN over the last axis (biased variance, ε inside the square root, as PyTorch)."""
    mu = y.mean(axis=-1, keepdims=True)
    c = y - mu
    var = (c * c).mean(axis=-1, keepdims=True)
    return c / np.sqrt(var + norm.eps) * norm.weight + norm.bias


def activate(activation: Activation, x: np.ndarray) -> np.ndarray:
    """The FFN non-linearity in float64 (GELU via the C library's erf)."""
    if activation is Activation.RELU:
        return np.maximum(x, 0.0)
    if activation is Activation.GELU:
        return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)).astype(np.float64))
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
    return 0.5 * x * (1.0 + np.tanh(inner))


def feed_forward(ffn: FeedForward, y: np.ndarray) -> np.ndarray:
    return activate(ffn.activation, y @ ffn.w1.T + ffn.b1) @ ffn.w2.T + ffn.b2


def embed(model: Model, tokens: np.ndarray) -> np.ndarray:
    """Layer-0 activations for a (B, N) token batch."""
    emb = model.embedding
    n_tok = tokens.shape[1]
    y = emb.word[tokens]
    if emb.features:
        y = y + (feature_matrix(emb.features, n_tok) @ emb.pos_weight.T)[None]
    if emb.table is not None:
        if n_tok > emb.table.shape[0]:
            raise InputError(
                f"sequence of {n_tok} tokens is longer than the learned position table "
                f"({emb.table.shape[0]} rows)"
            )
        y = y + emb.table[:n_tok][None]
    return y


def attention_weights(head: Head, scores: np.ndarray, n_tok: int) -> np.ndarray:
    """Weights (B, N, N) from raw scores (B, N, N) for ``head``'s kind and mask."""
    visible = head.mask.matrix(n_tok)[None]
    s = np.where(visible, scores, -np.inf)
    any_visible = visible.any(axis=-1)  # (1, N)
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


def forward_tokens(model: Model, tokens: np.ndarray) -> Trace:
    """Forward pass on a (B, N) array of token ids."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if tokens.ndim != 2:
        raise InputError(f"token batch must be 2-dimensional, got shape {tokens.shape}")
    n_tok = tokens.shape[1]
    if n_tok == 0:
        raise InputError(
            "the model sees no tokens (empty input and no BOS/EOS)", expected="a non-empty string"
        )
    y = embed(model, tokens)
    emb = y
    traces = []
    for layer in model.layers:
        pre = layer.pre_norm
        u = layer_norm(layer.norm1, y) if pre and layer.norm1 is not None else y
        scores_all, weights_all, values_all = [], [], []
        attn_sum = np.zeros_like(y)
        for head in layer.heads:
            q = u @ head.w_q.T + head.bias("b_q")
            k = u @ head.w_k.T + head.bias("b_k")
            scores = q @ np.swapaxes(k, 1, 2)
            w = attention_weights(head, scores, n_tok)
            v = u @ head.w_v.T + head.bias("b_v")
            out = (w @ v) @ head.w_o.T + head.bias("b_o")
            scores_all.append(np.where(head.mask.matrix(n_tok)[None], scores, -np.inf))
            weights_all.append(w)
            values_all.append(out)
            attn_sum = attn_sum + out
        after_attn = y + attn_sum if layer.residual else attn_sum
        if not pre and layer.norm1 is not None:
            after_attn = layer_norm(layer.norm1, after_attn)
        if layer.ffn is not None:
            ffn_in = (
                layer_norm(layer.norm2, after_attn)
                if pre and layer.norm2 is not None
                else after_attn
            )
            ff = feed_forward(layer.ffn, ffn_in)
            out_y = after_attn + ff if layer.residual else ff
        else:
            out_y = after_attn
        if not pre and layer.norm2 is not None:
            out_y = layer_norm(layer.norm2, out_y)
        b = tokens.shape[0]
        h = len(layer.heads)
        traces.append(
            LayerTrace(
                scores=np.stack(scores_all, 1) if h else np.zeros((b, 0, n_tok, n_tok)),
                weights=np.stack(weights_all, 1) if h else np.zeros((b, 0, n_tok, n_tok)),
                head_values=np.stack(values_all, 1) if h else np.zeros((b, 0, n_tok, model.d)),
                after_attention=after_attn,
                output=out_y,
            )
        )
        y = out_y
    final_normed = None
    if model.final_norm is not None:
        y = final_normed = layer_norm(model.final_norm, y)
    r = model.readout
    pooled = y.mean(axis=1) if r.pooled else y[:, r.index(n_tok), :]
    logits = pooled @ r.weight + r.bias
    outputs = y[:, :, list(r.output_coords)]
    lm = None if r.lm_weight is None else y @ r.lm_weight.T + r.lm_bias
    return Trace(tokens, emb, tuple(traces), logits, logits > 0, outputs, lm, final_normed)


def forward(model: Model, strings: Sequence[str]) -> Trace:
    """Forward pass on a batch of input strings, all of the same length.

    ``strings`` is a sequence of strings; a bare string is refused (it would silently
    be read as a batch of one-symbol strings)."""
    strings = _batch(strings, "forward")
    if not strings:
        raise InputError("empty batch of strings")
    lengths = {len(s) for s in strings}
    if len(lengths) != 1:
        raise InputError(
            f"strings in one batch must have equal length, got lengths {sorted(lengths)}"
        )
    tokens = np.array([model.encode(s) for s in strings], dtype=np.int64)
    return forward_tokens(model, tokens)


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
