"""The logit's range over a pattern of strings of every length in an interval (trusted;
issue 40, :mod:`attncert.kernel.horizon.checker`).

:func:`pattern_range` propagates boxes through the model, one box per *row* — a position
class (:mod:`.classes`) and a token its positions may carry — valid for every length of
the pattern's interval, every position of the class and every string of the pattern:

* **embedding**: the token's row plus the positional weights times the exact feature
  ranges of the class (:func:`.classes.feature_range`);
* **attention**: per head, q, k and ṽ = W_O W_V u boxes per row (outward-rounded
  products, :mod:`attncert.kernel.core.bounds`); scores β·(q·k − m·(i − j)) with β(N)'s
  range over the interval and ALiBi's term over the classes' distances (inside β, as
  :func:`attncert.model.forward.attention_weights` scales it); rotary heads bound
  q·R(φ)k for *every* angle per pair (|q_p||k_p|: the offsets between two classes range
  over many values); each key class seen from a query row with its count range — all of
  it without a mask, the earlier classes (and from 1 to all of its own) under a causal
  mask; then the head rule (:mod:`.heads`): softmax by the Dinkelbach bound with counts,
  hard heads by the candidate hull, and over an infinite interval a head whose β grows
  like log N by the dominant key. A symbol-count bound of the pattern constrains the rows
  that see the whole middle; a symbol bounded to 0 occurrences is removed from the
  middle's tokens;
* **LayerNorm, RMSNorm, feed-forward layers (plain or gated), residual, parallel
  residual**: the box pass's rules (:mod:`attncert.kernel.soft.propagate`), row by row;
* **readout**: w·y + b at the readout's rows, intersected with the final norm's sphere
  bound.

Refuses (UnsupportedError) what it cannot bound: a learned position table, a mean readout,
a softmax head whose β grows over an infinite interval without a dominant key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from flint import arb

from attncert.errors import UnsupportedError
from attncert.kernel.core import bounds as B
from attncert.kernel.horizon import heads as HR
from attncert.kernel.horizon.classes import Layout, Pattern, feature_range, layout, used_features
from attncert.kernel.soft import heads as SH
from attncert.kernel.soft.propagate import _ffn
from attncert.model.kinds import Mask
from attncert.model.spec import Model

__all__ = ["PatternRange", "pattern_range"]


@dataclass(frozen=True)
class PatternRange:
    """The logit's range over every string of the pattern at every length of its interval."""

    z_lo: float
    z_hi: float
    rows: int  # rows propagated (classes × tokens)


def _beta(head, lay: Layout):
    """β(N)'s range over the interval's token counts, or None when it is unbounded."""
    t = head.temperature
    if t is None or t.is_constant:
        c = 1.0 if t is None else float(t.coef)
        return c, c
    vals = []
    for n in (lay.n_lo, lay.n_hi):
        if n is None:
            return None
        v = arb(float(t.coef)) * arb(n) ** arb(float(t.n_power))
        if t.log_power:
            v *= arb(n).log() ** arb(float(t.log_power))
        vals.append(v)
    # β(N) = c·N^p·(log N)^q is monotone in N for p, q ≥ 0 (the refusal below otherwise)
    if t.n_power < 0 or t.log_power < 0:
        raise UnsupportedError(f"inverse temperature {t}: not monotone in N")
    lo = min(B.ball(vals[0])[0], B.ball(vals[1])[0])
    hi = max(B.ball(vals[0])[1], B.ball(vals[1])[1])
    return lo, hi


def _visible(mask: Mask, lay: Layout, q_rows, key_cls: int):
    """(lo, hi) counts (R, C) of each key class a query row sees (module docstring)."""
    cl = lay.classes
    r_n = len(q_rows)
    lo = np.zeros((r_n, key_cls))
    hi = np.zeros((r_n, key_cls))
    for r, qc in enumerate(q_rows):
        for c, k in enumerate(cl):
            c_lo, c_hi = k.count
            c_hi = np.inf if c_hi is None else c_hi
            same = c == qc
            before = k.order < cl[qc].order
            after = k.order > cl[qc].order
            if (
                mask is Mask.NONE
                or (mask is Mask.FUTURE and before)
                or (mask is Mask.PAST and after)
                or (mask is Mask.FUTURE_STRICT and before)
                or (mask is Mask.PAST_STRICT and after)
            ):
                lo[r, c], hi[r, c] = c_lo, c_hi
            elif same and mask in (Mask.FUTURE, Mask.PAST):
                lo[r, c], hi[r, c] = 1, c_hi  # the query itself, up to all of its class
            elif same and mask in (Mask.FUTURE_STRICT, Mask.PAST_STRICT):
                lo[r, c], hi[r, c] = 0, max(c_hi - 1, 0)
    return lo, hi


def _offsets(lay: Layout, model: Model, q_cls, k_cls):
    """(lo, hi) of i_q − i_k over every length (for ALiBi), (len(q_cls), len(k_cls))."""
    from attncert.kernel.horizon.classes import position_range

    ranges = []
    for c in lay.classes:
        _, (i_lo, i_hi) = position_range(c, lay, model)
        ranges.append((float(i_lo), np.inf if i_hi is None else float(i_hi)))
    lo = np.array([[ranges[q][0] - ranges[k][1] for k in k_cls] for q in q_cls])
    hi = np.array([[ranges[q][1] - ranges[k][0] for k in k_cls] for q in q_cls])
    return lo, hi


def _head_out(head, u, lay: Layout, rows, q_idx, model: Model, count_constraint):
    """One head's output box at the query rows ``q_idx`` (indices into the rows)."""
    beta = _beta(head, lay)
    rot = head.rotary
    hd = SH._head(replace(head, rotary=None) if rot is not None else head, *u, (1.0, 1.0))
    q = hd["q"][0][q_idx], hd["q"][1][q_idx]
    if rot is None:
        sig = B.dots(*q, *hd["k"])
    else:  # every rotation: per pair |q_p||k_p| (module docstring)
        from attncert.kernel.uniform.propagate import _rotated_dots

        sig = _rotated_dots(rot, q, hd["k"])
    cls = np.array([c for c, _ in rows])
    q_cls = [rows[i][0] for i in q_idx]
    cnt_lo, cnt_hi = _visible(head.mask, lay, q_cls, len(lay.classes))
    v_lo, v_hi = hd["v"]
    sym, ab = count_constraint
    # the symbol-count bound holds for rows that see the whole middle
    mids = [c for c, k in enumerate(lay.classes) if k.kind == "middle"]
    full = np.array(
        [
            all(
                cnt_lo[r, c] == lay.classes[c].count[0]
                and cnt_hi[r, c]
                == (np.inf if lay.classes[c].count[1] is None else lay.classes[c].count[1])
                for c in mids
            )
            for r in range(len(q_idx))
        ]
    )
    if head.kind.is_hard:
        s_lo, s_hi = sig
        if head.alibi:
            a_lo, a_hi = _offsets(lay, model, q_cls, list(cls))
            s_lo, s_hi = B.dn(s_lo - head.alibi * a_hi), B.up(s_hi - head.alibi * a_lo)
        lo, hi = HR.hard_range(s_lo, s_hi, v_lo, v_hi, cls, cnt_lo, cnt_hi)
    elif beta is None:
        t = head.temperature
        if not (t.n_power == 0 and t.log_power == 1 and t.coef > 0) or head.alibi:
            raise UnsupportedError(
                f"a softmax head with β(N) = {t} over an infinite interval of lengths: only "
                "β = κ·log N with a dominant key is bounded there",
            )
        b, e = int(model.bos is not None), int(model.eos is not None)
        lo, hi = HR.dominant_range(
            *sig, v_lo, v_hi, cls, cnt_lo, cnt_hi, float(t.coef), lay.n_lo,
            b + e + lay.pattern.fixed,
        )  # fmt: skip
        if np.isnan(lo).any() or np.isnan(hi).any():
            raise UnsupportedError(
                "no single-position key dominates every other by δ with κδ ≥ 1: no bound "
                "over an infinite interval of lengths"
            )
    else:
        if head.alibi:  # the score is β·(q·k − m·(i − j)): ALiBi's term before β
            a_lo, a_hi = _offsets(lay, model, q_cls, list(cls))
            sig = B.dn(sig[0] - B.up(head.alibi * a_hi)), B.up(sig[1] - B.dn(head.alibi * a_lo))
        s_lo, s_hi = B.imul(*sig, np.float64(beta[0]), np.float64(beta[1]))
        lo = np.empty((len(q_idx), v_lo.shape[1]))
        hi = np.empty_like(lo)
        for part, constrained in ((full, True), (~full, False)):
            if not part.any():
                continue
            args = (s_lo[part], s_hi[part], v_lo, v_hi, cls, cnt_lo[part], cnt_hi[part])
            if constrained and ab is not None:
                lo[part], hi[part] = HR.softmax_range(*args, sym, ab)
            else:
                lo[part], hi[part] = HR.softmax_range(*args)
    return B.iadd(lo, hi, *hd["bias"])


def pattern_range(model: Model, pat: Pattern, bins: int) -> PatternRange:
    """The logit's range over every string of ``pat`` at every length of its interval, with
    ``bins`` middle bins (0: one class per position, at a single length). Raises
    UnsupportedError for what the module cannot bound."""
    if model.embedding.table is not None:
        raise UnsupportedError("a learned position table is not defined at every length")
    lay = layout(model, pat, bins)
    cl = lay.classes
    drop = {model.token_index[s] for s, a, b in pat.counts if b == 0}
    rows: list[tuple[int, int]] = []
    for c, k in enumerate(cl):
        toks = [t for t in k.tokens if not (k.kind == "middle" and t in drop)]
        if not toks:
            raise UnsupportedError(f"{pat.text()}: the middle has no symbol left")
        rows.extend((c, t) for t in toks)
    count_constraint = _constraint(model, pat, rows, cl)
    emb = model.embedding
    d = model.d
    ids = np.array([t for _, t in rows])
    y = (emb.word[ids], emb.word[ids])
    used = used_features(model)
    if used:
        feats = [
            [feature_range(emb.features[fi], cl[c], lay, model) for fi in used] for c, _ in rows
        ]
        phi_lo = np.array([[_dn(lo) for lo, _ in f] for f in feats])
        phi_hi = np.array([[_up(hi) for _, hi in f] for f in feats])
        y = B.iadd(*y, *B.lin(phi_lo, phi_hi, emb.pos_weight[:, list(used)]))
    box = (np.array(y[0], dtype=float), np.array(y[1], dtype=float))
    valid = np.ones((len(rows), 1), dtype=bool)
    zero = np.zeros((len(rows), d))
    readout_rows = np.array([i for i, (c, _) in enumerate(rows) if c == lay.readout])
    n_layers = len(model.layers)
    for li, layer in enumerate(model.layers):
        last = li == n_layers - 1
        q_idx = readout_rows if last else np.arange(len(rows))
        pre = layer.pre_norm
        x0 = box
        u = B.layernorm(layer.norm1, *box)[:2] if pre and layer.norm1 is not None else box
        att = (np.zeros((len(q_idx), d)), np.zeros((len(q_idx), d)))
        for head in layer.heads:
            att = B.iadd(*att, *_head_out(head, u, lay, rows, q_idx, model, count_constraint))
        if last:  # only the readout's rows matter from here on
            box = (box[0][q_idx], box[1][q_idx])
            x0 = (x0[0][q_idx], x0[1][q_idx])
            valid, zero = np.ones((len(q_idx), 1), dtype=bool), np.zeros((len(q_idx), d))
        box = B.iadd(*box, *att) if layer.residual else att
        if not pre and layer.norm1 is not None:
            box = B.layernorm(layer.norm1, *box)[:2]
        if layer.ffn is not None:
            same = layer.residual and not layer.parallel and not (pre and layer.norm2 is not None)
            src = x0 if layer.parallel else box
            f_in = B.layernorm(layer.norm2, *src)[:2] if pre and layer.norm2 is not None else src
            f_box = _ffn(layer.ffn, valid, f_in, zero, zero, same)[0]
            box = B.iadd(*box, *f_box) if layer.residual and not same else f_box
        if not pre and layer.norm2 is not None:
            box = B.layernorm(layer.norm2, *box)[:2]
    if n_layers == 0:
        box = (box[0][readout_rows], box[1][readout_rows])
    if model.final_norm is not None:
        box = B.layernorm(model.final_norm, *box)[:2]
    w, bias = model.readout.weight, np.array([model.readout.bias])
    z = B.lin(box[0], box[1], w[None], bias)
    z_lo, z_hi = float(z[0].min()), float(z[1].max())
    norm = _sphere_norm(model)
    if norm is not None:
        s_lo, s_hi = B.sphere(norm, w, model.readout.bias)
        z_lo, z_hi = max(z_lo, s_lo), min(z_hi, s_hi)
    B.finite(np.array([z_lo, z_hi]))
    return PatternRange(z_lo, z_hi, len(rows))


def _constraint(model: Model, pat: Pattern, rows, cl):
    """(sym mask over key rows, (a, b)) for the one symbol-count bound the head rule uses
    (a symbol bounded to 0 is removed from the middle instead); (None, None) without one."""
    live = [(s, a, b) for s, a, b in pat.counts if b != 0]
    if not live:
        return None, None
    s, a, b = live[0]  # one bound at a time (further ones are dropped: sound)
    tok = model.token_index[s]
    sym = np.array([cl[c].kind == "middle" and t == tok for c, t in rows])
    return sym, (float(a), np.inf if b is None else float(b))


def _sphere_norm(model: Model):
    last = model.layers[-1] if model.layers else None
    norm = model.final_norm
    if norm is None and last is not None and not last.pre_norm:
        norm = last.norm2 if last.norm2 is not None else (last.norm1 if last.ffn is None else None)
    return norm


def _dn(q) -> float:
    f = float(q)
    return float(np.nextafter(f, -np.inf)) if f > q else f


def _up(q) -> float:
    f = float(q)
    return float(np.nextafter(f, np.inf)) if f < q else f
