"""Attention over position classes with symbolic counts (trusted; issue 40).

Keys come in *classes* (:mod:`.classes`): a class has a number of positions in
[lo, hi] (hi = ∞ allowed) and each of its positions carries one of the class's tokens,
chosen independently (the pattern's middle is free), except that the number of
positions carrying one symbol σ anywhere in the middle may be bounded (``a ≤ #σ ≤ b``).
Per query row r and key row k = (class, token): a score box [s_lo, s_hi] and an output
value box [v_lo, v_hi] (ṽ = W_O W_V u, per output coordinate).

**Softmax** (:func:`softmax_range`). The output o_d = Σ_k e^{s_k} v_kd / Σ_k e^{s_k} is
≤ t exactly when F(t) = Σ_k e^{s_k}(v_kd − t) ≤ 0 (Dinkelbach). Every admissible
configuration — counts, tokens, scores and values in their boxes — satisfies
F(t) ≤ U(t) with

    U(t) = Σ_classes c  max_{n_c ∈ [lo_c, hi_c]} n_c · max_τ (g_{c,τ}(t) − λ_{σ(τ)})
           + max(λ_σ·a, λ_σ·b),
    g(t) = e^{s_hi}(v_hi − t) if v_hi ≥ t, else e^{s_lo}(v_hi − t),

for every multiplier λ (weak duality for the symbol count a ≤ #σ ≤ b; λ = 0 without a
bound); n_c·G is largest at hi_c when G > 0 (U = ∞ when hi_c = ∞) and at lo_c when
G ≤ 0. So U(t) ≤ 0 proves o_d ≤ t. The checker evaluates U with outward rounding
(every e^x in :func:`attncert.kernel.core.bounds.exp_le0_fine` after a shift by the row's
largest score, every product and sum rounded up) at a t found by Dinkelbach steps and
bisection — how t is found is not part of the proof, only U(t) ≤ 0 is. The lower bound
is the same rule on −v. Counts ≥ 1 for classes the query certainly sees; a query's own
class under a causal mask is seen from 1 position to all of it.

**Hard attention** (:func:`hard_range`): the attended key maximizes the score; its score is
at least L = the largest s_lo over the classes certainly present (counts ≥ 1, every token
of the class), so only keys with s_hi ≥ L can be attended, and the output lies in the hull
of their values — for any counts, so also over an infinite interval of lengths.

**A dominant key over every length from N₁ on** (:func:`dominant_range`), for a head
whose inverse temperature β(N) = κ·log N grows without bound (Yang et al.'s scaling): if
one single-position key r (the *reference*) has a dot product q·k at least δ_k > 0 above
every other key k's, then e^{s_k − s_r} ≤ N^{−κδ_k}; a class of at most N − c positions
then weighs at most W = sup_{N ≥ N₁} (N − c)·N^{−κδ} relative to r (finite iff κδ ≥ 1;
the supremum is at N₁ or at the stationary point c·κδ/(κδ − 1), taken in arb), a single
position at most N₁^{−κδ}. Then o_d ≤ t when (v_r,hi − t) + Σ_k W_k (v_k,hi − t)⁺ ≤ 0.
"""

from __future__ import annotations

import numpy as np
from flint import arb, ctx

from attncert.kernel.core import bounds as B

INF = np.inf
STEPS = 40  # bisection steps after the Dinkelbach guess (how t is found; not trusted)


def _exp_shift(x_lo, x_hi):
    """[e^{x_lo}, e^{x_hi}] for x ≤ 0 (arrays), to about 2⁻⁴⁸ relative; −∞ gives 0."""
    lo = np.where(np.isneginf(x_lo), -1e300, x_lo)
    hi = np.where(np.isneginf(x_hi), -1e300, x_hi)
    e_lo, e_hi = B.exp_le0_fine(np.minimum(lo, 0.0), np.minimum(hi, 0.0))
    return e_lo, e_hi


def _upper_terms(e_lo, e_hi, v_hi, t):
    """g(t) rounded up: e^{s_hi}(v_hi − t) where v_hi ≥ t, e^{s_lo}(v_hi − t) elsewhere
    (the e factors already shifted; arrays broadcast to (R, K, D))."""
    diff = B.up(v_hi - t)
    pos = diff >= 0
    return np.where(pos, B.up(e_hi * diff), B.up(e_lo * diff))


def _u_of_t(e_lo, e_hi, v_hi, t, cls, cnt_lo, cnt_hi, lam, sym, count_ab):
    """U(t) rounded up, per (row, coordinate): see the module docstring. ``cls`` (K,) the
    class of each key row; ``cnt_lo``/``cnt_hi`` (R, C) the visible counts (hi inf);
    ``lam`` (R, D) the multiplier of the constrained symbol, ``sym`` (K,) True for key rows
    carrying it, ``count_ab`` its (a, b) (b inf) or None."""
    g = _upper_terms(e_lo[:, :, None], e_hi[:, :, None], v_hi[None], t[:, None, :])
    if count_ab is not None:
        g = np.where(sym[None, :, None], B.up(g - lam[:, None, :]), g)
    n_cls = cnt_lo.shape[1]
    big = np.full((g.shape[0], n_cls, g.shape[2]), -INF)
    np.maximum.at(big, (slice(None), cls, slice(None)), g)  # G per class: max over tokens
    seen = cnt_hi > 0
    hi = cnt_hi[:, :, None]
    lo = cnt_lo[:, :, None]
    with np.errstate(invalid="ignore"):
        part = np.where(big > 0, B.up(hi * big), B.up(lo * big))
    part = np.where(seen[:, :, None] & np.isfinite(big), part, 0.0)
    part = np.where(seen[:, :, None] & (big > 0) & np.isinf(hi), INF, part)
    total = B.sum_up(part, axis=1)
    if count_ab is not None:
        a, b = count_ab
        with np.errstate(invalid="ignore"):
            extra = np.maximum(
                B.up(lam * a), np.where(np.isinf(b), np.where(lam > 0, INF, -INF), B.up(lam * b))
            )
        total = B.up(total + extra)
    return total


def softmax_range(s_lo, s_hi, v_lo, v_hi, cls, cnt_lo, cnt_hi, sym=None, count_ab=None):
    """(out_lo, out_hi), (R, D): the output of a softmax head at each query row over every
    admissible configuration (module docstring). ``s_lo``/``s_hi`` (R, K); ``v_lo``/``v_hi``
    (K, D); ``cls`` (K,) class of each key row; ``cnt_lo``/``cnt_hi`` (R, C) visible counts
    (0 for a class the row does not see); ``sym`` (K,) and ``count_ab`` a symbol-count
    bound that holds for the keys every row sees (None: none)."""
    up = _one_side(s_lo, s_hi, v_lo, v_hi, cls, cnt_lo, cnt_hi, sym, count_ab)
    dn = _one_side(s_lo, s_hi, -v_hi, -v_lo, cls, cnt_lo, cnt_hi, sym, count_ab)
    return -dn, up


def _one_side(s_lo, s_hi, v_lo, v_hi, cls, cnt_lo, cnt_hi, sym, count_ab):
    r_n = s_lo.shape[0]
    d_n = v_lo.shape[1]
    vis = cnt_hi[:, cls] > 0  # (R, K)
    shift = np.where(vis, s_hi, -INF).max(axis=1, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    e_lo, _ = _exp_shift(B.dn(s_lo - shift), B.dn(s_lo - shift))
    _, e_hi = _exp_shift(B.up(s_hi - shift), B.up(s_hi - shift))
    e_lo = np.where(vis, e_lo, 0.0)
    e_hi = np.where(vis, e_hi, 0.0)
    hull_hi = np.where(vis[:, :, None], v_hi[None], -INF).max(axis=1)  # (R, D)
    hull_lo = np.where(vis[:, :, None], v_lo[None], INF).min(axis=1)
    hull_hi = np.where(np.isfinite(hull_hi), hull_hi, 0.0)
    hull_lo = np.minimum(np.where(np.isfinite(hull_lo), hull_lo, 0.0), hull_hi)
    lam_cands = _multipliers(e_lo, e_hi, v_hi, cls, sym, count_ab, r_n, d_n)

    def upper(t):
        if lam_cands is None:
            return _u_of_t(e_lo, e_hi, v_hi, t, cls, cnt_lo, cnt_hi, None, sym, None)
        best = None
        for lam in lam_cands(t):
            u = _u_of_t(e_lo, e_hi, v_hi, t, cls, cnt_lo, cnt_hi, lam, sym, count_ab)
            best = u if best is None else np.minimum(best, u)
        return best

    # the hull's top is an upper bound (every term ≤ 0); the least t is searched below it:
    # a Dinkelbach guess, then steps up from it of growing size, then bisection for what is
    # left — how t is found is not part of the proof, U(t) ≤ 0 at the returned t is
    good = hull_hi.copy()
    t = _dinkelbach_guess(e_lo, e_hi, v_hi, cls, cnt_lo, cnt_hi, hull_lo, hull_hi)
    scale = np.maximum(np.maximum(np.abs(hull_lo), np.abs(hull_hi)), 1e-300)
    bad = np.minimum(t, good)
    for j in range(0, 64, 6):
        cand = np.minimum(t + np.ldexp(scale, j - 52), hull_hi)
        ok = upper(cand) <= 0
        good = np.where(ok & (cand < good), cand, good)
        if np.all(ok | (cand >= hull_hi)):
            break
    for _ in range(STEPS):
        open_ = good > bad
        if not np.any(open_):
            break
        mid = 0.5 * bad + 0.5 * good
        if not np.any(open_ & (mid < good) & (mid > bad)):
            break
        ok = upper(mid) <= 0
        good = np.where(ok & open_, np.minimum(good, mid), good)
        bad = np.where(~ok & open_, np.maximum(bad, mid), bad)
    # the proof: U(good) ≤ 0 at the returned bound (hull_hi satisfies it term by term)
    final = upper(good)
    return np.where(final <= 0, good, hull_hi)


def _dinkelbach_guess(e_lo, e_hi, v_hi, cls, cnt_lo, cnt_hi, hull_lo, hull_hi):
    """A starting t near the optimum: the ratio at the configuration that maximizes U at
    the hull's middle (floats, not trusted: only U(t) ≤ 0 of the final t is)."""
    t = 0.5 * hull_lo + 0.5 * hull_hi
    for _ in range(8):
        g_pos = v_hi[None] >= t[:, None, :]
        w = np.where(g_pos, e_hi[:, :, None], e_lo[:, :, None])  # (R, K, D)
        n_cls = cnt_lo.shape[1]
        score = w * (v_hi[None] - t[:, None, :])
        best = np.full((w.shape[0], n_cls, w.shape[2]), -INF)
        np.maximum.at(best, (slice(None), cls, slice(None)), score)
        pick = score >= best[:, cls, :]
        cnt = np.where(best > 0, cnt_hi[:, :, None], cnt_lo[:, :, None])[:, cls, :]
        cnt = np.where(np.isinf(cnt), 1e12, cnt)
        one = pick / np.maximum(pick.astype(float).sum(axis=1, keepdims=True), 1.0)
        num = (cnt * one * w * v_hi[None]).sum(axis=1)
        den = (cnt * one * w).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            new = np.where(den > 0, num / den, hull_hi)
        new = np.clip(np.nan_to_num(new, nan=0.0), hull_lo, hull_hi)
        if np.allclose(new, t, rtol=0, atol=0):
            break
        t = new
    return t


def _multipliers(e_lo, e_hi, v_hi, cls, sym, count_ab, r_n, d_n):
    """Candidate multipliers λ for a symbol-count bound (any λ is sound; these make the
    bound tight when one token of a class must give way to the bounded symbol): 0 and,
    per class, the gap between the bounded symbol's term and the best other token's."""
    if count_ab is None:
        return None

    def cands(t):
        g = _upper_terms(e_lo[:, :, None], e_hi[:, :, None], v_hi[None], t[:, None, :])
        n_cls = int(cls.max()) + 1 if len(cls) else 0
        on = np.full((g.shape[0], n_cls, g.shape[2]), -INF)
        off = np.full_like(on, -INF)
        np.maximum.at(on, (slice(None), cls[sym], slice(None)), g[:, sym, :])
        np.maximum.at(off, (slice(None), cls[~sym], slice(None)), g[:, ~sym, :])
        gaps = on - off  # (R, C, D)
        out = [np.zeros((r_n, d_n))]
        for c in range(n_cls):
            lam = np.nan_to_num(gaps[:, c, :], nan=0.0, posinf=0.0, neginf=0.0)
            out.append(lam)
        return out

    return cands


def hard_range(s_lo, s_hi, v_lo, v_hi, cls, cnt_lo, cnt_hi):
    """(out_lo, out_hi), (R, D): the hull of the values of every key that may attain the
    maximal score (module docstring); valid for unique, leftmost, rightmost and average
    hard attention and any counts."""
    vis = cnt_hi[:, cls] > 0
    present = cnt_lo > 0  # (R, C): the class has a position the row certainly sees
    n_cls = cnt_lo.shape[1]
    worst = np.full((s_lo.shape[0], n_cls), INF)
    np.minimum.at(worst, (slice(None), cls), s_lo)  # min over the class's tokens
    floor = np.where(present, worst, -INF).max(axis=1, keepdims=True)
    cand = vis & (s_hi >= floor)
    hi = np.where(cand[:, :, None], v_hi[None], -INF).max(axis=1)
    lo = np.where(cand[:, :, None], v_lo[None], INF).min(axis=1)
    return lo, hi


def class_weight_bound(s: arb, n1: int, c: int, single: bool) -> arb | None:
    """sup over N ≥ N₁ of (N − c)·N^{−s} (``single``: of N^{−s}) as an arb upper bound, or
    None when no finite bound is certain (s ≤ 0 for one key, s < 1 for a class)."""
    if single:
        return arb(n1) ** (-s) if s > 0 else None
    if not s >= 1:
        return None
    if not s > 1:  # s = 1: (N − c)/N < 1
        return arb(1)
    # f(N) = (N − c)·N^{−s} rises up to N = c·s/(s − 1) and falls after it
    best = (arb(n1) - c) * arb(n1) ** (-s)
    stationary = arb(c) * s / (s - 1)
    if not stationary < n1:
        best = arb(max(best.upper(), ((stationary - c) * stationary ** (-s)).upper()))
    return arb(best.upper())


def dominant_range(
    sig_lo, sig_hi, v_lo, v_hi, cls, cnt_lo, cnt_hi, kappa: float, n1: int, c_pos: int
):
    """(out_lo, out_hi) for a head with β(N) = κ·log N over every N ≥ N₁, or None for the
    rows where no single-position key dominates every other by δ with κδ ≥ 1 (module
    docstring). ``sig_*`` are the dot products q·k (before β); ``c_pos`` bounds a class's
    size by N − c_pos."""
    r_n, k_n = sig_lo.shape
    vis = cnt_hi[:, cls] > 0
    single = (cnt_lo[:, cls] == 1) & (cnt_hi[:, cls] == 1)  # (R, K): one position
    lo_out = np.full((r_n, v_lo.shape[1]), np.nan)
    hi_out = np.full_like(lo_out, np.nan)
    old = ctx.prec
    ctx.prec = 128
    try:
        for r in range(r_n):
            cand = np.where(vis[r] & single[r], sig_lo[r], -INF)
            ref = int(np.argmax(cand))
            if not np.isfinite(cand[ref]):
                continue
            # the reference's class must hold exactly one token (a fixed symbol)
            same_cls = cls == cls[ref]
            if (vis[r] & same_cls).sum() != 1:
                continue
            weights = np.zeros(k_n)
            ok = True
            for k in range(k_n):
                if not vis[r, k] or k == ref:
                    continue
                delta = B.dn(sig_lo[r, ref] - sig_hi[r, k])
                if not delta > 0:
                    ok = False
                    break
                w = class_weight_bound(
                    arb(kappa) * arb(float(delta)), n1, c_pos, bool(single[r, k])
                )
                if w is None:
                    ok = False
                    break
                weights[k] = B.ball(w)[1]
            if not ok:
                continue
            hi_out[r] = _dominant_side(v_hi[ref], v_hi, weights)
            lo_out[r] = -_dominant_side(-v_lo[ref], -v_lo, weights)
    finally:
        ctx.prec = old
    return lo_out, hi_out


def _dominant_side(v_ref, v_hi, weights):
    """The least t (per coordinate) with (v_ref − t) + Σ_k W_k (v_k − t)⁺ ≤ 0, rounded up:
    the function is decreasing and piecewise linear in t; bisection, then the proof."""
    lo = np.minimum(v_ref, v_hi.min(axis=0))
    hi = np.maximum(v_ref, v_hi.max(axis=0))

    def f(t):
        return B.up(
            B.up(v_ref - t)
            + B.sum_up(B.up(weights[:, None] * np.maximum(B.up(v_hi - t), 0.0)), axis=0)
        )

    good, bad = hi.copy(), lo.copy()
    for _ in range(STEPS):
        mid = 0.5 * good + 0.5 * bad
        ok = f(mid) <= 0
        good = np.where(ok, np.minimum(good, mid), good)
        bad = np.where(ok, bad, np.maximum(bad, mid))
    return np.where(f(good) <= 0, good, hi)
