"""The float forward pass of strings that differ from one base string at a few positions,
re-using the base's activations (untrusted screening for the witness search,
:mod:`attncert.hard.witness`).

With unique hard heads (leftmost / rightmost), changing input positions D changes the
layer-0 rows D only; at each layer a query outside the changed rows keeps its attended
key unless that key changed or a changed key now outscores it, and only queries whose
attended row changed (or that changed themselves) pass the change on. So each layer costs
O(N·|D|) scores instead of O(N²) while the set of changed rows stays small; when it grows
past a sixteenth of the tokens (or the model has average or softmax heads) the screen gives
up (None) and the caller runs the full pass. The arithmetic is the float pass of
:mod:`attncert.model.forward` (same maps, scores as query · key products), row by row:
near-ties may round differently from the batched pass, which only matters to a screen —
every string it lets through is decided by the kernel, and one it drops is only a
witness not found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncert.model.forward import embed, feed_forward, layer_norm
from attncert.model.spec import AttentionKind, Mask, Model

__implements__ = ("Hahn Theorem 1",)

_UNIQUE = (AttentionKind.LEFTMOST, AttentionKind.RIGHTMOST)
_BLOCK = 1 << 20  # scores held at once


@dataclass(frozen=True, eq=False)
class _Layer:
    y: np.ndarray  # (N, d) the layer's input
    q: tuple[np.ndarray, ...]  # per head (N, dk)
    k: tuple[np.ndarray, ...]
    v: tuple[np.ndarray, ...]
    win: tuple[np.ndarray, ...]  # per head (N,) attended key, -1: no visible key
    best: tuple[np.ndarray, ...]  # per head (N,) its score


@dataclass(frozen=True, eq=False)
class Base:
    """A base string's float activations, kept for :func:`changed_logit`."""

    tokens: np.ndarray  # (N,)
    layers: tuple[_Layer, ...]
    output: np.ndarray  # (N, d) the last layer's output (the embeddings if no layer)
    final: np.ndarray  # (N, d) what the readout reads (after the final norm)
    logit: float

    def layer_input(self, li: int) -> np.ndarray:
        return self.layers[li].y if li < len(self.layers) else self.output


def supported(model: Model) -> bool:
    return all(h.kind in _UNIQUE for layer in model.layers for h in layer.heads)


def _visible(mask: Mask, rows: np.ndarray, cols: np.ndarray) -> np.ndarray | None:
    """Visibility of keys ``cols`` to queries ``rows`` (len(rows) × len(cols))."""
    if mask is Mask.NONE:
        return None
    i, j = rows[:, None], cols[None, :]
    if mask is Mask.FUTURE:
        return j <= i
    if mask is Mask.FUTURE_STRICT:
        return j < i
    if mask is Mask.PAST:
        return j >= i
    return j > i


def _choose(kind, mask, q: np.ndarray, k: np.ndarray, rows: np.ndarray):
    """(winner, best score) of each query row ``rows`` over every key, in blocks."""
    n_tok = k.shape[0]
    win = np.full(len(rows), -1, dtype=np.int64)
    best = np.full(len(rows), -np.inf)
    cols = np.arange(n_tok)
    step = max(1, _BLOCK // max(n_tok, 1))
    for c0 in range(0, len(rows), step):
        r = rows[c0 : c0 + step]
        s = q[r] @ k.T
        vis = _visible(mask, r, cols)
        if vis is not None:
            s = np.where(vis, s, -np.inf)
        if kind is AttentionKind.LEFTMOST:
            a = s.argmax(axis=1)
        else:
            a = n_tok - 1 - s[:, ::-1].argmax(axis=1)
        top = s[np.arange(len(r)), a]
        seen = np.isfinite(top)
        win[c0 : c0 + step] = np.where(seen, a, -1)
        best[c0 : c0 + step] = top
    return win, best


def _rows_after(model: Model, li: int, y: np.ndarray, outs: list[np.ndarray]) -> np.ndarray:
    """A layer's output rows from its input rows ``y`` and each head's output rows."""
    layer = model.layers[li]
    attn = np.zeros_like(y)
    for o in outs:
        attn = attn + o
    after = y + attn if layer.residual else attn
    if not layer.pre_norm and layer.norm1 is not None:
        after = layer_norm(layer.norm1, after)
    if layer.ffn is not None:
        ff = feed_forward(layer.ffn, after, norm=layer.norm2 if layer.pre_norm else None)
        out = after + ff if layer.residual else ff
    else:
        out = after
    if not layer.pre_norm and layer.norm2 is not None:
        out = layer_norm(layer.norm2, out)
    return out


def _head_out(head, v: np.ndarray, win: np.ndarray) -> np.ndarray:
    got = np.where((win >= 0)[:, None], v[np.maximum(win, 0)], 0.0)
    return got @ head.w_o.T + head.bias("b_o")


def _projections(model: Model, li: int, y: np.ndarray):
    layer = model.layers[li]
    u = layer_norm(layer.norm1, y) if layer.pre_norm and layer.norm1 is not None else y
    return [
        (
            u @ h.w_q.T + h.bias("b_q"),
            u @ h.w_k.T + h.bias("b_k"),
            u @ h.w_v.T + h.bias("b_v"),
        )
        for h in layer.heads
    ]


def _logit(model: Model, final: np.ndarray) -> float:
    r = model.readout
    row = final.mean(axis=0) if r.pooled else final[r.index(final.shape[0])]
    return float(row @ r.weight + r.bias)


def base_pass(model: Model, string: str) -> Base | None:
    """The float pass of ``string`` with every head's queries, keys, values and choices
    kept (None unless every head is leftmost or rightmost)."""
    if not supported(model):
        return None
    tokens = np.asarray(model.encode(string), dtype=np.int64)
    n_tok = len(tokens)
    y = embed(model, tokens[None])[0]
    rows = np.arange(n_tok)
    layers = []
    for li, layer in enumerate(model.layers):
        proj = _projections(model, li, y)
        wins, bests, outs = [], [], []
        for head, (q, k, v) in zip(layer.heads, proj, strict=True):
            w, b = _choose(head.kind, head.mask, q, k, rows)
            wins.append(w)
            bests.append(b)
            outs.append(_head_out(head, v, w))
        layers.append(
            _Layer(
                y,
                tuple(p[0] for p in proj),
                tuple(p[1] for p in proj),
                tuple(p[2] for p in proj),
                tuple(wins),
                tuple(bests),
            )
        )
        y = _rows_after(model, li, y, outs)
    final = layer_norm(model.final_norm, y) if model.final_norm is not None else y
    return Base(tokens, tuple(layers), y, final, _logit(model, final))


def changed_logit(model: Model, base: Base, string: str) -> float | None:
    """The float logit of ``string`` (same length as the base), computed from the base's
    activations; None when the changed rows grow past a sixteenth of the tokens."""
    tokens = np.asarray(model.encode(string), dtype=np.int64)
    if tokens.shape != base.tokens.shape:
        return None
    n_tok = len(tokens)
    limit = max(1, n_tok // 16)
    D = np.flatnonzero(tokens != base.tokens)
    if not len(D):
        return base.logit
    y = base.layer_input(0).copy()
    y[D] = embed(model, tokens[None])[0][D]
    for li, layer in enumerate(model.layers):
        st = base.layers[li]
        proj = _projections(model, li, y[D])
        in_d = np.zeros(n_tok, dtype=bool)
        in_d[D] = True
        new_wins = []
        vs = []
        changed = np.zeros(n_tok, dtype=bool)
        for hi, head in enumerate(layer.heads):
            qD, kD, vD = proj[hi]
            q, k, v = st.q[hi].copy(), st.k[hi].copy(), st.v[hi].copy()
            q[D], k[D], v[D] = qD, kD, vD
            win, best = st.win[hi].copy(), st.best[hi]
            # queries outside D whose winner is outside D: the winner or a changed key
            keep = ~in_d & ((win < 0) | ~in_d[np.maximum(win, 0)])
            r = np.flatnonzero(keep & (win >= 0))
            if len(r):
                s = q[r] @ kD.T  # (|r|, |D|)
                vis = _visible(head.mask, r, D)
                if vis is not None:
                    s = np.where(vis, s, -np.inf)
                if head.kind is AttentionKind.LEFTMOST:
                    j = s.argmax(axis=1)
                else:
                    j = len(D) - 1 - s[:, ::-1].argmax(axis=1)
                sj = s[np.arange(len(r)), j]
                cand = D[j]
                old = win[r]
                if head.kind is AttentionKind.LEFTMOST:
                    better = (sj > best[r]) | ((sj == best[r]) & (cand < old))
                else:
                    better = (sj > best[r]) | ((sj == best[r]) & (cand > old))
                win[r[better]] = cand[better]
            # a query that saw no key still sees none (the mask ignores values)
            redo = np.flatnonzero(~keep)
            if len(redo) + len(D) > limit:
                return None
            if len(redo):
                w, _ = _choose(head.kind, head.mask, q, k, redo)
                win[redo] = w
            changed |= win != st.win[hi]
            changed |= (win >= 0) & in_d[np.maximum(win, 0)]
            new_wins.append(win)
            vs.append(v)
        D2 = np.flatnonzero(changed | in_d)
        if len(D2) > limit:
            return None
        outs = [_head_out(head, vs[hi], new_wins[hi][D2]) for hi, head in enumerate(layer.heads)]
        y[D2] = _rows_after(model, li, y[D2], outs)
        nxt = base.layer_input(li + 1).copy()
        nxt[D2] = y[D2]
        y, D = nxt, D2
    fin = base.final.copy()
    fin[D] = layer_norm(model.final_norm, y[D]) if model.final_norm is not None else y[D]
    return _logit(model, fin)
