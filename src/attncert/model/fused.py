"""Every softmax head of a layer in one pass: the float evaluator's fast path.

A layer whose heads are all softmax heads with one mask, one query/key width, one value
width and one rotary embedding (or none) is evaluated with stacked weights
(:func:`plan`): one product for every head's queries, one for each *distinct* key and
value projection (grouped-query attention imports equal copies; they are computed
once), the scores and weights of all heads as one (B, H, N, N) array, and one product
with the stacked W_O for the sum of the heads' outputs. The per-head outputs
W_O·attn + b_O, which nothing downstream needs, are computed only when a trace's
``head_values`` is read.

The formulas are those of :mod:`attncert.model.forward` (scores q·k with RoPE applied to
q and k and ALiBi's −m(i − j) added, β(N) times the visible scores, a max-shifted
softmax, a query that sees no key outputs 0); only the batching differs, so results
agree with the head-by-head evaluation up to float rounding
(tests/test_model_forward_fast.py).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cache

import numpy as np

from attncert.model.spec import AttentionKind, Head, Layer, Mask, Rotary


@dataclass(frozen=True, eq=False)
class Plan:
    """A layer's heads, stacked. ``k_of``/``v_of``: each head's key/value projection
    among the distinct ones."""

    heads: tuple[Head, ...]
    mask: Mask
    rotary: Rotary | None
    w_q: np.ndarray  # (d, H·d_k): u @ w_q gives every head's queries
    b_q: np.ndarray | None
    w_k: np.ndarray  # (d, G·d_k), G distinct key projections
    b_k: np.ndarray | None
    k_of: np.ndarray  # (H,)
    w_v: np.ndarray  # (d, G′·d_v)
    b_v: np.ndarray | None
    v_of: np.ndarray  # (H,)
    w_o: np.ndarray  # (H·d_v, d): attended (…, H·d_v) @ w_o is Σ_h W_O,h · attn_h
    b_o: np.ndarray | None  # Σ_h b_O,h
    slopes: np.ndarray | None  # (H,) ALiBi slopes (0 for a head without)

    @property
    def d_k(self) -> int:
        return self.heads[0].w_q.shape[0]

    @property
    def d_v(self) -> int:
        return self.heads[0].w_v.shape[0]


_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def plan(layer: Layer) -> Plan | None:
    """The stacked form of ``layer``'s heads, or None when they cannot be stacked (a hard
    head, or heads differing in mask, widths or rotary embedding). Cached per layer."""
    if layer not in _PLANS:
        _PLANS[layer] = _make_plan(layer)
    return _PLANS[layer]


def _make_plan(layer: Layer) -> Plan | None:
    heads = tuple(layer.heads)
    if not heads or any(h.kind is not AttentionKind.SOFTMAX for h in heads):
        return None
    h0 = heads[0]
    if any(
        h.mask is not h0.mask
        or h.rotary != h0.rotary
        or h.w_q.shape != h0.w_q.shape
        or h.w_v.shape != h0.w_v.shape
        for h in heads
    ):
        return None
    w_k, b_k, k_of = _distinct(heads, "w_k", "b_k")
    w_v, b_v, v_of = _distinct(heads, "w_v", "b_v")
    b_o = None
    if any(h.b_o is not None for h in heads):
        b_o = np.sum([h.bias("b_o") for h in heads], axis=0)
    slopes = None
    if any(h.alibi is not None for h in heads):
        slopes = np.array([h.alibi or 0.0 for h in heads])
    return Plan(
        heads=heads,
        mask=h0.mask,
        rotary=h0.rotary,
        w_q=np.ascontiguousarray(np.concatenate([h.w_q for h in heads]).T),
        b_q=_stacked_bias(heads, "b_q"),
        w_k=w_k,
        b_k=b_k,
        k_of=k_of,
        w_v=w_v,
        b_v=b_v,
        v_of=v_of,
        w_o=np.ascontiguousarray(np.concatenate([h.w_o for h in heads], axis=1).T),
        b_o=b_o,
        slopes=slopes,
    )


def _stacked_bias(heads, name: str) -> np.ndarray | None:
    if all(getattr(h, name) is None for h in heads):
        return None
    return np.concatenate([h.bias(name) for h in heads])


def _distinct(heads, w_name: str, b_name: str):
    """The distinct (weight, bias) pairs among ``heads`` stacked as (d, G·width), their
    bias (or None) and each head's index among them."""
    seen: list[int] = []
    index = []
    for k, h in enumerate(heads):
        same = next(
            (
                g
                for g, j in enumerate(seen)
                if np.array_equal(getattr(heads[j], w_name), getattr(h, w_name))
                and np.array_equal(heads[j].bias(b_name), h.bias(b_name))
            ),
            None,
        )
        if same is None:
            seen.append(k)
            same = len(seen) - 1
        index.append(same)
    chosen = [heads[j] for j in seen]
    w = np.ascontiguousarray(np.concatenate([getattr(h, w_name) for h in chosen]).T)
    return w, _stacked_bias(chosen, b_name), np.array(index)


@cache
def _rotation(rot: Rotary, n_tok: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin (N, 1, dim/2) of RoPE's float angles at positions 0 … N − 1."""
    ang = rot.angles(np.arange(n_tok))[:, None, :]
    return np.cos(ang), np.sin(ang)


def _rotate(rot: Rotary, x: np.ndarray) -> np.ndarray:
    """(B, N, H, d_k) rotated by positions (rotate-half layout, as
    :func:`attncert.model.forward.rotate`)."""
    cos, sin = _rotation(rot, x.shape[1])
    h = rot.dim // 2
    x1, x2 = x[..., :h], x[..., h : rot.dim]
    out = x.copy()
    out[..., :h] = x1 * cos - x2 * sin
    out[..., h : rot.dim] = x2 * cos + x1 * sin
    return out


def _project(u: np.ndarray, w: np.ndarray, b: np.ndarray | None, width: int) -> np.ndarray:
    b_, n, _ = u.shape
    y = u.reshape(b_ * n, -1) @ w
    if b is not None:
        y += b
    return y.reshape(b_, n, -1, width)


@dataclass(frozen=True, eq=False)
class Attended:
    """One layer's attention for a batch: the sum of the heads' outputs (b_O included),
    every head's attention-weighted values (before W_O), and the masked scores (before
    the temperature) and weights when kept."""

    total: np.ndarray  # (B, N, d)
    values: np.ndarray  # (B, H, N, d_v)
    scores: np.ndarray | None  # (B, H, N, N), −inf where masked
    weights: np.ndarray | None  # (B, H, N, N)

    def head_values(self, p: Plan) -> np.ndarray:
        """(B, H, N, d): W_O,h · attn_h + b_O,h per head."""
        return np.stack(
            [self.values[:, k] @ h.w_o.T + h.bias("b_o") for k, h in enumerate(p.heads)], 1
        )


def attend(p: Plan, u: np.ndarray, keep: bool) -> Attended:
    """Every head of the plan on the attention inputs ``u`` (B, N, d)."""
    b_, n_tok, _ = u.shape
    q = _project(u, p.w_q, p.b_q, p.d_k)
    k = _project(u, p.w_k, p.b_k, p.d_k)
    v = _project(u, p.w_v, p.b_v, p.d_v)
    if p.rotary is not None:
        q, k = _rotate(p.rotary, q), _rotate(p.rotary, k)
    q = np.ascontiguousarray(q.transpose(0, 2, 1, 3))  # (B, H, N, d_k)
    k = np.ascontiguousarray(k[:, :, p.k_of].transpose(0, 2, 3, 1))  # (B, H, d_k, N)
    v = np.ascontiguousarray(v[:, :, p.v_of].transpose(0, 2, 1, 3))  # (B, H, N, d_v)
    s = q @ k
    if p.slopes is not None:
        i = np.arange(n_tok, dtype=np.float64)
        s += -p.slopes[:, None, None] * (i[:, None] - i[None, :])
    vis = p.mask.matrix(n_tok)
    beta = np.array([h.temperature(n_tok) for h in p.heads])[:, None, None]
    z = np.where(vis, beta * s, -np.inf) if not vis.all() else beta * s
    zmax = z.max(axis=-1, keepdims=True)
    sees = p.mask.sees_any(n_tok)
    if not sees.all():  # a query that sees no key: no shift (its row stays −∞)
        zmax = np.where(np.isfinite(zmax), zmax, 0.0)
    z -= zmax
    np.exp(z, out=z)  # e^(−∞) = 0 at the masked entries
    total = z.sum(axis=-1, keepdims=True)
    if sees.all():
        z /= total
    else:  # a query that sees no key: weights 0
        np.divide(z, total, out=z, where=total > 0)
    att = z @ v
    flat = att.transpose(0, 2, 1, 3).reshape(b_ * n_tok, -1) @ p.w_o
    if p.b_o is not None:
        flat += p.b_o
    scores = (np.where(vis, s, -np.inf) if not vis.all() else s) if keep else None
    return Attended(flat.reshape(b_, n_tok, -1), att, scores, z if keep else None)
