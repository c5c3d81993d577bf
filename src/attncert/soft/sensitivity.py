"""Measured sensitivity: the largest effect of exchanging one input symbol (Lemma 5).

For input length n, the *sensitivity* is the maximum over strings x, positions i
(other than the readout position, as in Lemma 5's "i < n") and replacement
symbols σ′ of

* ``activation``: ‖y_r^{(L)}(x) − y_r^{(L)}(x′)‖₂ (r the readout position),
* ``logit``: |(w·y_r + b)(x) − (w·y_r + b)(x′)|,
* ``probability``: |σ(logit(x)) − σ(logit(x′))| (σ the logistic function),

with x′ = x[i := σ′].  :func:`exhaustive_sensitivity` enumerates every string
(small n, vectorized); :func:`search_sensitivity` is a hill-climbing search with
restarts over (x, i, σ′) for large n (untrusted: it finds a *lower* bound of the
maximum, i.e. a real witness pair).  :func:`sensitivity_profile` runs the right
one per n and fits the decay exponent of the maximum against n.

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.soft.sensitivity import sensitivity_profile
    >>> prof = sensitivity_profile(zoo_model("soft_parity"), [64, 256, 1024], seed=0)
    >>> -2.05 < prof.exponent < -1.95  # the gap of this model is 2/(n+2)²
    True

CLI: ``attncert sensitivity zoo:soft_parity --n 16,64,256,1024 --plot out.png``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from attncert.errors import InputError, ParameterError
from attncert.model.forward import embed, feed_forward, layer_norm
from attncert.model.positional import feature_matrix
from attncert.model.spec import AttentionKind, Mask, Model

__implements__ = ("Hahn Lemma 5",)

METRICS = ("logit", "activation", "probability")
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
    in memory. Every version-2 feature (masks, LayerNorm, GELU, biases) is supported."""
    tokens = np.asarray(tokens, dtype=np.int64)
    n_tok = tokens.shape[1]
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


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Witness:
    """A pair x, x′ = x[i := σ′] (i 1-based input position) and its changes."""

    x: str
    position: int
    symbol: str
    activation: float
    logit: float
    probability: float

    @property
    def x_prime(self) -> str:
        return self.x[: self.position - 1] + self.symbol + self.x[self.position :]


@dataclass(frozen=True)
class SensitivityResult:
    """The largest change found at one n, and how it was found."""

    n: int
    metric: str
    value: float
    witness: Witness
    method: str  # "exhaustive" or "search"
    evaluations: int
    seconds: float


@dataclass(frozen=True)
class SensitivityProfile:
    """Results over several n and the least-squares slope of log value vs log n."""

    model_name: str
    metric: str
    results: tuple[SensitivityResult, ...]
    exponent: float
    bounds: tuple[float, ...] = field(default=())  # log10 of Lemma 5 bounds (if computed)


def _positions(model: Model, n: int) -> list[int]:
    """0-based input positions that may be exchanged (not the readout token; every one
    for a mean readout)."""
    off = model.input_offset()
    if model.readout.pooled:
        return list(range(n))
    r = model.readout.index(model.n_tokens(n))
    return [p for p in range(n) if p + off != r]


def _tokens(model: Model, xs: np.ndarray) -> np.ndarray:
    """(B, n) symbol indices into alphabet → (B, N) token ids with BOS/EOS."""
    ids = np.array([model.token_index[s] for s in model.alphabet], dtype=np.int64)[xs]
    parts = []
    if model.bos is not None:
        parts.append(np.full((len(xs), 1), model.token_index[model.bos]))
    parts.append(ids)
    if model.eos is not None:
        parts.append(np.full((len(xs), 1), model.token_index[model.eos]))
    return np.concatenate(parts, axis=1)


def _batched_final(model: Model, xs: np.ndarray) -> np.ndarray:
    n_tok = model.n_tokens(xs.shape[1])
    per = max(1, _CHUNK // max(1, n_tok * max(1, n_tok)))
    out = [final_activation(model, _tokens(model, xs[s : s + per])) for s in range(0, len(xs), per)]
    return np.concatenate(out) if out else np.zeros((0, model.d))


def _witness(
    model: Model, x: np.ndarray, pos: int, sym: int, fa: np.ndarray, fb: np.ndarray
) -> Witness:
    alpha = model.alphabet
    ch = {m: float(_change(model, fa[None], fb[None], m)[0]) for m in METRICS}
    return Witness("".join(alpha[v] for v in x), pos + 1, alpha[sym], **ch)


def exhaustive_sensitivity(model: Model, n: int, metric: str = "logit") -> SensitivityResult:
    """The exact maximum over all |Σ|^n strings, positions and replacements (small n)."""
    _check_metric(metric)
    k = len(model.alphabet)
    total = k**n
    if total > 1 << 20:
        raise ParameterError(f"{total} strings for n = {n}", where="n", expected="|Σ|^n ≤ 2^20")
    t0 = time.perf_counter()
    idx = np.arange(total)
    digits = (idx[:, None] // (k ** np.arange(n)[None, :])) % k  # digit p = symbol at p
    acts = _batched_final(model, digits)
    mets = _metrics(model, acts)
    best = (-1.0, 0, 0, 0)
    for p in _positions(model, n):
        for shift in range(1, k):
            other_digit = (digits[:, p] + shift) % k
            other = idx + (other_digit - digits[:, p]) * k**p
            if metric == "activation":
                diff = np.linalg.norm(acts - acts[other], axis=-1)
            else:
                diff = np.abs(mets[metric] - mets[metric][other])
            j = int(np.argmax(diff))
            if diff[j] > best[0]:
                best = (float(diff[j]), j, p, int(other_digit[j]))
    value, j, p, sym = best
    other = j + (sym - digits[j, p]) * k**p
    w = _witness(model, digits[j], p, sym, acts[j], acts[other])
    return SensitivityResult(n, metric, value, w, "exhaustive", total, time.perf_counter() - t0)


def search_sensitivity(
    model: Model,
    n: int,
    metric: str = "logit",
    *,
    seed: int = 0,
    restarts: int = 8,
    candidates: int = 32,
    max_steps: int = 200,
    time_budget: float | None = None,
) -> SensitivityResult:
    """Hill-climbing over (x, i, σ′) with restarts (untrusted; returns a real witness).

    Starts: all-σ strings, the alternating string, and random strings, with the
    exchanged position at the start, middle and random places.  A step evaluates
    ``candidates`` random moves (or every move when n·|Σ| is small) — change a
    context symbol x_j (j ≠ i), move i, change σ′ — in one batch and takes the best
    strict improvement; a restart ends when no sampled move improves twice in a row
    (every move, for small n) or after ``max_steps``.
    """
    _check_metric(metric)
    rng = np.random.default_rng(seed)
    k = len(model.alphabet)
    positions = np.array(_positions(model, n))
    if len(positions) == 0:
        raise ParameterError(f"no exchangeable position for n = {n}", where="n")
    t0 = time.perf_counter()
    evals = 0
    full = n * k <= 4 * candidates  # small n: enumerate the whole neighbourhood

    def value_of(xs: np.ndarray, ps: np.ndarray, ss: np.ndarray) -> tuple[np.ndarray, ...]:
        nonlocal evals
        xp = xs.copy()
        xp[np.arange(len(xs)), ps] = ss
        both = _batched_final(model, np.concatenate([xs, xp]))
        evals += 2 * len(xs)
        a, b = both[: len(xs)], both[len(xs) :]
        return _change(model, a, b, metric), a, b

    starts: list[tuple] = []
    mid = int(positions[len(positions) // 2])
    if not full:  # the best pairs of two structured families come first
        extra = max(2, restarts // 2)
        starts += _family_starts(model, n, positions, value_of, count=extra)
        starts += _boundary_starts(model, n, positions, value_of, rng, count=extra)
    for s in range(k):
        starts.append((np.full(n, s), int(positions[0])))
        starts.append((np.full(n, s), mid))
    starts.append((np.arange(n) % k, mid))
    while len(starts) < restarts + 2 * k + 1 + (0 if full else 2 * max(2, restarts // 2)):
        starts.append((rng.integers(0, k, n), int(rng.choice(positions))))

    use_inc = not full and _incremental_ok(model) and n >= 128
    off = model.input_offset()

    sym_tok = np.array([model.token_index[c] for c in model.alphabet])

    def encode_moves(x: np.ndarray, moves: list):
        """Each move as two strings (A = y, B = y[q := sq]), each the base x with
        two (distinct) token slots replaced."""
        pos_a, tok_a, pos_b, tok_b = [], [], [], []
        for y, q, sq in moves:
            diff = np.nonzero(y != x)[0]
            j = int(diff[0]) if len(diff) else (q + 1) % n
            j2 = (j + 1) % n
            pos_a.append((j + off, j2 + off))
            tok_a.append((sym_tok[y[j]], sym_tok[y[j2]]))
            yb = y.copy()
            yb[q] = sq
            jb = j if j != q else (q + 1) % n
            pos_b.append((jb + off, q + off))
            tok_b.append((sym_tok[yb[jb]], sym_tok[yb[q]]))
        return (np.array(pos_a), np.array(tok_a), np.array(pos_b), np.array(tok_b))

    def value_inc(cache: _FirstLayerCache, x: np.ndarray, moves: list) -> np.ndarray:
        nonlocal evals
        pa, ta, pb, tb = encode_moves(x, moves)
        fa, fb = cache.final(pa, ta), cache.final(pb, tb)
        evals += 2 * len(moves)
        return _change(model, fa, fb, metric)

    best = None
    starts = [
        (st[0], st[1], int(st[2]) if len(st) > 2 else int((st[0][st[1]] + 1) % k)) for st in starts
    ]
    if time_budget is not None and not full:
        # the most promising starts first, each with a share of the budget
        first = np.array(
            [value_of(np.array([x]), np.array([p]), np.array([s]))[0][0] for x, p, s in starts]
        )
        starts = [starts[j] for j in np.argsort(-first, kind="stable")]
    share = None if time_budget is None else time_budget / min(len(starts), 4)
    for start in starts:
        if time_budget is not None and time.perf_counter() - t0 > time_budget and best is not None:
            break
        x, p, s = start[0].copy(), start[1], start[2]
        cur, fa, fb = value_of(x[None], np.array([p]), np.array([s]))
        cur_v = float(cur[0])
        cache = _FirstLayerCache(model, _tokens(model, x[None])[0]) if use_inc else None
        stale = 0
        t_start = time.perf_counter()
        for _ in range(max_steps):
            now = time.perf_counter()
            if time_budget is not None and (now - t0 > time_budget or now - t_start > share):
                break
            moves = _moves(rng, n, k, x, p, s, positions, None if full else candidates)
            if use_inc:
                vals = value_inc(cache, x, moves)
            else:
                xs = np.array([m[0] for m in moves])
                ps = np.array([m[1] for m in moves])
                ss = np.array([m[2] for m in moves])
                vals, a, b = value_of(xs, ps, ss)
            j = int(np.argmax(vals))
            if vals[j] > cur_v:
                y, q, sq = moves[j]
                if use_inc:
                    diff = np.nonzero(y != x)[0]
                    if len(diff):
                        jj = int(diff[0])
                        jn = (jj + 1) % n
                        cache = cache.moved(
                            np.array([jj + off, jn + off]),
                            np.array([sym_tok[y[jj]], sym_tok[y[jn]]]),
                        )
                else:
                    fa, fb = a[j : j + 1], b[j : j + 1]
                x, p, s, cur_v = np.array(y), int(q), int(sq), float(vals[j])
                stale = 0
            else:
                stale += 1
                if full or stale >= 2:
                    break
        if use_inc:  # the reported value comes from the reference evaluator
            cur, fa, fb = value_of(x[None], np.array([p]), np.array([s]))
            cur_v = float(cur[0])
        if best is None or cur_v > best[0]:
            best = (cur_v, x.copy(), p, s, fa[0], fb[0])
    value, x, p, s, fa, fb = best
    w = _witness(model, x, p, s, fa, fb)
    return SensitivityResult(n, metric, value, w, "search", evals, time.perf_counter() - t0)


def _family_starts(model: Model, n: int, positions, value_of, count: int, grid: int = 12):
    """Starts from the family "background σ, one special τ at position p, exchanged to τ′"
    (every readout symbol), scanned on a grid of p: where one key can win the softmax
    this family holds the largest changes. Returns the ``count`` best as (x, p, τ′)."""
    k = len(model.alphabet)
    ps = np.unique(positions[np.linspace(0, len(positions) - 1, grid).astype(int)])
    off = model.input_offset()
    r = None if model.readout.pooled else model.readout.index(model.n_tokens(n)) - off
    lasts = range(k) if r is not None and 0 <= r < n else [None]
    xs, pp, ss = [], [], []
    for bg in range(k):
        for last in lasts:
            for tau in range(k):
                for tau2 in range(k):
                    if tau2 == tau:
                        continue
                    for p in ps:
                        x = np.full(n, bg)
                        if last is not None:
                            x[r] = last
                        x[p] = tau
                        xs.append(x)
                        pp.append(int(p))
                        ss.append(tau2)
    vals = []
    for s in range(0, len(xs), 256):
        vals.append(
            value_of(
                np.array(xs[s : s + 256]), np.array(pp[s : s + 256]), np.array(ss[s : s + 256])
            )[0]
        )
    order = np.argsort(-np.concatenate(vals))[:count]
    return [(xs[j], pp[j], ss[j]) for j in order]


def _boundary_starts(model: Model, n: int, positions, value_of, rng, count: int, samples=96):
    """Starts near a decision boundary, where one change can flip the decision: the
    half-and-half strings σ^{n/2}τ^{n/2} (balanced counts, nested brackets) and random
    strings of varied symbol densities, each with its middle position exchanged, ranked
    by that change."""
    k = len(model.alphabet)
    xs = []
    for a in range(k):
        for b in range(k):
            if a != b:
                x = np.full(n, a)
                x[n // 2 :] = b
                xs.append(x)
    for _ in range(samples):
        xs.append(rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 0.5))))
    xs = np.array(xs)
    mid = int(positions[len(positions) // 2])
    ss = (xs[:, mid] + 1) % k
    vals = np.concatenate(
        [
            value_of(xs[s : s + 64], np.full(len(xs[s : s + 64]), mid), ss[s : s + 64])[0]
            for s in range(0, len(xs), 64)
        ]
    )
    order = np.argsort(-vals)[:count]
    return [(xs[j], mid, int(ss[j])) for j in order]


def _moves(rng, n, k, x, p, s, positions, count):
    """Neighbours of (x, i=p, σ′=s): all of them if ``count`` is None, else a sample."""
    out = []
    if count is None:
        for j in range(n):
            if j == p:
                continue
            for d in range(1, k):
                y = x.copy()
                y[j] = (y[j] + d) % k
                out.append((y, p, s))
        for q in positions:
            if q != p:
                for d in range(1, k):
                    out.append((x, int(q), int((x[q] + d) % k)))
        for d in range(1, k):
            if (s + d) % k != x[p]:
                out.append((x, p, (s + d) % k))
        return out
    for _ in range(count):
        kind = rng.random()
        if kind < 0.7:
            j = int(rng.integers(0, n))
            if j == p:
                continue
            y = x.copy()
            y[j] = (y[j] + rng.integers(1, k)) % k if k > 1 else y[j]
            out.append((y, p, s))
        else:
            q = int(rng.choice(positions))
            out.append((x, q, int((x[q] + rng.integers(1, k)) % k)))
    if not out:
        q = int(rng.choice(positions))
        out.append((x, q, int((x[q] + 1) % k)))
    return out


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}", expected=", ".join(METRICS))


def fit_exponent(ns: Sequence[int], values: Sequence[float]) -> float:
    """Least-squares slope of log(value) against log(n) (NaN if < 2 positive values)."""
    pts = [(math.log(n), math.log(v)) for n, v in zip(ns, values, strict=True) if v > 0]
    if len(pts) < 2:
        return math.nan
    xs, ys = np.array(pts).T
    return float(np.polyfit(xs, ys, 1)[0])


def sensitivity_profile(
    model: Model,
    ns: Sequence[int],
    metric: str = "logit",
    *,
    seed: int = 0,
    exhaustive_max: int = 12,
    restarts: int = 8,
    candidates: int = 32,
    time_budget: float | None = None,
    progress: bool = False,
) -> SensitivityProfile:
    """Largest change per n (exhaustive when |Σ|^n ≤ 2^exhaustive_max, else search)
    and the fitted decay exponent."""
    results = []
    it = ns
    if progress:
        from tqdm import tqdm

        it = tqdm(ns, desc="sensitivity", unit="n", file=__import__("sys").stderr)
    for n in it:
        if n < 1:
            raise ParameterError(f"length n = {n}", where="n", expected="n ≥ 1")
        if len(model.alphabet) ** n <= 2**exhaustive_max:
            results.append(exhaustive_sensitivity(model, n, metric))
        else:
            results.append(
                search_sensitivity(
                    model,
                    n,
                    metric,
                    seed=seed,
                    restarts=restarts,
                    candidates=candidates,
                    time_budget=time_budget,
                )
            )
    exp = fit_exponent([r.n for r in results], [r.value for r in results])
    return SensitivityProfile(model.name, metric, tuple(results), exp)
