"""The logit's range over every completion of a restriction, by affine forms (trusted;
issue 15, Corollary 2's soft analogue).

:func:`restriction_range` bounds the accept logit of a softmax model over all completions
of a restriction ρ, keeping every activation as an affine form in the free positions'
choices (:mod:`attncert.kernel.affine`) instead of a box, so that correlations survive
LayerNorm, GELU and a second attention layer. It is the kernel's own code: the
restriction search (:mod:`attncert.soft.certified.restriction`) calls it to test a
candidate ρ, and :mod:`attncert.kernel.soft` calls it again, from the model and the
certificate alone, to re-derive the claim.

Rows are (token position, token): one per fixed position, one per symbol of a free one;
a row fixes its own token, so its forms depend on the other free positions only. The
steps and the facts they rest on:

* **layer 1, exactly separable** — for a query row, N = Σ_t e^{s_t − M}·v_t and
  D = Σ_t e^{s_t − M} are sums of one term per key position, each a function of that
  position's token alone: their forms are exact up to the enclosures of the scores, exp
  (arb tables) and values (:mod:`attncert.arith.enclose`);
* **later layers** — scores s = β·q·k of two forms: the bilinear term is bounded by the
  product of the deviations; the part of the scores' affine terms common to every key is
  subtracted first (softmax is shift invariant, so this is exact); e^{s} = e^{s₀}(1 + Δ +
  ρ(Δ)) with 0 ≤ ρ(Δ) = e^Δ − 1 − Δ ≤ ½Δ²·e^{max(Δ, 0)}; a free key position contributes
  its base row plus, per alternative o, the indicator x_{t,o} times the difference of the
  rows' centres (the rest of the difference is a remainder);
* **the ratio** — for any y₀ and D₀ > 0, y = N/D satisfies exactly
  y = y₀ + (N − y₀D)/D₀ − (y − y₀)(D − D₀)/D₀, so with δ ≥ |D − D₀|/D₀ the last term is at
  most δ·Y, Y = min(hull bound, |L − y₀|max/(1 − δ)) (y lies in the hull of the values);
  where the form is wider than the hull, the hull is kept;
* position-wise steps (LayerNorm, activations, affine maps) by :mod:`attncert.kernel.affine`.

Supported: softmax heads with any mask and constant-in-x temperature, pre- and post-norm
LayerNorm, final norm, ReLU/GELU/tanh-GELU, BOS/EOS, readouts at one position or by mean.
Layers after the first are computed for every row only when a later layer or a mean
readout needs them (:data:`BUDGET` bounds that work; beyond it the method is refused
with :class:`Unsupported`, and the box propagation of :mod:`attncert.kernel.soft_propagate`
still applies).

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.kernel.soft_affine import restriction_range
    >>> m = zoo_model("trained_parity")
    >>> base = "1" * 64
    >>> rho = "".join("*" if i % 8 == 3 else c for i, c in enumerate(base))
    >>> rng = restriction_range(m, rho, base)
    >>> rng.z_lo > 0          # every completion of ρ is accepted
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from flint import arb

from attncert.arith import enclose
from attncert.errors import InputError
from attncert.kernel import affine as A
from attncert.kernel import soft_bounds as B
from attncert.model.spec import AttentionKind, Model

__implements__ = ("Hahn Corollary 2",)

BUDGET = 4_000_000_000  # query rows · key rows · (columns + symbols) · d for one layer
_U = 2.0**-53
_TINY = 2.0**-1000


class Unsupported(ValueError):
    """The affine method does not apply to this model (or would take too long)."""


@dataclass(frozen=True, eq=False)
class Rows:
    """The rows of one restriction: token position and token of each row, the row that
    carries the base token at each position, and per free position (in column-group
    order) the rows of its alternatives."""

    n_tok: int
    pos: np.ndarray  # (R,)
    tok: np.ndarray  # (R,)
    base: np.ndarray  # (N,) row of the base token at each position
    free: np.ndarray  # (m,) free token positions
    alt: np.ndarray  # (m, A) rows of the alternatives of each free position
    group: np.ndarray  # (N,) column group of each position, −1 if fixed

    @property
    def m(self) -> int:
        return len(self.free)

    @property
    def a(self) -> int:
        return self.alt.shape[1]


@dataclass(frozen=True)
class AffineRange:
    """The certified logit range [z_lo, z_hi] over every completion of ``rho``, per readout
    row (one per allowed token of the readout position), and where forms fell back to
    boxes (a diagnosis: many boxes mean the linearization did not hold)."""

    rho: str
    base: str
    z_lo: float
    z_hi: float
    per_row: tuple[tuple[float, float], ...]
    boxed: int  # entries of attention outputs kept as hull boxes

    @property
    def decision(self) -> bool | None:
        if self.z_lo > 0:
            return True
        if self.z_hi < 0:
            return False
        return None


def make_rows(model: Model, rho: str, base: str) -> Rows:
    """Rows of ``rho`` against the completion ``base`` (validated)."""
    if len(base) != len(rho):
        raise InputError(
            f"the base string has length {len(base)}, the restriction {len(rho)}",
            expected="a completion of ρ",
        )
    for p, (c, b) in enumerate(zip(rho, base, strict=True)):
        if c != "*" and c != b:
            raise InputError(
                f"base symbol {b!r} at position {p + 1} differs from ρ's {c!r}",
                expected="a completion of ρ",
            )
        if b not in model.token_index or b not in model.alphabet:
            raise InputError(f"base symbol {b!r} at position {p + 1}", expected="symbols of Σ")
    x0 = model.encode(base)
    off = model.input_offset()
    n_tok = len(x0)
    sym = [model.token_index[s] for s in model.alphabet]
    pos, tok, base_row, free, alt = [], [], [], [], []
    group = np.full(n_tok, -1, dtype=np.int64)
    for t in range(n_tok):
        is_free = off <= t < off + len(rho) and rho[t - off] == "*"
        base_row.append(len(pos))
        pos.append(t)
        tok.append(x0[t])
        if is_free:
            group[t] = len(free)
            free.append(t)
            others = []
            for o in sym:
                if o != x0[t]:
                    others.append(len(pos))
                    pos.append(t)
                    tok.append(o)
            alt.append(others)
    a = len(sym) - 1
    return Rows(
        n_tok,
        np.array(pos, dtype=np.int64),
        np.array(tok, dtype=np.int64),
        np.array(base_row, dtype=np.int64),
        np.array(free, dtype=np.int64),
        np.array(alt, dtype=np.int64).reshape(len(free), a),
        group,
    )


def _beta(head, n_tok: int) -> tuple[float, float]:
    t = head.temperature
    val = arb(float(t.coef)) * arb(n_tok) ** arb(float(t.n_power))
    if t.log_power:
        val *= arb(n_tok).log() ** arb(float(t.log_power))
    return B.ball(val)


def _keys(rows: Rows, vis: np.ndarray, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For query row ``i``: the base rows of its visible positions (its own row at its own
    position), the column groups of the visible free positions other than its own, and
    their alternatives' rows."""
    j = rows.pos[i]
    kr = rows.base.copy()
    kr[j] = i
    kr = kr[vis]
    gvis = vis[rows.free] & (rows.free != j) if rows.m else np.zeros(0, dtype=bool)
    groups = np.flatnonzero(gvis)
    return kr, groups, rows.alt[groups]


def _ratio(n_f, d_f, hull_lo, hull_hi):
    """Forms of y = N/D for a batch of queries (module docstring, the ratio).

    ``n_f`` = (c (Q, k), G (Q, k, m, A), E (Q, k, e), r (Q, k)) bounds N, ``d_f`` = (c (Q,),
    G (Q, m, A), E (Q, e), r (Q,)) bounds D; the values lie in [hull_lo, hull_hi] (Q, k).
    Returns (c, G, E, r, err, boxed): E on the query rows' symbols, err (Q, k) the new
    private remainder, boxed the number of entries kept as hull boxes."""
    nc, ng, ne, nr = n_f
    dc, dg, de, dr = d_f
    if not np.all(dc > 0):
        raise B.Undecided("a softmax denominator is not certified positive")
    y0 = nc / dc[:, None]
    gl = (ng - y0[..., None, None] * dg[:, None]) / dc[:, None, None, None]
    el = (ne - y0[..., None] * de[:, None]) / dc[:, None, None]
    d_lo = B.dn(dc)[:, None]
    # rounding of y0 (one division) and of the coefficients (a product, a difference and
    # a division each), summed over the columns
    mass = B.up(
        B.up(A._gsum(ng) + A.edev(ne)) + B.up(np.abs(y0) * B.up(A._gsum(dg) + A.edev(de))[:, None])
    )
    rl = B.up(B.up(nr + B.up(np.abs(y0) * dr[:, None])) / d_lo)
    rl = B.up(B.up(rl + B.up(B.up(8 * _U * mass) / d_lo)) + B.up(2 * _U * np.abs(y0)))
    rl = B.up(rl + _TINY)
    dmax = B.up(B.up(B.up(A.gdev(dg) + A.edev(de)) + dr) / d_lo[:, 0])  # ≥ |D − D0|/D0
    lmax = B.up(B.up(A.gdev(gl) + A.edev(el)) + rl)
    hull = np.maximum(np.maximum(B.up(hull_hi - y0), B.up(y0 - hull_lo)), 0.0)
    y_dev = hull.copy()
    ok = dmax < 1.0
    if ok.any():
        bound = B.up(lmax / B.dn(1.0 - np.where(ok, dmax, 0.0))[:, None])
        y_dev = np.where(ok[:, None], np.minimum(y_dev, bound), y_dev)
    err = B.up(dmax[:, None] * y_dev)
    boxed = B.up(lmax + err) >= hull
    if boxed.any():
        gl = np.where(boxed[..., None, None], 0.0, gl)
        el = np.where(boxed[..., None], 0.0, el)
        rl = np.where(boxed, hull, rl)
        err = np.where(boxed, 0.0, err)
    B.finite(rl, err)
    return y0, gl, el, rl, err, int(boxed.sum())


def _flat_sum(x: np.ndarray, keep: int) -> np.ndarray:
    """Σ of non-negative ``x`` over its axes beyond the first ``keep`` (upper)."""
    if x.ndim == keep:
        return x
    flat = x.reshape(*x.shape[:keep], -1)
    if flat.shape[-1] == 0:
        return np.zeros(x.shape[:keep])
    return B.psum_up(flat, axis=-1)


def _sum_rows(c, g, e, rad):
    """Σ over the first axis of forms (c, G, E) with remainders ``rad``, the rounding of
    the float sums included (upper)."""
    k = c.shape[0]
    keep = c.ndim - 1
    cs, gs, es = c.sum(axis=0), g.sum(axis=0), e.sum(axis=0)
    mass = B.psum_up(np.abs(c), axis=0)
    if g.size:
        mass = B.up(mass + _flat_sum(B.psum_up(np.abs(g), axis=0), keep))
    if e.size:
        mass = B.up(mass + _flat_sum(B.psum_up(np.abs(e), axis=0), keep))
    r = B.up(B.psum_up(rad, axis=0) + B.up(B.g2(k) * mass))
    return cs, gs, es, r


def _mix(c, g, e, rem, kr, cols, brow, alt):
    """Σ over key positions of one term each (module docstring): the rows ``kr`` (the
    base rows, the query's own row at its position) with forms (c, g, e) and remainders
    ``rem``; for each visible free position other than the query's — column group
    ``cols[p]``, base row ``brow[p]``, alternatives' rows ``alt[p]`` — the indicator of
    each alternative times the difference of the centres goes into its column, and the
    rest of the difference (the coefficients' difference and the alternative's
    remainder, beyond the base row's remainder already counted) into the remainder."""
    cs, gs, es, rs = _sum_rows(c[kr], g[kr], e[kr], rem[kr])
    if len(cols) == 0:
        return cs, gs, es, rs
    worst = None
    xbar = 1.0 / (alt.shape[1] + 1)  # exact for |Σ| a power of two; else in the rounding
    shift = 0.0
    for o in range(alt.shape[1]):
        a = alt[:, o]
        diff = c[a] - c[brow]
        # [x_t = o]·diff = (x_{t,o} − x̄)·diff + x̄·diff: a column and a share of the centre
        gs[..., cols, o] += np.moveaxis(diff, 0, -1)
        shift = shift + diff.sum(axis=0) * xbar
        spread = B.up(A.gdev(g[a] - g[brow]) + A.edev(e[a] - e[brow]))
        here = B.up(B.up(spread + rem[a]) + B.up(2 * _U * np.abs(diff)))
        worst = here if worst is None else np.maximum(worst, here)
    extra = np.maximum(B.up(worst - rem[brow]), 0.0)
    # rounding of the centre's share x̄·Σ diff: ≤ g2(m·A + 2)·Σ|diff|
    gaps = np.abs(c[alt] - c[brow][:, None])
    gaps = gaps.reshape(-1, *gaps.shape[2:])
    rnd = B.up(B.g2(gaps.shape[0] + 2) * B.psum_up(gaps, axis=0))
    return cs + shift, gs, es, B.up(B.up(rs + B.psum_up(extra, axis=0)) + rnd)


BLOCK = 32  # query rows of layer 1 handled at once


def _first_block(rows: Rows, qs: np.ndarray, vis_all, scores, ov_lo, ov_hi):
    """Layer 1 for the query rows ``qs`` of one head: N and D are sums of one term per
    visible key position, each a function of that position's token (module docstring),
    so their forms are the base rows' sum plus, per alternative, the difference of the
    enclosures' centres; the radii are remainders."""
    m, a = rows.m, rows.a
    n_rows = len(rows.pos)
    own = rows.pos[qs]  # (Q,)
    vis = vis_all[own]  # (Q, N) visible positions
    is_base = np.zeros(n_rows, dtype=bool)
    is_base[rows.base] = True
    vis_rows = vis[:, rows.pos]  # (Q, R)
    at_own = rows.pos[None, :] == own[:, None]
    base_term = vis_rows & is_base[None] & ~at_own
    base_term[np.arange(len(qs)), qs] = vis[np.arange(len(qs)), own]  # the query's own row
    gmask = (
        (vis[:, rows.free] & (rows.free[None] != own[:, None]))
        if m
        else np.zeros((len(qs), 0), dtype=bool)
    )
    alt_term = np.zeros_like(base_term)
    if m:
        alt_term[:, rows.alt.ravel()] = np.repeat(gmask, a, axis=1)
    used = base_term | alt_term
    s_lo, s_hi = scores
    top = np.where(used, s_hi, -np.inf).max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e_lo, e_hi = B.exp_le0_fine(B.dn(s_lo - top), np.minimum(B.up(s_hi - top), 0.0))
    e_lo, e_hi = np.where(used, e_lo, 0.0), np.where(used, e_hi, 0.0)
    e_mid, e_rad = B.centre(e_lo, e_hi)
    ov_mid, ov_rad = B.centre(ov_lo, ov_hi)
    # P = E·v: |P − e·v| ≤ e·v_rad + e_rad·(|v| + v_rad), plus the product's rounding
    # (≤ u|e·v|). Every term is non-negative and computed with at most six roundings
    # towards zero, so the factor (1 + 16u) and 2u|e·v| cover them without nextafter.
    p_mid = e_mid[..., None] * ov_mid[None]
    p_rad = e_mid[..., None] * ov_rad[None] + e_rad[..., None] * (np.abs(ov_mid) + ov_rad)[None]
    p_rad = p_rad * (1.0 + 16 * _U) + (2 * _U * np.abs(p_mid) + _TINY)
    bt = base_term.astype(float)
    k = base_term.sum(axis=1).max()
    g2 = B.g2(max(1, int(k)))
    dc = (e_mid * bt).sum(axis=1)
    nc = np.einsum("qr,qrk->qk", bt, p_mid)
    dr = B.up(B.psum_up(e_rad * bt, axis=1) + B.up(g2 * B.psum_up(np.abs(e_mid) * bt, axis=1)))
    nr = B.up(
        B.psum_up(p_rad * bt[..., None], axis=1)
        + B.up(g2 * B.psum_up(np.abs(p_mid) * bt[..., None], axis=1))
    )
    dg = np.zeros((len(qs), m, a))
    ng = np.zeros((len(qs), ov_lo.shape[1], m, a))
    if m:
        brow = rows.base[rows.free]  # (m,)
        gm = gmask.astype(float)
        dg = (e_mid[:, rows.alt] - e_mid[:, brow][..., None]) * gm[..., None]
        diff = (p_mid[:, rows.alt] - p_mid[:, brow][:, :, None]) * gm[..., None, None]
        ng = np.moveaxis(diff, -1, 1)  # (Q, d, m, A)
        # the alternative's radius beyond the base row's, and the differences' rounding
        d_extra = np.maximum(B.up(e_rad[:, rows.alt] - e_rad[:, brow][..., None]), 0.0)
        d_extra = B.up(d_extra + B.up(2 * _U * np.abs(dg)))
        dr = B.up(dr + B.psum_up(d_extra.max(axis=-1) * gm, axis=1))
        # centred choices: the centres gain x̄·Σ of the columns (module docstring)
        xbar = 1.0 / (a + 1)
        dc = dc + dg.sum(axis=(1, 2)) * xbar
        dr = B.up(dr + B.up(B.g2(m * a + 2) * B.psum_up(np.abs(dg).reshape(len(qs), -1), axis=1)))
        n_extra = np.maximum(B.up(p_rad[:, rows.alt] - p_rad[:, brow][:, :, None]), 0.0)
        n_extra = B.up(n_extra + B.up(2 * _U * np.abs(diff)))
        nr = B.up(nr + B.psum_up(n_extra.max(axis=2) * gm[..., None], axis=1))
        nc = nc + ng.sum(axis=(2, 3)) * xbar
        nr = B.up(nr + B.up(B.g2(m * a + 2) * _flat_sum(np.abs(ng), 2)))
    ne = np.zeros((len(qs), ov_lo.shape[1], 0))
    de = np.zeros((len(qs), 0))
    # the hull of every row's value contains the hull of the keys used (a superset)
    hull_lo = np.broadcast_to(ov_lo.min(axis=0), (len(qs), ov_lo.shape[1]))
    hull_hi = np.broadcast_to(ov_hi.max(axis=0), (len(qs), ov_lo.shape[1]))
    seen = used.any(axis=1)
    if not seen.all():  # no visible key: the head outputs 0 there
        dc = np.where(seen, dc, 1.0)
        hull_lo = np.where(seen[:, None], hull_lo, 0.0)
        hull_hi = np.where(seen[:, None], hull_hi, 0.0)
    return _ratio((nc, ng, ne, nr), (dc, dg, de, dr), hull_lo, hull_hi), seen


def first_layer(model: Model, rows: Rows, queries: np.ndarray) -> tuple[A.Form, int]:
    """Forms of layer 1's output after its attention sublayer (residual included) for the
    rows ``queries``, and how many entries were kept as hull boxes."""
    n_tok, m, a = rows.n_tok, rows.m, rows.a
    x = enclose.embed(model, rows.tok, rows.pos, n_tok)
    u = enclose.attention_inputs(model, 0, x)
    layer = model.layers[0]
    nq = len(queries)
    acc = A.point(np.zeros((nq, model.d)), np.zeros((nq, model.d)), m, a)
    boxed = 0
    for hi, head in enumerate(layer.heads):
        q, k, ov = enclose.projections(model, 0, hi, u)
        b_lo, b_hi = _beta(head, n_tok)
        vis_all = head.mask.matrix(n_tok)
        ov_lo, ov_hi = B.dn(ov.mid - ov.rad), B.up(ov.mid + ov.rad)
        qlo, qhi = B.dn(q.mid - q.rad), B.up(q.mid + q.rad)
        klo, khi = B.dn(k.mid - k.rad), B.up(k.mid + k.rad)
        c = np.zeros((nq, model.d))
        g = np.zeros((nq, model.d, m, a))
        r = np.zeros((nq, model.d))
        err = np.zeros((nq, model.d))
        for b0 in range(0, nq, BLOCK):
            qs = queries[b0 : b0 + BLOCK]
            s_lo, s_hi = B.dots(qlo[qs], qhi[qs], klo, khi)
            scores = B.imul(s_lo, s_hi, b_lo, b_hi)
            (y0, gl, _, rl, er, nb), seen = _first_block(rows, qs, vis_all, scores, ov_lo, ov_hi)
            sl = slice(b0, b0 + len(qs))
            keep = seen[:, None]
            c[sl], r[sl], err[sl] = np.where(keep, y0, 0.0), np.where(keep, rl, 0.0), er
            g[sl] = np.where(keep[..., None, None], gl, 0.0)
            boxed += nb
        hf = A.extend(A.Form(c, g, np.zeros((nq, model.d, 0)), r), err)
        if head.b_o is not None:
            hf = A.shift(hf, head.b_o)
        acc = A.add(acc, hf, shared=0)
    if layer.residual:
        acc = A.shift(acc, x.mid[queries], x.rad[queries])
    return acc, boxed


def _finish(model: Model, li: int, f: A.Form) -> A.Form:
    """The rest of layer ``li`` after its attention sublayer (residual included in ``f``):
    post-norm LN1, the FFN (with pre-norm LN2) and its residual, post-norm LN2."""
    layer = model.layers[li]
    if not layer.pre_norm and layer.norm1 is not None:
        f = A.layer_norm(f, layer.norm1)
    if layer.ffn is not None:
        ffn = layer.ffn
        x = A.layer_norm(f, layer.norm2) if layer.pre_norm and layer.norm2 is not None else f
        h = A.affine_map(x, ffn.w1, ffn.b1)
        ff = A.affine_map(A.activation(h, ffn.activation.value), ffn.w2, ffn.b2)
        f = A.add(f, ff) if layer.residual else ff
    if not layer.pre_norm and layer.norm2 is not None:
        f = A.layer_norm(f, layer.norm2)
    return f


def _collapse(f: A.Form) -> A.Form:
    """The rows' private symbols as a remainder (keys: another row's symbols)."""
    r = B.up(f.r + A.edev(f.E))
    return A.Form(f.c, f.G, f.E[..., :0], r)


def attention_layer(
    model: Model, li: int, f: A.Form, rows: Rows, queries: np.ndarray
) -> tuple[A.Form, int]:
    """Forms after layer ``li``'s attention sublayer (residual included) for the rows
    ``queries``; ``f`` holds every row's forms entering the layer."""
    layer = model.layers[li]
    n_tok, m, a = rows.n_tok, rows.m, rows.a
    u = A.layer_norm(f, layer.norm1) if layer.pre_norm and layer.norm1 is not None else f
    shared = u.E.shape[-1]
    work = len(queries) * f.rows * (m * a + shared) * model.d * max(1, len(layer.heads))
    if work > BUDGET:
        raise Unsupported(
            f"layer {li + 1} needs {len(queries)} query rows × {f.rows} key rows × "
            f"{m * a + shared} columns: beyond the affine method's budget"
        )
    acc = f.take(queries) if layer.residual else None
    boxed = 0
    for hi, head in enumerate(layer.heads):
        if head.kind is not AttentionKind.SOFTMAX:
            raise Unsupported(f"layers[{li}].heads[{hi}] is a hard head")
        b_lo, b_hi = _beta(head, n_tok)
        b_mid, b_rad = B.centre(np.array(b_lo), np.array(b_hi))
        q_all = A.affine_map(u.take(queries), head.w_q, head.b_q)
        k = _collapse(A.affine_map(u, head.w_k, head.b_k))
        ov = _collapse(A.affine_map(A.affine_map(u, head.w_v, head.b_v), head.w_o))
        k_dev = A.dev(k)
        ov_gdev = A.gdev(ov.G)
        ov_abs = B.up(B.up(np.abs(ov.c) + ov_gdev) + ov.r)
        vis_all = head.mask.matrix(n_tok)
        outs = []
        for qi, i in enumerate(queries):
            q = q_all.take([qi])
            kr, groups, alt = _keys(rows, vis_all[rows.pos[i]], i)
            if len(kr) == 0:
                outs.append(None)
                continue
            used = np.concatenate([kr, alt.ravel()])
            outs.append(
                _query(q, k, ov, k_dev, ov_abs, (b_mid, b_rad, b_hi), used, kr, groups, alt, rows)
            )
            boxed += outs[-1][-1]
        c = np.zeros((len(queries), model.d))
        g = np.zeros((len(queries), model.d, m, a))
        e = np.zeros((len(queries), model.d, shared))
        r = np.zeros((len(queries), model.d))
        err = np.zeros((len(queries), model.d))
        for qi, o in enumerate(outs):
            if o is None:
                continue
            c[qi], g[qi], e[qi], r[qi], err[qi] = o[:5]
        hf = A.extend(A.Form(c, g, e, r), err)
        if head.b_o is not None:
            hf = A.shift(hf, head.b_o)
        acc = hf if acc is None else A.add(acc, hf, shared=shared)
    return acc, boxed


def _query(q, k, ov, k_dev, ov_abs, beta, used, kr, groups, alt, rows: Rows):
    """One query row of a later layer: the forms of N and D, then the ratio."""
    b_mid, b_rad, b_hi = beta
    qc, qg, qe = q.c[0], q.G[0], q.E[0]  # (dk,), (dk, m, A), (dk, e)
    q_dev = A.dev(q)[0]
    kc, kg = k.c[used], k.G[used]
    cs = kc @ qc
    gs = np.einsum("k,tkma->tma", qc, kg) + np.einsum("tk,kma->tma", kc, qg)
    es = kc @ qe
    dk = len(qc)
    q_mass = A.coeff_mass(q)[0]
    k_mass = A.coeff_mass(A.Form(kc, kg, np.zeros((len(used), dk, 0)), k.r[used]))
    rnd = B.up(B.g2(2 * dk + 2) * B.up(B.up(k_mass @ q_mass) + B.up(np.abs(kc) @ q_mass)))
    sr = B.up(B.up(k.r[used] @ np.abs(qc)) + B.up(np.abs(kc) @ q.r[0]))
    sr = B.up(B.up(sr + B.up(B.pmat_up(k_dev[used], q_dev))) + rnd)
    # × β (β_mid exact float, |β − β_mid| ≤ β_rad)
    cs, gs, es = cs * b_mid, gs * b_mid, es * b_mid
    qk_abs = B.up(B.up(np.abs(kc) @ np.abs(qc)) * (1 + B.g2(dk)))
    sr = B.up(
        B.up(B.up(sr * b_hi) + B.up(b_rad * B.up(qk_abs + B.up(A.gdev(gs) + A.edev(es)) + sr)))
        + B.up(4 * _U * B.up(np.abs(cs) + A._gsum(gs) + A.edev(es)))
    )
    # softmax is shift invariant: remove the affine part common to all keys (the base
    # rows come first in ``used``; any weights w give an exact shift)
    n_kr = len(kr)
    w = np.exp(cs[:n_kr] - cs[:n_kr].max())
    w /= w.sum()
    gs = gs - np.tensordot(w, gs[:n_kr], axes=1)
    es = es - w @ es[:n_kr]
    sr = B.up(sr + B.up(2 * _U * B.up(A._gsum(gs) + A.edev(es))))
    neg, pos = A.neg_pos(gs)
    ed = A.edev(es)
    d_lo = B.up(B.up(neg + ed) + sr)  # Δ ≥ −d_lo
    d_hi = B.up(B.up(pos + ed) + sr)  # Δ ≤ d_hi
    top = cs.max()
    ov_lo, ov_hi = A.bounds(ov.take(used))
    # per key, e^{s − M} either linearized (below) or as the constant box
    # [e^{lo − M}, e^{hi − M}]: whichever leaves the smaller remainder
    with np.errstate(over="ignore"):
        b_lo = B.exp_le0_fine(np.minimum(B.dn(B.dn(cs - d_lo) - top), 0.0), np.zeros(len(cs)))[0]
        b_hi = _exp_up(B.up(B.up(cs + d_hi) - top))
    if not np.all(np.isfinite(b_hi)):  # a key may take every weight: only the hull is known
        mid, rad = B.centre(ov_lo.min(axis=0), ov_hi.max(axis=0))
        zero_g = np.zeros((len(mid), *gs.shape[1:]))
        return mid, zero_g, np.zeros((len(mid), qe.shape[-1])), rad, np.zeros(len(mid)), len(mid)
    box_c, box_r = B.centre(b_lo, b_hi)
    lin = d_hi <= 60.0
    dh = np.where(lin, d_hi, 0.0)
    e0_lo, e0_hi = B.exp_le0_fine(B.dn(cs - top), np.minimum(B.up(cs - top), 0.0))
    e0, e0_rad = B.centre(e0_lo, e0_hi)
    exp_dhi = _exp_up(dh)  # e^{Δ} ≤ e^{d_hi}
    rho = np.maximum(B.up(0.5 * B.up(d_lo * d_lo)), B.up(B.up(0.5 * B.up(dh * dh)) * exp_dhi))
    dev_a = B.up(A.gdev(gs) + ed)  # the affine part of Δ
    er = B.up(B.up(e0 * B.up(sr + rho)) + B.up(e0_rad * exp_dhi))
    er = B.up(er + B.up(4 * _U * B.up(e0 * B.up(1.0 + B.up(A._gsum(gs) + ed)))))
    use_box = ~lin | (box_r < er)
    # D terms: e0·(1 + Δ_aff), or the box
    e_c = np.where(use_box, box_c, e0)
    er = np.where(use_box, box_r, er)
    dg = np.where(use_box[:, None, None], 0.0, gs * e0[:, None, None])
    de = np.where(use_box[:, None], 0.0, es * e0[:, None])
    # N terms: e0·(v_c + v_c Δ_aff + G_v x), or the box of E·v
    vc, vg = ov.c[used], ov.G[used]
    ng = e0[:, None, None, None] * (vc[:, :, None, None] * gs[:, None] + vg)
    ne = e0[:, None, None] * (vc[:, :, None] * es[:, None])
    nc = e0[:, None] * vc
    v_gdev = A.gdev(vg)
    nr = B.up(B.up(e0 * dev_a)[:, None] * v_gdev)
    nr = B.up(nr + B.up(B.up(e0 * B.up(1.0 + dev_a))[:, None] * ov.r[used]))
    nr = B.up(nr + B.up(er[:, None] * ov_abs[used]))
    nr = B.up(nr + B.up(8 * _U * B.up(B.up(np.abs(nc) + A._gsum(ng)) + A.edev(ne))))
    p_c, p_r = B.centre(*B.imul(b_lo[:, None], b_hi[:, None], ov_lo, ov_hi))
    n_box = ~lin | (p_r.max(axis=1) < nr.max(axis=1))
    nc = np.where(n_box[:, None], p_c, nc)
    nr = np.where(n_box[:, None], p_r, nr)
    ng = np.where(n_box[:, None, None, None], 0.0, ng)
    ne = np.where(n_box[:, None, None], 0.0, ne)
    loc = np.full(rows.pos.shape[0], -1, dtype=np.int64)
    loc[used] = np.arange(len(used))
    kr_l, brow_l, alt_l = loc[kr], loc[rows.base[rows.free[groups]]], loc[alt]
    d_f = _mix(e_c, dg, de, er, kr_l, groups, brow_l, alt_l)
    n_f = _mix(nc, ng, ne, nr, kr_l, groups, brow_l, alt_l)
    n_f = tuple(x[None] for x in n_f)
    d_f = tuple(np.asarray(x)[None] for x in d_f)
    hull = ov_lo.min(axis=0)[None], ov_hi.max(axis=0)[None]
    y0, gl, el, rl, err, nb = _ratio(n_f, d_f, *hull)
    return y0[0], gl[0], el[0], rl[0], err[0], nb


def _exp_up(x: np.ndarray) -> np.ndarray:
    """An upper bound of e^x for any x (inf beyond float64)."""
    neg = B.exp_le0_fine(np.minimum(x, 0.0), np.minimum(x, 0.0))[1]
    with np.errstate(divide="ignore", over="ignore"):
        pos = B.up(1.0 / B.exp_le0_fine(-np.maximum(x, 0.0), -np.maximum(x, 0.0))[0])
    return np.where(x <= 0, neg, pos)


def _readout_rows(model: Model, rows: Rows) -> np.ndarray | None:
    """The rows of the readout position (None for a mean readout)."""
    if model.readout.pooled:
        return None
    r = model.readout.index(rows.n_tok)
    return np.flatnonzero(rows.pos == r)


def _mean_logit(model: Model, f: A.Form, rows: Rows) -> tuple[float, float]:
    """Range of w·mean_t y_t + b: per position its base row plus the alternatives'
    indicators (private symbols as remainders: each row's are its own)."""
    w = model.readout.weight
    z = _collapse(A.affine_map(f, w[None], None))
    everything = np.arange(rows.n_tok)
    kr = rows.base[everything]
    groups = np.arange(rows.m)
    cs, gs, es, rs = _mix(
        z.c[:, 0], z.G[:, 0], z.E[:, 0], z.r[:, 0], kr, groups, rows.base[rows.free], rows.alt
    )
    n = rows.n_tok
    form = A.Form(
        np.array([[cs / n]]), gs[None, None] / n, es[None, None] / n, np.array([[B.up(rs / n)]])
    )
    slack = B.up(B.up(4 * _U * A.coeff_mass(form)) + _TINY)
    form = A.shift(A.Form(form.c, form.G, form.E, B.up(form.r + slack)), model.readout.bias)
    lo, hi = A.bounds(form)
    return float(lo[0, 0]), float(hi[0, 0])


def applicable(model: Model, n: int, free: int | None = None) -> str | None:
    """None if the affine propagation applies to ``model`` at length ``n`` with ``free``
    free positions (default n/4), else why not."""
    if not model.layers:
        return "a model without layers"
    for li, layer in enumerate(model.layers):
        for hi, head in enumerate(layer.heads):
            if head.kind is not AttentionKind.SOFTMAX:
                return (
                    f"layers[{li}].heads[{hi}] is a {head.kind.value} hard-attention head "
                    "(affine forms bound softmax heads)"
                )
    if len(model.alphabet) < 2:
        return "a one-symbol alphabet has nothing to choose"
    n_tok = model.n_tokens(n)
    free = n // 4 if free is None else free
    rows = n_tok + free * (len(model.alphabet) - 1)
    cols = free * (len(model.alphabet) - 1) + 4 * model.d
    for li in range(1, len(model.layers)):
        last = li == len(model.layers) - 1
        queries = len(model.alphabet) if (last and not model.readout.pooled) else rows
        work = queries * rows * cols * model.d * len(model.layers[li].heads)
        if work > BUDGET:
            return (
                f"layer {li + 1} would need every row as a query ({rows} × {rows} rows × "
                f"{cols} columns): beyond the affine method's budget"
            )
    return None


def restriction_range(model: Model, rho: str, base: str) -> AffineRange:
    """The accept logit's certified range over every completion of ``rho``, by affine
    forms around the completion ``base`` (module docstring). Raises :class:`Unsupported`
    when the method does not apply, :class:`~attncert.kernel.soft_bounds.Undecided` when
    a bound overflows."""
    why = applicable(model, len(rho), rho.count("*"))
    if why:
        raise Unsupported(why)
    rows = make_rows(model, rho, base)
    readout = _readout_rows(model, rows)
    every = np.arange(len(rows.pos))
    last = len(model.layers) - 1
    need = readout if (last == 0 and readout is not None) else every
    f, boxed = first_layer(model, rows, need)
    f = _finish(model, 0, f)
    for li in range(1, len(model.layers)):
        need = readout if (li == last and readout is not None) else every
        f, nb = attention_layer(model, li, f, rows, need)
        f = _finish(model, li, f)
        boxed += nb
    if model.final_norm is not None:
        f = A.layer_norm(f, model.final_norm)
    if readout is None:
        z_lo, z_hi = _mean_logit(model, f, rows)
        per = ((z_lo, z_hi),)
    else:
        z = A.affine_map(f, model.readout.weight[None], np.array([model.readout.bias]))
        lo, hi = A.bounds(z)
        per = tuple((float(a), float(b)) for a, b in zip(lo[:, 0], hi[:, 0], strict=True))
        z_lo, z_hi = min(p[0] for p in per), max(p[1] for p in per)
    return AffineRange(rho, base, z_lo, z_hi, per, boxed)
