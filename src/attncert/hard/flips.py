"""The float forward pass of strings that differ from one base string at a few positions,
re-using the base's activations (untrusted screening for the witness search,
:mod:`attncert.hard.witness`).

With unique hard heads (leftmost / rightmost), changing input positions D changes the
layer-0 rows D only; at each layer a query outside the changed rows keeps its attended
key unless that key changed or a changed key now outscores it, and only queries whose
attended row changed (or that changed themselves) pass the change on. So each layer costs
O(N·|D|) scores instead of O(N²) while the set of changed rows stays small (a query whose
attended key changed falls back on its runner-up, kept from the base pass); a layer where
more than an eighth of the rows change is run on every row, and the rows its output
changes are passed on. Models with average or softmax heads are not screened this way
(None: the caller runs the full pass). The arithmetic is the float pass of
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
    win2: tuple[np.ndarray, ...]  # per head (N,) the runner-up key (-1: none)
    best2: tuple[np.ndarray, ...]  # per head (N,) its score


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
    """Unique-hard heads only, and no version-3 kind (the incremental pass below knows
    neither positional scores nor RMSNorm, gated MLPs or a parallel residual)."""
    if model.new_kinds:
        return False
    return all(h.kind in _UNIQUE for layer in model.layers for h in layer.heads)


def _visible(mask: Mask, rows: np.ndarray, cols: np.ndarray) -> np.ndarray | None:
    """Visibility of keys ``cols`` to queries ``rows`` (len(rows) × len(cols))."""
    if mask is Mask.NONE:
        return None
    return mask.allowed(rows[:, None], cols[None, :])  # elementwise on the broadcast arrays


def _first(kind, s: np.ndarray) -> np.ndarray:
    """Per row, the column of the maximum, ties by the head's rule."""
    if kind is AttentionKind.LEFTMOST:
        return s.argmax(axis=1)
    return s.shape[1] - 1 - s[:, ::-1].argmax(axis=1)


def _choose(kind, mask, q: np.ndarray, k: np.ndarray, rows: np.ndarray, runner_up: bool):
    """(winner, score, runner-up, score) of each query row ``rows`` over every key, in
    blocks (-1 / -inf: no such key; the runner-up only with ``runner_up``)."""
    n_tok = k.shape[0]
    out = [np.full(len(rows), -1, dtype=np.int64), np.full(len(rows), -np.inf)]
    out += [np.full(len(rows), -1, dtype=np.int64), np.full(len(rows), -np.inf)]
    cols = np.arange(n_tok)
    step = max(1, _BLOCK // max(n_tok, 1))
    for c0 in range(0, len(rows), step):
        r = rows[c0 : c0 + step]
        sl = slice(c0, c0 + len(r))
        s = q[r] @ k.T
        vis = _visible(mask, r, cols)
        if vis is not None:
            s = np.where(vis, s, -np.inf)
        at = np.arange(len(r))
        for t in (0, 2) if runner_up else (0,):
            a = _first(kind, s)
            top = s[at, a]
            out[t][sl] = np.where(np.isfinite(top), a, -1)
            out[t + 1][sl] = top
            s[at, a] = -np.inf
    return out


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


def _full_layer(
    model: Model, li: int, y: np.ndarray, keep: bool
) -> tuple[np.ndarray, _Layer | None]:
    """Layer ``li`` on every row of its input ``y``: its output, and (``keep``) every
    head's queries, keys, values, winners and runners-up."""
    layer = model.layers[li]
    proj = _projections(model, li, y)
    rows = np.arange(y.shape[0])
    chosen = [
        _choose(h.kind, h.mask, q, k, rows, keep)
        for h, (q, k, _v) in zip(layer.heads, proj, strict=True)
    ]
    outs = [_head_out(h, p[2], c[0]) for h, p, c in zip(layer.heads, proj, chosen, strict=True)]
    out = _rows_after(model, li, y, outs)
    if not keep:
        return out, None
    st = _Layer(
        y,
        *(tuple(p[t] for p in proj) for t in range(3)),
        *(tuple(c[t] for c in chosen) for t in range(4)),
    )
    return out, st


def base_pass(model: Model, string: str) -> Base | None:
    """The float pass of ``string`` with every head's queries, keys, values, winners and
    runners-up kept (None unless every head is leftmost or rightmost)."""
    if not supported(model):
        return None
    tokens = np.asarray(model.encode(string), dtype=np.int64)
    y = embed(model, tokens[None])[0]
    layers = []
    for li in range(len(model.layers)):
        y, st = _full_layer(model, li, y, keep=True)
        assert st is not None
        layers.append(st)
    final = layer_norm(model.final_norm, y) if model.final_norm is not None else y
    return Base(tokens, tuple(layers), y, final, _logit(model, final))


def _changed_layer(
    model: Model,
    li: int,
    st: _Layer,
    ref: np.ndarray,
    y: np.ndarray,
    D: np.ndarray,
    limit: int,
) -> np.ndarray | None:
    """Layer ``li``'s output when its input rows ``D`` changed (``y``: the new input,
    ``ref``: the base's output), scoring only what the change can affect; None when more
    than ``limit`` query rows must be scored against every key."""
    layer = model.layers[li]
    n_tok = y.shape[0]
    in_d = np.zeros(n_tok, dtype=bool)
    in_d[D] = True
    proj = _projections(model, li, y[D])
    changed = in_d.copy()
    wins, vs = [], []
    for hi, head in enumerate(layer.heads):
        qD, kD, vD = proj[hi]
        q, k, v = st.q[hi].copy(), st.k[hi].copy(), st.v[hi].copy()
        q[D], k[D], v[D] = qD, kD, vD
        w, b, w2, b2 = st.win[hi], st.best[hi], st.win2[hi], st.best2[hi]
        # the best unchanged key of each query: its winner, or its runner-up when the
        # winner changed (both unchanged scores); a query that saw no key sees none
        w_in = (w >= 0) & in_d[np.maximum(w, 0)]
        w2_in = (w2 >= 0) & in_d[np.maximum(w2, 0)]
        redo = in_d | (w_in & w2_in)
        cw = np.where(w_in, w2, w)
        cb = np.where(w_in, b2, b)
        win = cw.copy()
        r = np.flatnonzero(~redo & (w >= 0))
        if len(r):
            s = q[r] @ kD.T  # (|r|, |D|): the changed keys
            vis = _visible(head.mask, r, D)
            if vis is not None:
                s = np.where(vis, s, -np.inf)
            j = _first(head.kind, s)
            sj = s[np.arange(len(r)), j]
            cand, old, sc = D[j], cw[r], cb[r]
            side = cand < old if head.kind is AttentionKind.LEFTMOST else cand > old
            better = np.isfinite(sj) & ((sj > sc) | ((sj == sc) & side) | (old < 0))
            win[r[better]] = cand[better]
        rr = np.flatnonzero(redo)
        if len(rr) > limit:
            return None
        if len(rr):
            win[rr] = _choose(head.kind, head.mask, q, k, rr, False)[0]
        changed |= win != w
        changed |= (win >= 0) & in_d[np.maximum(win, 0)]
        wins.append(win)
        vs.append(v)
    D2 = np.flatnonzero(changed)
    outs = [_head_out(head, vs[hi], wins[hi][D2]) for hi, head in enumerate(layer.heads)]
    out = ref.copy()
    out[D2] = _rows_after(model, li, y[D2], outs)
    return out


def changed_logit(model: Model, base: Base, string: str) -> float | None:
    """The float logit of ``string`` (same length as the base), computed from the base's
    activations: a layer whose changed rows are few is updated from the base's scores,
    runners-up and choices, any other layer is run on every row."""
    tokens = np.asarray(model.encode(string), dtype=np.int64)
    if tokens.shape != base.tokens.shape:
        return None
    n_tok = len(tokens)
    limit = max(1, n_tok // 8)
    D = np.flatnonzero(tokens != base.tokens)
    if not len(D):
        return base.logit
    y = base.layer_input(0).copy()
    y[D] = embed(model, tokens[None])[0][D]
    for li in range(len(model.layers)):
        ref = base.layer_input(li + 1)
        st = base.layers[li]
        out = None if len(D) > limit else _changed_layer(model, li, st, ref, y, D, limit)
        if out is None:
            out = _full_layer(model, li, y, keep=False)[0]
        D = np.flatnonzero((out != ref).any(axis=1))
        if not len(D):
            return base.logit
        y = out
    fin = base.final.copy()
    fin[D] = layer_norm(model.final_norm, y[D]) if model.final_norm is not None else y[D]
    return _logit(model, fin)
