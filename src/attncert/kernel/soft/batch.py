"""Rigorous logits of a softmax model on a batch of strings (trusted; issue 22).

:func:`logit_bounds` encloses the accept logit z = w·r + b of every string of a batch in
an interval [lo, hi] with float64 arithmetic and rigorous error bounds, vectorized over
the batch. It is how the verifier's *exhaustive* cubes — small cubes whose every
completion is evaluated — are decided (:mod:`attncert.kernel.verify.checker`): a completion is
accepted when lo > 0, rejected when hi ≤ 0, and otherwise handed to the arb forward pass
(:func:`attncert.kernel.soft.checker.decide`, 53 → 4096 bits), which decides it or refuses.

Every step is an enclosure:

* position-wise maps (embedding, LayerNorm, FFN, GELU/tanh-GELU/ReLU, readout) by
  :mod:`attncert.arith.enclose` (first-order radius propagation, Higham's γ_k for dot
  products, Taylor tables computed in arb);
* scores s = β·q·k: |q·k − fl(q̃·k̃)| ≤ (|q̃| + r_q)·r_k + r_q·|k̃| + γ_d·|q̃|·|k̃|
  (:mod:`attncert.arith.filter`), times the arb enclosure of β(N); rotary queries and
  keys are rotated first by their positions with arb-enclosed cos and sin, and ALiBi's
  −m·(i − j) is two more coordinates of q and k
  (:func:`attncert.arith.enclose.projections_at`);
* softmax: with M ≥ every visible score's upper end, e^{s − M} ∈ [e^{lo − M}, e^{hi − M}]
  from the arb tables (:func:`attncert.kernel.core.bounds.exp_le0_fine`); the head
  output y = Σ e_k v_k / Σ e_k lies in N/D, N and D enclosed by outward-rounded sums of
  the products' intervals (e ≥ 0, so each product's ends are e_lo·v or e_hi·v), and in
  the hull of the visible values (a convex combination); a query with no visible key
  outputs 0 (plus b_O).

Python::

    >>> import numpy as np
    >>> from attncert.model import zoo_model
    >>> from attncert.model.forward import forward
    >>> m = zoo_model("trained_parity")
    >>> lo, hi = logit_bounds(m, tokens(m, ["0110", "1110"]))
    >>> z = forward(m, ["0110", "1110"]).logits
    >>> bool(np.all((lo <= z) & (z <= hi)) and np.all(hi - lo < 1e-9))
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attncert.arith import enclose
from attncert.arith.filter import Enclosed
from attncert.errors import UnsupportedError
from attncert.kernel.core import bounds as B
from attncert.kernel.soft.affine.bound import hard_head
from attncert.kernel.soft.affine.heads import beta_enclosure
from attncert.model.spec import Model

__implements__ = ("Hahn Theorem 6",)

_U = 2.0**-53
BATCH_CELLS = 1 << 22  # strings · tokens² per block of the batch


def tokens(model: Model, strings: Sequence[str]) -> np.ndarray:
    """Token ids (B, N) of equal-length strings (BOS/EOS added)."""
    return np.array([model.encode(s) for s in strings], dtype=np.int64)


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
    step = max(1, BATCH_CELLS // max(1, n_tok * n_tok))
    lo, hi = np.empty(b), np.empty(b)
    for s in range(0, b, step):
        lo[s : s + step], hi[s : s + step] = _block(model, toks[s : s + step])
    return lo, hi


def _head(model: Model, li: int, hi: int, u: Enclosed, b: int, n_tok: int) -> Enclosed:
    """One softmax head's output (b_O included) for every row, (b·N, d), in midpoint-radius
    form (module docstring); every radius is a sum of non-negative terms, inflated for
    its own rounding."""
    head = model.layers[li].heads[hi]
    q, k, ov = enclose.projections_at(model, li, hi, u, np.tile(np.arange(n_tok), b))
    dk, d = q.mid.shape[1], ov.mid.shape[1]
    qm, qr = q.mid.reshape(b, n_tok, dk), q.rad.reshape(b, n_tok, dk)
    km, kr = k.mid.reshape(b, n_tok, dk), k.rad.reshape(b, n_tok, dk)
    s = np.einsum("bqd,bkd->bqk", qm, km)
    aq, ak = np.abs(qm), np.abs(km)
    err = (
        np.einsum("bqd,bkd->bqk", aq + qr, kr)
        + np.einsum("bqd,bkd->bqk", qr, ak)
        + B.g2(dk) * np.einsum("bqd,bkd->bqk", aq, ak)
    )
    err = _inflate(err, dk)
    # × β: |sβ − s̃β̃| ≤ err·|β|max + |s̃|·β_rad, plus the product's rounding
    b_lo, b_hi = beta_enclosure(head, n_tok)
    b_mid, b_rad = B.centre(np.float64(b_lo), np.float64(b_hi))
    ss = s * b_mid
    ss_rad = _inflate(err * max(abs(b_lo), abs(b_hi)) + np.abs(s) * b_rad + _U * np.abs(ss), 4)
    vis = head.mask.matrix(n_tok)[None]  # (1, N, N)
    top = np.where(vis, B.up(ss + ss_rad), -np.inf).max(axis=2, keepdims=True)
    seen = np.isfinite(top)
    top = np.where(seen, top, 0.0)
    e_lo, e_hi = B.exp_le0_fine(
        np.minimum(B.dn(B.dn(ss - ss_rad) - top), 0.0),
        np.minimum(B.up(B.up(ss + ss_rad) - top), 0.0),
    )
    e_lo, e_hi = np.where(vis, e_lo, 0.0), np.where(vis, e_hi, 0.0)
    e_mid, e_rad = B.centre(e_lo, e_hi)
    vm, vr = ov.mid.reshape(b, n_tok, d), ov.rad.reshape(b, n_tok, d)
    avm = np.abs(vm)
    g = B.g2(n_tok)
    n_mid = np.einsum("bqk,bkd->bqd", e_mid, vm)
    n_rad = _inflate(
        np.einsum("bqk,bkd->bqd", e_mid, vr)
        + np.einsum("bqk,bkd->bqd", e_rad, avm + vr)
        + g * np.einsum("bqk,bkd->bqd", e_mid, avm),
        n_tok,
    )
    d_mid = e_mid.sum(axis=2)[..., None]
    d_rad = _inflate(e_rad.sum(axis=2) + g * d_mid[..., 0], n_tok)[..., None]
    # |N/D − Ñ/D̃| ≤ (N_rad·D̃ + |Ñ|·D_rad) / ((D̃ − D_rad)·D̃), plus the division's rounding
    low = B.dn(B.dn(d_mid - d_rad) * (1.0 - 4 * _U))
    ok = low > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        y_mid = n_mid / d_mid
        y_rad = B.up(_inflate(n_rad * d_mid + np.abs(n_mid) * d_rad, 2) / B.dn(low * d_mid))
    y_rad = _inflate(y_rad + 2 * _U * np.abs(y_mid), 2)
    if not ok.all():  # the weights are not separated from 0: the hull of the visible values
        v_lo, v_hi = B.dn(vm - vr), B.up(vm + vr)
        h_lo = np.where(vis[..., None], v_lo[:, None], np.inf).min(axis=2)
        h_hi = np.where(vis[..., None], v_hi[:, None], -np.inf).max(axis=2)
        with np.errstate(invalid="ignore"):  # a query with no visible key: masked below
            h_mid, h_rad = B.centre(h_lo, h_hi)
        y_mid, y_rad = np.where(ok, y_mid, h_mid), np.where(ok, y_rad, h_rad)
    y_mid = np.where(seen, y_mid, 0.0).reshape(b * n_tok, d)
    y_rad = np.where(seen, y_rad, 0.0).reshape(b * n_tok, d)
    B.finite(y_mid, y_rad)
    out = Enclosed(y_mid, y_rad)
    if head.b_o is not None:
        out = enclose.add(out, enclose.point(np.broadcast_to(head.b_o, out.mid.shape)))
    return out


def _inflate(e: np.ndarray, k: int) -> np.ndarray:
    """A non-negative bound computed with ≤ k + 4 roundings, made an upper bound."""
    return B.up(e * (1.0 + 2 * (k + 4) * _U) + 2.0**-1000 * max(k, 1))


def _block(model: Model, toks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    b, n_tok = toks.shape
    pos = np.tile(np.arange(n_tok), b)
    x = enclose.embed(model, toks.ravel(), pos, n_tok)
    for li, layer in enumerate(model.layers):
        u = enclose.attention_inputs(model, li, x)
        att = enclose.point(np.zeros_like(x.mid))
        for hi in range(len(layer.heads)):
            att = enclose.add(att, _head(model, li, hi, u, b, n_tok))
        x = enclose.finish_layer(model, li, x, att)
    if model.readout.pooled:
        z = enclose.readout_terms(model, x)
        groups = [np.arange(i * n_tok, (i + 1) * n_tok) for i in range(b)]
        z = enclose.mean_rows(z, groups)
    else:
        r = model.readout.index(n_tok)
        z = enclose.readout_terms(model, x.take(np.arange(b) * n_tok + r))
    bias = float(model.readout.bias)
    lo = B.dn(B.dn(z.mid[:, 0] - z.rad[:, 0]) + bias)
    hi = B.up(B.up(z.mid[:, 0] + z.rad[:, 0]) + bias)
    B.finite(lo, hi)
    return lo, hi
