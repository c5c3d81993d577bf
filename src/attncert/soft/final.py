"""The float evaluation the sensitivity search needs: the readout position's final
activation for a batch of strings, attention evaluated in blocks, and a first-layer cache
that recomputes only what one changed position moves (:class:`_FirstLayerCache`).

Untrusted measurement code (the certified bounds are :mod:`attncert.soft.certified`,
checked by :mod:`attncert.kernel.soft.checker`); split out of :mod:`attncert.soft.sensitivity`,
which re-exports :func:`final_activation`.
"""

from __future__ import annotations

import numpy as np

from attncert.model.forward import embed, feed_forward, forward_tokens, layer_norm
from attncert.model.positional import feature_matrix
from attncert.model.spec import AttentionKind, Mask, Model

__implements__ = ("Hahn Lemma 5",)

_CHUNK = 1 << 22  # floats per score block


# ----------------------------------------------------------------------------- forward


def _weights_rows(head, sc: np.ndarray, visible: np.ndarray, n_tok: int) -> np.ndarray:
    """Attention weights (B, Q, N) from raw scores for queries whose visibility rows are
    ``visible`` (Q, N); a query that sees no key gets zero weights (output b_O)."""
    vis = visible[None]
    if head.kind is AttentionKind.SOFTMAX:
        z = np.where(vis, head.temperature(n_tok) * sc, -np.inf)
        zmax = z.max(axis=-1, keepdims=True)
        zmax = np.where(np.isfinite(zmax), zmax, 0.0)
        e = np.where(vis, np.exp(z - zmax), 0.0)
        tot = e.sum(axis=-1, keepdims=True)
        return np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)
    s_ = np.where(vis, sc, -np.inf)
    is_max = (s_ == s_.max(axis=-1, keepdims=True)) & vis
    if head.kind is AttentionKind.AVERAGE:
        cnt = is_max.sum(axis=-1, keepdims=True)
        return np.divide(is_max.astype(float), cnt, out=np.zeros(is_max.shape), where=cnt > 0)
    if head.kind is AttentionKind.LEFTMOST:
        idx = np.argmax(is_max, axis=-1)
    else:
        idx = n_tok - 1 - np.argmax(is_max[..., ::-1], axis=-1)
    w = np.zeros(is_max.shape)
    np.put_along_axis(w, idx[..., None], 1.0, axis=-1)
    return w * vis.any(axis=-1, keepdims=True)


def _attention(head, y_q: np.ndarray, y_k: np.ndarray, n_tok: int, rows=None) -> np.ndarray:
    """W_O · attn(W_V u + b_V) + b_O for queries ``y_q`` (B, Q, d) — token positions
    ``rows`` (default 0..Q−1) — over keys ``y_k`` (B, N, d); chunked over queries."""
    rows = np.arange(y_q.shape[1]) if rows is None else np.asarray(rows)
    v = y_k @ head.w_v.T + head.bias("b_v")
    b_o = head.bias("b_o")
    uniform = (not np.any(head.w_q) and not np.any(head.bias("b_q"))) or not np.any(head.w_k)
    averaging = head.kind in (AttentionKind.SOFTMAX, AttentionKind.AVERAGE)
    if uniform and averaging and head.mask is Mask.NONE:  # every score equal: the average
        mean = (v.mean(axis=1) @ head.w_o.T + b_o)[:, None, :]
        return np.broadcast_to(mean, (y_q.shape[0], y_q.shape[1], len(b_o))).copy()
    q = y_q @ head.w_q.T + head.bias("b_q")
    k = y_k @ head.w_k.T + head.bias("b_k")
    b, nq, _ = q.shape
    out = np.empty((b, nq, head.w_o.shape[0]))
    visible = head.mask.matrix(n_tok)[rows]
    step = max(1, _CHUNK // max(1, b * n_tok))
    for s in range(0, nq, step):
        sc = q[:, s : s + step] @ np.swapaxes(k, 1, 2)
        w = _weights_rows(head, sc, visible[s : s + step], n_tok)
        out[:, s : s + step] = (w @ v) @ head.w_o.T + b_o
    return out


def _layer(layer, y_q: np.ndarray, y: np.ndarray, n_tok: int, rows=None) -> np.ndarray:
    """One layer's output at the queries ``y_q`` (token positions ``rows``) of ``y``."""
    pre = layer.pre_norm
    u = layer_norm(layer.norm1, y) if pre and layer.norm1 is not None else y
    u_q = layer_norm(layer.norm1, y_q) if pre and layer.norm1 is not None else y_q
    att = sum((_attention(h, u_q, u, n_tok, rows) for h in layer.heads), np.zeros_like(y_q))
    out = y_q + att if layer.residual else att
    if not pre and layer.norm1 is not None:
        out = layer_norm(layer.norm1, out)
    if layer.ffn is not None:
        f_in = layer_norm(layer.norm2, out) if pre and layer.norm2 is not None else out
        ff = feed_forward(layer.ffn, f_in)
        out = out + ff if layer.residual else ff
    if not pre and layer.norm2 is not None:
        out = layer_norm(layer.norm2, out)
    return out


def final_activation(model: Model, tokens: np.ndarray, position: int | None = None) -> np.ndarray:
    """The readout vector (B, d) for a (B, N) token batch: y^{(L)} at the readout position
    (or 0-based ``position``), after the final norm; for a mean readout (and no
    ``position``) the mean of those vectors over all tokens.

    Equal to the reference :func:`attncert.model.forward.forward_tokens` but only the
    readout query is computed in the last layer and scores are chunked, so n = 4096 fits
    in memory. Every version-2 feature (masks, LayerNorm, GELU, biases) is supported; a
    model with version-3 kinds (RoPE, ALiBi, RMSNorm, gated MLPs, parallel residual) is
    evaluated by the reference pass itself, blockwise."""
    tokens = np.asarray(tokens, dtype=np.int64)
    n_tok = tokens.shape[1]
    if model.new_kinds:
        fin = forward_tokens(model, tokens, keep_attention=False).final
        if model.readout.pooled and position is None:
            return fin.mean(axis=1)
        return fin[:, model.readout.index(n_tok) if position is None else position]
    y = embed(model, tokens)
    pooled = model.readout.pooled and position is None
    r = None if pooled else (model.readout.index(n_tok) if position is None else position)
    for li, layer in enumerate(model.layers):
        if li == len(model.layers) - 1 and r is not None:
            y = _layer(layer, y[:, r : r + 1], y, n_tok, [r])
            r = 0
        else:
            y = _layer(layer, y, y, n_tok)
    if model.final_norm is not None:
        y = layer_norm(model.final_norm, y)
    return y.mean(axis=1) if pooled else y[:, r]


def _metrics(model: Model, act: np.ndarray) -> dict[str, np.ndarray]:
    logit = act @ model.readout.weight + model.readout.bias
    return {"activation": act, "logit": logit, "probability": 1.0 / (1.0 + np.exp(-logit))}


def _change(model: Model, a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    ma, mb = _metrics(model, a), _metrics(model, b)
    if metric == "activation":
        return np.linalg.norm(ma["activation"] - mb["activation"], axis=-1)
    return np.abs(ma[metric] - mb[metric])


class _FirstLayerCache:
    """Incremental evaluation of strings that differ from a base string in ≤ 2 tokens.

    Caches, for the base, every softmax row of the first layer as (row max m, sum Z,
    weighted value sum) so a changed key updates each row in O(d) (rows of changed
    queries, and rows where the removed term carried ≥ half the mass, are recomputed
    in full).  Used only to *rank* search moves at large n; reported values are always
    recomputed with :func:`final_activation`.
    """

    def __init__(self, model: Model, base: np.ndarray, heads: list | None = None):
        self.model = model
        self.base = np.array(base)
        n_tok = len(base)
        self.n_tok = n_tok
        emb = model.embedding
        pos = np.zeros((n_tok, model.d))
        if emb.features:
            pos = pos + feature_matrix(emb.features, n_tok) @ emb.pos_weight.T
        if emb.table is not None:
            pos = pos + emb.table[:n_tok]
        self.pos = pos
        self.y0 = emb.word[self.base] + pos
        if heads is not None:
            self.heads = heads
            return
        self.heads = []
        for h in model.layers[0].heads:
            beta = h.temperature(n_tok)
            q, k, v = self.y0 @ h.w_q.T, self.y0 @ h.w_k.T, self.y0 @ h.w_v.T
            m = np.empty(n_tok)
            z = np.empty(n_tok)
            num = np.empty((n_tok, v.shape[1]))
            step = max(1, _CHUNK // n_tok)
            for a in range(0, n_tok, step):
                sc = beta * (q[a : a + step] @ k.T)
                mx = sc.max(axis=1)
                e = np.exp(sc - mx[:, None])
                m[a : a + step], z[a : a + step] = mx, e.sum(axis=1)
                num[a : a + step] = e @ v
            self.heads.append((h, beta, q, k, v, m, z, num))

    def _rows(self, pos: np.ndarray, tok: np.ndarray):
        """Per head: (new y0 rows, new q/k/v rows, m, z, num) of every softmax row."""
        bsz = len(pos)
        rows = np.arange(bsz)[:, None]
        y0p = self.model.embedding.word[tok] + self.pos[pos]  # (B, 2, d)
        out = []
        for h, beta, q, k, v, m, z, num in self.heads:
            kn, vn, qn = y0p @ h.w_k.T, y0p @ h.w_v.T, y0p @ h.w_q.T
            s_old = beta * np.einsum("nd,bcd->bnc", q, k[pos])
            s_new = beta * np.einsum("nd,bcd->bnc", q, kn)
            m2 = np.maximum(m[None], s_new.max(axis=2))
            scale = np.exp(m[None] - m2)
            e_old = np.exp(s_old - m2[..., None])
            e_new = np.exp(s_new - m2[..., None])
            z_base = z[None] * scale
            z2 = z_base - e_old.sum(axis=2) + e_new.sum(axis=2)
            num2 = num[None] * scale[..., None]
            num2 = num2 - np.einsum("bnc,bcd->bnd", e_old, v[pos])
            num2 = num2 + np.einsum("bnc,bcd->bnd", e_new, vn)
            redo = e_old.sum(axis=2) >= 0.5 * z_base
            redo[rows, pos] = True
            for b, r in zip(*np.nonzero(redo), strict=True):
                kb, vb = k.copy(), v.copy()
                kb[pos[b]] = kn[b]
                vb[pos[b]] = vn[b]
                hit = np.nonzero(pos[b] == r)[0]
                qr = qn[b, hit[0]] if len(hit) else q[r]
                sc = beta * (kb @ qr)
                mx = sc.max()
                e = np.exp(sc - mx)
                m2[b, r], z2[b, r], num2[b, r] = mx, e.sum(), e @ vb
            out.append((qn, kn, vn, m2, z2, num2))
        return y0p, out

    def moved(self, pos: np.ndarray, tok: np.ndarray) -> _FirstLayerCache:
        """The cache of the base with tokens ``tok`` (2,) at ``pos`` (2,)."""
        _, rows = self._rows(pos[None], tok[None])
        heads = []
        for (h, beta, q, k, v, _m, _z, _num), (qn, kn, vn, m2, z2, num2) in zip(
            self.heads, rows, strict=True
        ):
            q, k, v = q.copy(), k.copy(), v.copy()
            q[pos], k[pos], v[pos] = qn[0], kn[0], vn[0]
            heads.append((h, beta, q, k, v, m2[0], z2[0], num2[0]))
        base = self.base.copy()
        base[pos] = tok
        return _FirstLayerCache(self.model, base, heads)

    def final(self, pos: np.ndarray, tok: np.ndarray) -> np.ndarray:
        """y_r^{(L)} for B strings: base with tokens ``tok`` (B, 2) at ``pos`` (B, 2)
        (two distinct positions per string; a slot may keep the base token)."""
        model, n_tok = self.model, self.n_tok
        bsz = len(pos)
        y0p, rows = self._rows(pos, tok)
        y0 = np.broadcast_to(self.y0, (bsz, n_tok, model.d)).copy()
        y0[np.arange(bsz)[:, None], pos] = y0p
        att = np.zeros_like(y0)
        for (h, *_), (_qn, _kn, _vn, _m2, z2, num2) in zip(self.heads, rows, strict=True):
            att = att + (num2 / z2[..., None]) @ h.w_o.T
        layer = model.layers[0]
        u = y0 + att if layer.residual else att
        if layer.ffn is not None:
            f = layer.ffn
            ff = np.maximum(u @ f.w1.T + f.b1, 0.0) @ f.w2.T + f.b2
            y = u + ff if layer.residual else ff
        else:
            y = u
        r = model.readout.index(n_tok)
        if len(model.layers) == 1:
            return y[:, r]
        for li, lay in enumerate(model.layers[1:], start=1):
            if li == len(model.layers) - 1:
                return _layer(lay, y[:, r : r + 1], y, n_tok, [r])[:, 0]
            y = _layer(lay, y, y, n_tok)
        return y[:, r]  # pragma: no cover


def _incremental_ok(model: Model) -> bool:
    """Whether the first-layer cache pays off: ≥ 2 layers (a 1-layer model only needs
    the readout query, O(n·d) anyway) and a first layer of unmasked softmax heads, at
    least one with non-constant scores (constant-score heads are already O(n·d))."""
    if len(model.layers) < 2 or not model.layers[0].heads or model.extensions:
        return False
    first = model.layers[0].heads
    return all(h.kind is AttentionKind.SOFTMAX and h.mask.value == "none" for h in first) and any(
        np.any(h.w_q) and np.any(h.w_k) for h in first
    )
