"""Rigorous logits of a softmax model on a batch of strings (trusted; issues 22, 42).

:func:`logit_bounds` encloses the accept logit z = w·r + b of every string of a batch in
an interval [lo, hi] with float64 arithmetic and rigorous error bounds, vectorized over
the batch; :func:`decisions` decides every string's sign from them, and by the arb
forward pass (:func:`attncert.kernel.soft.checker.decide`, 53 → 4096 bits) for the few
strings whose interval holds 0. It is how the verifier's *exhaustive* cubes — cubes whose
every completion is evaluated — are decided (:mod:`attncert.kernel.verify.checker`).

Every step is an enclosure, with u = 2⁻⁵³ and γ_k = 1.01·k·u (Higham §3.1: a length-k
dot product in any order, with or without FMA, errs by ≤ γ_k Σ|a_i b_i|):

* position-wise maps (embedding, LayerNorm/RMSNorm, FFN, GELU/tanh-GELU/SiLU/ReLU, the
  projections, the readout) by :mod:`attncert.arith.enclose` (midpoint and radius per
  coordinate, Taylor tables computed in arb);
* attention, for every head of a layer at once (:func:`attend`), with one radius per
  query, key and value row (the largest of its coordinates'; RoPE rotates them with the
  arb cos and sin, :func:`_rotate`). Each score s̃_ij = fl(q̃_i·k̃_j) is within
  E_ij = r_k,j‖q̃_i‖₁ + r_q,i(‖k̃_j‖₁ + d_k·r_k,j) + γ_{d_k}Σ_l|q̃_il||k̃_jl| of the exact one
  (ALiBi's −m(i − j), rounded once and added, adds u(|m|N + |s̃_ij|)); with
  β(N) ∈ β̃ ± β_r and t̃_ij = fl(fl(β̃ s̃_ij) − top_i) (top_i the row's largest visible
  value, which cancels), the exponent is within η_ij = |β|E_ij + (β_r + 2u|β̃|)|s̃_ij| +
  u|t̃_ij| of the exact one. The weights' floats ê = e^t̃ come from the arb tables of
  :func:`attncert.kernel.core.bounds._tables` (:func:`_exp`): e^t̃ ∈ ê·[1 − ε, 1 + ε] for
  t̃ ≥ −64, ê = 0 below. With p̂ = ê/Σê and η_j ≤ 1/16 (so e^η ≤ 1 + 1.07η), the exact
  weights obey |p_j − p̂_j| ≤ p̂_j(1.07η_j + 1.07η̄ + 3ε + τ)/((1 − η̄)(1 − ε)) with
  η̄ = Σ p̂_j η_j and τ ≥ (the weight of the keys below e⁻⁶³)/Σê; so the head output
  y = Σ p_j v_j is within r_V + Σ_j |p_j − p̂_j||ṽ_j| + (4γ_N + 2u)Σ p̂_j|ṽ_j| of
  fl(Σ ê_j ṽ_j / Σ ê_j), coordinate by coordinate (r_V the largest value radius; the last
  term the float sums and division). A row where some η_j > 1/16, or a key below e⁻⁶⁴
  could reach e⁻⁶³, gets the hull 0 ± (max‖ṽ‖ + r_V); a query that sees no key outputs
  exactly 0. The heads' outputs, concatenated, go through one affine map with the
  stacked W_O and Σ b_O.

Every radius is computed in float64 from non-negative terms and inflated by
(1 + 2(k + 4)u) plus 2⁻¹⁰⁰⁰·k (:func:`_up`), which dominates its own k + 4 roundings and
any underflow. The last layer is evaluated at the readout row only (the logit reads no
other row), unless the readout is the mean of all rows. A string whose enclosure is not
finite (an overflow, a LayerNorm variance not separated from 0) gets [−∞, ∞] and is left
to arb.

Python::

    >>> import numpy as np
    >>> from attncert.model import zoo_model
    >>> from attncert.model.forward import forward
    >>> m = zoo_model("trained_parity")
    >>> lo, hi = logit_bounds(m, tokens(m, ["0110", "1110"]))
    >>> z = forward(m, ["0110", "1110"]).logits
    >>> bool(np.all((lo <= z) & (z <= hi)) and np.all(hi - lo < 1e-9))
    True
    >>> decisions(m, ["0110", "1110"]).tolist() == (z > 0).tolist()
    True
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from attncert.arith import enclose
from attncert.arith.field import Undecided as FieldUndecided
from attncert.arith.filter import Enclosed
from attncert.errors import UnsupportedError
from attncert.kernel.core import bounds as B
from attncert.kernel.soft.affine.bound import hard_head
from attncert.kernel.soft.affine.heads import beta_enclosure
from attncert.kernel.soft.checker import decide
from attncert.model.spec import Head, Layer, Model
from attncert.model.tokens import encode_batch

__implements__ = ("Hahn Theorem 6",)

U = 2.0**-53
TINY = 2.0**-1000
BATCH_CELLS = 1 << 17  # (strings · rows · columns) of the largest array of one block


def tokens(model: Model, strings: Sequence[str]) -> np.ndarray:
    """Token ids (B, N) of equal-length strings (BOS/EOS added)."""
    return encode_batch(model, strings)


def unsupported(model: Model) -> str | None:
    """None if :func:`logit_bounds` applies to ``model``, else why not."""
    hard = hard_head(model)
    return hard + " (the soft verifier bounds softmax heads)" if hard else None


def logit_bounds(model: Model, toks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] ∋ z(x) for every row x of the token array ``toks`` (B, N)."""
    why = unsupported(model)
    if why:
        raise UnsupportedError(why, expected="a softmax model")
    toks = np.asarray(toks, dtype=np.int64)
    b, n_tok = toks.shape
    widest = max([model.d] + [_width(layer, n_tok) for layer in model.layers])
    step = max(1, BATCH_CELLS // (n_tok * widest))
    lo, hi = np.empty(b), np.empty(b)
    for s in range(0, b, step):
        try:
            lo[s : s + step], hi[s : s + step] = _block(model, toks[s : s + step])
        except (B.Undecided, FieldUndecided):  # left to arb, string by string
            lo[s : s + step], hi[s : s + step] = -np.inf, np.inf
    bad = ~(np.isfinite(lo) & np.isfinite(hi))
    lo[bad], hi[bad] = -np.inf, np.inf
    return lo, hi


def decisions(model: Model, strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(accept, open): every string's decision z > 0 — from :func:`logit_bounds`, and
    from the arb forward pass where the interval holds 0 — and where even 4096 bits left
    the sign open (``accept`` is then False; a caller must not count it)."""
    strings = list(strings)
    lo, hi = logit_bounds(model, tokens(model, strings))
    accept = lo > 0
    undecided = np.zeros(len(strings), dtype=bool)
    for i in np.flatnonzero(~(lo > 0) & ~(hi <= 0)):
        prec, ball = decide(model, strings[i])
        if prec is None:
            undecided[i] = True
        else:
            accept[i] = bool(ball > 0)
    return accept, undecided


def _up(e: np.ndarray, k: int = 1) -> np.ndarray:
    """A non-negative bound computed with ≤ k + 4 roundings, made an upper bound."""
    return e * (1 + 2 * (k + 4) * U) + TINY * max(k, 1)


def _gamma(k: int) -> float:
    return 1.01 * k * U


# ----------------------------------------------------------------------------- attention


@dataclass(frozen=True, eq=False)
class _Stack:
    """Heads evaluated together: stacked W_Q, the distinct W_K/W_V (grouped-query
    attention imports equal copies), each head's index among them, stacked W_O."""

    heads: tuple[Head, ...]
    w_q: np.ndarray
    b_q: np.ndarray | None
    w_k: np.ndarray
    b_k: np.ndarray | None
    k_of: np.ndarray
    w_v: np.ndarray
    b_v: np.ndarray | None
    v_of: np.ndarray
    w_o: np.ndarray  # (d, H·d_v)
    b_o: Enclosed | None  # Σ_h b_O,h (rounded: its radius covers the float sum)


_STACKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _stacks(layer: Layer) -> list[_Stack]:
    """All heads in one stack when they share mask, rotary and widths; else one each."""
    if layer not in _STACKS:
        hs = list(layer.heads)
        same = all(
            h.mask is hs[0].mask
            and h.rotary == hs[0].rotary
            and h.w_q.shape == hs[0].w_q.shape
            and h.w_v.shape == hs[0].w_v.shape
            for h in hs
        )
        groups = [hs] if same and hs else [[h] for h in hs]
        _STACKS[layer] = [_stack(g) for g in groups]
    return _STACKS[layer]


def _stack(heads: list[Head]) -> _Stack:
    def bias(hs, name):
        return (
            None
            if all(getattr(h, name) is None for h in hs)
            else np.concatenate([h.bias(name) for h in hs])
        )

    def distinct(w_name, b_name):
        firsts: list[Head] = []
        index = []
        for h in heads:
            g = next(
                (
                    i
                    for i, f in enumerate(firsts)
                    if np.array_equal(getattr(f, w_name), getattr(h, w_name))
                    and np.array_equal(f.bias(b_name), h.bias(b_name))
                ),
                len(firsts),
            )
            if g == len(firsts):
                firsts.append(h)
            index.append(g)
        w = np.concatenate([getattr(f, w_name) for f in firsts])
        return w, bias(firsts, b_name), np.array(index)

    w_k, b_k, k_of = distinct("w_k", "b_k")
    w_v, b_v, v_of = distinct("w_v", "b_v")
    b_o = None
    if any(h.b_o is not None for h in heads):
        terms = np.array([h.bias("b_o") for h in heads])
        b_o = Enclosed(
            terms.sum(axis=0)[None], _up(_gamma(len(heads)) * np.abs(terms).sum(axis=0), 1)[None]
        )
    return _Stack(
        tuple(heads),
        np.concatenate([h.w_q for h in heads]),
        bias(heads, "b_q"),
        w_k,
        b_k,
        k_of,
        w_v,
        b_v,
        v_of,
        np.concatenate([h.w_o for h in heads], axis=1),
        b_o,
    )


def _width(layer: Layer, n_tok: int) -> int:
    """The widest row of a layer's arrays (scores of every head, or the FFN)."""
    return max(len(layer.heads) * n_tok, layer.ffn.w1.shape[0] if layer.ffn else 0)


@cache
def _exp_table() -> tuple[np.ndarray, np.ndarray, float, float]:
    """(C, F, ε, e⁻⁶³ rounded up): C[a] ≤ e^{−a/64}, F[b] ≤ e^{−b/2¹⁶} from the arb tables,
    and ε with e^t ∈ ê·[1 − ε, 1 + ε] for ê = fl(fl(C·F)·fl(1 + δ + δ²/2)) (:func:`_exp`):
    the tables' largest hi/lo ratios (each ratio and the product rounded: 32u covers it),
    the Taylor remainder |δ³/6| ≤ 2⁻⁵⁰, and ê's own ≤ 6 roundings."""
    clo, chi, flo, fhi, _, _ = B._tables()
    rc, rf = float(np.max(chi / clo)), float(np.max(fhi / flo))
    eps = rc * rf * (1 + 32 * U) - 1 + 2.0**-50 + 32 * U
    return clo, flo, eps, float(chi[63 * 64])


def _exp(t: np.ndarray) -> np.ndarray:
    """ê for t ≤ 0 (±∞, NaN allowed): e^t ∈ ê·[1 − ε, 1 + ε] for −64 ≤ t ≤ 0, else ê = 0.

    k = ⌊−t·2¹⁶⌋ and δ = t + k·2⁻¹⁶ ∈ (−2⁻¹⁶, 0] are exact (a power-of-two scaling, and
    Sterbenz's lemma: −t and k·2⁻¹⁶ are within a factor 2 when k ≥ 1)."""
    c, f, _, _ = _exp_table()
    ok = (t >= -64.0) & (t <= 0.0)  # (+∞ from an overflow: a wild row, see attend)
    x = np.where(ok, t, 0.0)
    k = np.floor(x * -65536.0)
    delta = x + k * (1.0 / 65536.0)
    ki = k.astype(np.int64)
    e = (c[ki >> 10] * f[ki & 1023]) * (1.0 + (delta + 0.5 * (delta * delta)))
    return np.where(ok, e, 0.0)


def _rotate(rot, m: np.ndarray, rad: np.ndarray, positions: np.ndarray):
    """RoPE (rotate-half) on midpoints (b, P, G, d_k) with one radius per head row
    (b, P, G) at 0-based ``positions`` (P,), cos and sin from arb
    (:func:`attncert.arith.enclose.rotation_at`)."""
    cos, sin = enclose.rotation_at(rot, positions)
    h = rot.dim // 2
    c, s = cos.mid[:, None, :], sin.mid[:, None, :]
    x1, x2 = m[..., :h], m[..., h : rot.dim]
    out = m.copy()
    out[..., :h] = x1 * c - x2 * s
    out[..., h : rot.dim] = x2 * c + x1 * s
    cs = float(cos.rad.max(initial=0.0) + sin.rad.max(initial=0.0))
    return out, _up(2 * rad + np.abs(m).max(axis=-1) * (cs + 5 * U * (1 + cs)), 4)


@dataclass(frozen=True, eq=False)
class Rows:
    """Query, key or value rows of every head: midpoints (b, H, R, w) and one radius per
    row (b, H, R, 1) bounding every coordinate's error."""

    mid: np.ndarray
    rad: np.ndarray


def _heads(st: _Stack, uq: Enclosed, u: Enclosed, b: int, n_tok: int, q_pos) -> Enclosed:
    """Every head of the stack at the query positions ``q_pos`` of each string: their
    outputs before W_O, concatenated, rows (b·Q, H·d_v)."""
    heads, hd = st.heads, len(st.heads)
    n_q, d_k, d_v = len(q_pos), heads[0].w_q.shape[0], heads[0].w_v.shape[0]
    q = enclose.affine(uq, st.w_q, st.b_q)
    k = enclose.affine(u, st.w_k, st.b_k)
    v = enclose.affine(u, st.w_v, st.b_v)
    qm, qr = q.mid.reshape(b, n_q, hd, d_k), q.rad.reshape(b, n_q, hd, d_k).max(axis=-1)
    km, kr = k.mid.reshape(b, n_tok, -1, d_k), k.rad.reshape(b, n_tok, -1, d_k).max(axis=-1)
    rot = heads[0].rotary
    if rot is not None:
        qm, qr = _rotate(rot, qm, qr, q_pos)
        km, kr = _rotate(rot, km, kr, np.arange(n_tok))
    vm, vr = v.mid.reshape(b, n_tok, -1, d_v), v.rad.reshape(b, n_tok, -1, d_v).max(axis=-1)

    def rows(m, r, of=None):  # (b, R, G, w) → (b, H, R, w), each head's own projection
        if of is not None:
            m, r = m[:, :, of], r[:, :, of]
        return Rows(np.ascontiguousarray(m.transpose(0, 2, 1, 3)), r.transpose(0, 2, 1)[..., None])

    y, rad = attend(
        rows(qm, qr),
        rows(km, kr, st.k_of),
        rows(vm, vr, st.v_of),
        [beta_enclosure(h, n_tok) for h in heads],
        np.array([h.alibi or 0.0 for h in heads]),
        heads[0].mask.matrix(n_tok)[q_pos],
        np.asarray(q_pos),
    )
    mid = y.transpose(0, 2, 1, 3).reshape(b * n_q, hd * d_v)
    return Enclosed(mid, rad.transpose(0, 2, 1, 3).reshape(b * n_q, hd * d_v))


def attend(q: Rows, k: Rows, v: Rows, beta, slopes: np.ndarray, vis, q_pos):
    """Softmax attention of every head, enclosed (module docstring): for queries ``q``
    at positions ``q_pos`` (Q,), keys ``k`` and values ``v`` at positions 0 … N − 1,
    inverse temperatures β ∈ [lo, hi] per head, ALiBi ``slopes`` (H,) (0: none) and the
    visibility ``vis`` (Q, N): (midpoints, radii), both (b, H, Q, d_v), of the heads'
    outputs Σ_j p_j v_j (before W_O)."""
    d_k, n_tok = q.mid.shape[-1], k.mid.shape[2]
    s = q.mid @ k.mid.transpose(0, 1, 3, 2)  # (b, H, Q, N)
    # every score's error |q·k − s̃_ij| ≤ E_ij; float sums of |·| inflated
    aq, ak, gk = np.abs(q.mid), np.abs(k.mid), 1 + _gamma(d_k)
    q1 = aq.sum(axis=-1, keepdims=True) * gk  # (b, H, Q, 1)
    k1 = ak.sum(axis=-1)[:, :, None, :] * gk  # (b, H, 1, N)
    r_k = k.rad.transpose(0, 1, 3, 2)  # (b, H, 1, N)
    err = r_k * q1 + q.rad * (k1 + d_k * r_k) + _gamma(d_k) * gk * (aq @ ak.transpose(0, 1, 3, 2))
    if slopes.any():  # −m·(i − j), rounded once, then added
        dist = q_pos.astype(np.float64)[:, None] - np.arange(n_tok)[None, :]
        s += -slopes[:, None, None] * dist
        err += U * (np.abs(slopes)[:, None, None] * n_tok)
    # the exponent error η_ij ≥ |β·(q·k) − (fl(β̃ s̃_ij) − top_i)| (top_i cancels)
    b_mid = np.array([0.5 * lo + 0.5 * hi for lo, hi in beta])
    b_rad = np.array([max(hi - c, c - lo) for (lo, hi), c in zip(beta, b_mid, strict=True)])
    b_abs = np.array([max(abs(lo), abs(hi)) for lo, hi in beta])[:, None, None]
    b_mid = b_mid[:, None, None]
    per_s = b_abs * U + b_rad[:, None, None] * (1 + 4 * U) + 2 * U * np.abs(b_mid)
    z = s * b_mid
    if not vis.all():
        z = np.where(vis, z, -np.inf)
    top = z.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # a query that sees no key: all −∞
    t = z - top
    e = _exp(t)
    with np.errstate(invalid="ignore"):  # u|t̃|: the subtraction's rounding (∞ if masked)
        eta = _up(b_abs * err + per_s * np.abs(s) + U * np.abs(t), 8)
    with np.errstate(invalid="ignore"):  # the bound below does not apply to these rows
        wild = vis & np.where(t >= -64, ~(eta <= 1 / 16), ~(t + eta <= -63))
    eta = np.where(e > 0, eta, 0.0)
    den = e.sum(axis=-1, keepdims=True)
    ok = ~wild.any(axis=-1, keepdims=True) & (den > 0)
    av = np.abs(v.mid)
    r_v = v.rad.max(axis=2, keepdims=True)  # (b, H, 1, 1)
    big_v = av.max(axis=(2, 3), keepdims=True)  # (b, H, 1, 1)
    g = _gamma(n_tok)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = (e @ v.mid) / den
        # Σ p̂_j|ṽ_j|, Σ p̂_j η_j|ṽ_j|, Σ p̂_j η_j: float sums of non-negative terms, inflated
        p0 = (e @ av) / den * (1 + 3 * g)
        en = e * eta
        p1 = (en @ av) / den * (1 + 3 * g)
        eta_bar = en.sum(axis=-1, keepdims=True) / den * (1 + 3 * g)
        # τ ≥ the keys below e⁻⁶³ (at most N) over Σê
        _, _, eps, tail = _exp_table()
        tau = np.where(ok, n_tok * tail / (den * (1 - g - 4 * U)), 0.0)
    eta_bar = np.where(ok, eta_bar, 0.0)
    low = (1 - eta_bar) * (1 - eps) * (1 - 4 * U)  # ≤ Σ p̂_j e^{−η_j}(1 − ε)
    rad = (
        r_v
        + (1.07 * p1 + (1.07 * eta_bar + 3 * eps + tau) * p0 + tau * big_v) / low
        + (4 * g + 2 * U) * (1 + 2 * g) * p0
    )
    seen = vis.any(axis=1)[:, None]  # (Q, 1): the query sees a key (structural)
    rad = np.where(ok, rad, r_v + big_v)  # the hull: 0 ± (V + r_V)
    y = np.where(ok & seen, y, 0.0)
    rad = np.where(seen, _up(rad, 12), 0.0)  # a query that sees no key outputs exactly 0
    return y, rad


# ----------------------------------------------------------------------------- the pass


def _mean_rows(z: Enclosed, b: int, n_tok: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean of each string's ``n_tok`` consecutive rows of the (b·N, 1) enclosure
    ``z``: |Σ z − fl(Σ z̃)| ≤ Σ r + γ_N Σ|z̃|, then the division's rounding."""
    zm, zr = z.mid.reshape(b, n_tok), z.rad.reshape(b, n_tok)
    mid = zm.sum(axis=1) / n_tok
    err = (zr.sum(axis=1) + _gamma(n_tok) * np.abs(zm).sum(axis=1)) / n_tok + U * np.abs(mid)
    return mid, _up(err, n_tok + 2)


def _block(model: Model, toks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    b, n_tok = toks.shape
    x = enclose.embed(model, toks.ravel(), np.tile(np.arange(n_tok), b), n_tok)
    r = model.readout
    every = np.arange(n_tok)
    for li, layer in enumerate(model.layers):
        last = li == len(model.layers) - 1 and not r.pooled
        q_pos = np.array([r.index(n_tok)]) if last else every
        u = uq = enclose.attention_inputs(model, li, x)
        if last:  # the logit reads the readout row only
            rows = np.arange(b) * n_tok + q_pos[0]
            x, uq = x.take(rows), u.take(rows)
        att = enclose.point(np.zeros_like(x.mid))
        for st in _stacks(layer):
            part = enclose.affine(_heads(st, uq, u, b, n_tok, q_pos), st.w_o)
            if st.b_o is not None:
                shape = part.mid.shape
                part = enclose.add(
                    part,
                    Enclosed(
                        np.broadcast_to(st.b_o.mid, shape), np.broadcast_to(st.b_o.rad, shape)
                    ),
                )
            att = enclose.add(att, part)
        x = enclose.finish_layer(model, li, x, att)
    if not model.layers and not r.pooled:
        x = x.take(np.arange(b) * n_tok + r.index(n_tok))
    z = enclose.readout_terms(model, x)
    mid, rad = _mean_rows(z, b, n_tok) if r.pooled else (z.mid[:, 0], z.rad[:, 0])
    bias = float(r.bias)
    lo = B.dn(B.dn(mid - rad) + bias)
    hi = B.up(B.up(mid + rad) + bias)
    return lo, hi
