"""Layer-by-layer bound propagation over all strings (or all completions of a restriction).

Activations are kept per **row** — a token position t together with one token it may carry
(a fixed position has one row, a free one a row per symbol) — so that a free position's
box is conditioned on its own token. For every row and layer the propagation keeps

* a **box** [lo, hi] ∋ y_t for every input considered with that token at t;
* ``other`` — a coordinate-wise bound on |y_t(x) − y_t(x^i)| when one changeable
  position i ≠ t changes (uniform over i and x);

and per position ``self_`` — the same bound when t itself is the changed position (over the
hull of its rows, where the segment between its two tokens' activations lies).

Layer 0 is exact; LayerNorm uses its certified variance lower bound (:mod:`.layernorm`);
heads use score intervals per (query row, key position), one-key weight bounds, the
weight-box LP and, in layer 1, the exact fractional program (:mod:`.attention`,
:mod:`.fractional`); feed-forward blocks use the centred form (:mod:`.ffn`). At the
readout, z = w·r + b gets a range [z_lo, z_hi] (intersected with the LayerNorm sphere when
r is a LayerNorm output) and a change bound from the readout row's ``other`` (mean readout:
the average of ``other`` plus the largest ``self_`` over N), tightened by the
back-substitution of :mod:`.readout` where it applies. All arithmetic is outward-rounded
(:mod:`.rigorous`).

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.soft.certified.propagate import propagate, sensitivity_inputs
    >>> m = zoo_model("soft_parity_lm")
    >>> p = propagate(m, sensitivity_inputs(m, 64, readout_symbol="1"))
    >>> p.change > 0 and p.z_lo < p.z_hi
    True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from flint import arb

from attncert.errors import InputError, UnsupportedError
from attncert.model.positional import feature_matrix
from attncert.model.spec import FeedForward, LayerNorm, Model
from attncert.soft.certified import attention as A
from attncert.soft.certified import readout as RO
from attncert.soft.certified import rigorous as R
from attncert.soft.certified.ffn import apply_abs, ffn_box, jacobian_bound
from attncert.soft.certified.fractional import first_layer_range
from attncert.soft.certified.layernorm import (
    LNStep,
    last_norm,
    ln_box,
    ln_change,
    ln_summary,
    sphere_range,
)

# the version-3 kinds the propagation handles (ALiBi is not: Lemma 5 does not apply)
SUPPORTED = ("RMSNorm", "gated MLP", "silu activation", "rotary positions", "parallel residual")
FP_BUDGET = 1 << 20  # queries · keys · |options|² · d for the all-query fractional program


@dataclass(frozen=True, eq=False)
class Inputs:
    """What varies: the allowed token ids of every position, and which may change."""

    n: int
    options: tuple[tuple[int, ...], ...]  # per token position (BOS/EOS included)
    changeable: np.ndarray  # (N,) bool: positions i of the one-position change

    @property
    def n_tokens(self) -> int:
        return len(self.options)


def restriction_inputs(model: Model, rho: str) -> Inputs:
    """All completions of ``rho`` (symbols of Σ, ``*`` free); nothing changes."""
    for p, c in enumerate(rho):
        if c != "*" and c not in model.alphabet:
            raise InputError(
                f"restriction symbol {c!r} at position {p + 1}", expected="symbols of Σ or '*'"
            )
    sym = [model.token_index[s] for s in model.alphabet]
    opts = []
    if model.bos is not None:
        opts.append((model.token_index[model.bos],))
    opts += [tuple(sym) if c == "*" else (model.token_index[c],) for c in rho]
    if model.eos is not None:
        opts.append((model.token_index[model.eos],))
    return Inputs(len(rho), tuple(opts), np.zeros(len(opts), dtype=bool))


def readout_token(model: Model, n: int) -> int | None:
    """0-based token index of the single readout position, None for a mean readout."""
    if model.readout.pooled:
        return None
    return model.readout.index(model.n_tokens(n))


def sensitivity_inputs(model: Model, n: int, readout_symbol: str | None = None) -> Inputs:
    """All strings of length n; every input position may change except the readout token
    (Lemma 5's i < n). ``readout_symbol`` fixes the readout token's symbol (it never
    changes, so the bound may be taken per symbol)."""
    rho = ["*"] * n
    r = readout_token(model, n)
    off = model.input_offset()
    if readout_symbol is not None:
        if r is None or not 0 <= r - off < n:
            raise InputError("a readout symbol is only meaningful for an input readout token")
        rho[r - off] = readout_symbol
    inp = restriction_inputs(model, "".join(rho))
    ch = np.zeros(inp.n_tokens, dtype=bool)
    ch[off : off + n] = True
    if r is not None:
        ch[r] = False
    return Inputs(n, inp.options, ch)


@dataclass(frozen=True)
class StepRecord:
    """How large the change bounds are after one step (max over positions of ‖·‖₂ of
    ``other``; at the readout position; ``self_``)."""

    layer: int  # 0 = embedding, k = layer k, L+1 = final norm / readout
    step: str
    other_max: float
    other_readout: float
    self_max: float


@dataclass(frozen=True, eq=False)
class Propagation:
    """The result at the readout (see module docstring)."""

    z_lo: float
    z_hi: float
    change: float  # |z(x) − z(x^i)| ≤ change (np.inf when nothing may change)
    final_box: tuple[np.ndarray, np.ndarray]  # (d,) box of the readout vector r
    final_change: np.ndarray  # (d,) coordinate-wise bound on |Δr|
    steps: tuple[StepRecord, ...]
    ln: tuple[LNStep, ...]
    alpha_readout: tuple[float, ...]  # α_max at the readout query, per head of the last layer
    first_layer: str  # "exact (all queries)", "exact (readout query)", "weight-box LP"
    extra: dict = field(default_factory=dict)
    # per allowed token of the readout position: (option index, z_lo, z_hi, change,
    # readout box, readout change) — the same bounds for each row separately
    per_row: tuple = ()

    @property
    def cap(self) -> float:
        """The range cap z_hi − z_lo (any two strings, not only neighbours)."""
        return float(R.up(self.z_hi - self.z_lo))


def beta_enclosure(head, n_tok: int) -> tuple[float, float]:
    """β(N) = coef · N^p · log(N)^r enclosed with arb."""
    t = head.temperature
    big_n = arb(n_tok)
    val = arb(float(t.coef)) * big_n ** arb(float(t.n_power))
    if t.log_power:
        val = val * big_n.log() ** arb(float(t.log_power))
    return R.enclose(val)


def _layer0(model: Model, inp: Inputs):
    """Per-option boxes (N, K, d), validity (N, K), and per-position boxes."""
    emb = model.embedding
    n_tok = inp.n_tokens
    d = model.d
    pos_lo, pos_hi = np.zeros((n_tok, d)), np.zeros((n_tok, d))
    if emb.features:
        phi = feature_matrix(emb.features, n_tok)
        pos_lo, pos_hi = R.affine(phi, phi, emb.pos_weight)
    if emb.table is not None:
        if n_tok > emb.table.shape[0]:
            raise InputError(
                f"{n_tok} tokens exceed the learned position table ({emb.table.shape[0]} rows)"
            )
        pos_lo, pos_hi = R.add(pos_lo, pos_hi, emb.table[:n_tok], emb.table[:n_tok])
    kk = max(len(o) for o in inp.options)
    valid = np.zeros((n_tok, kk), dtype=bool)
    ids = np.zeros((n_tok, kk), dtype=np.int64)
    for t, o in enumerate(inp.options):
        valid[t, : len(o)] = True
        ids[t, : len(o)] = o
        ids[t, len(o) :] = o[0]
    w = emb.word[ids]
    y_lo, y_hi = R.add(w, w, pos_lo[:, None], pos_hi[:, None])
    box_lo = np.where(valid[..., None], y_lo, np.inf).min(axis=1)
    box_hi = np.where(valid[..., None], y_hi, -np.inf).max(axis=1)
    return (y_lo, y_hi), valid, (box_lo, box_hi)


def _norm(norm: LayerNorm, rows: A.Rows, box, other, self_, where, ln_steps):
    """LayerNorm on rows (box, other) and, for the changed position's own change, on
    each position's hull (the segment between its two tokens' activations lies there)."""
    lo, hi, s_max, n_abs, var_lo = ln_box(norm, *box)
    ln_steps.append(ln_summary(where, norm, s_max, var_lo))
    _, _, s_pos, n_pos, _ = ln_box(norm, *rows.hull(*box))
    return (lo, hi), ln_change(norm, other, s_max, n_abs), ln_change(norm, self_, s_pos, n_pos)


def _ffn(ffn: FeedForward, rows: A.Rows, box, other, self_, residual: bool):
    """The feed-forward block (plus its input when ``residual``) on rows, in centred form
    (:mod:`.ffn`); the changed position's own change uses each position's hull."""
    lo, hi, jp = ffn_box(ffn, *box, residual)
    jp_pos = jacobian_bound(ffn, *rows.hull(*box), residual)
    return (lo, hi), apply_abs(jp, other), apply_abs(jp_pos, self_)


def _fp_queries(model: Model, inp: Inputs, layer_index: int, readout: int | None):
    """Which queries of layer 1 get the exact fractional program, and the label."""
    if layer_index != 0:
        return None, ""
    n_tok = inp.n_tokens
    kk = max(len(o) for o in inp.options)
    if len(model.layers) == 1 and readout is not None:
        return np.array([readout]), "exact (readout query)"
    if n_tok * n_tok * kk * kk * model.d <= FP_BUDGET:
        return np.arange(n_tok), "exact (all queries)"
    return None, "weight-box LP"


def propagate(model: Model, inp: Inputs, *, lp: bool = True) -> Propagation:
    """Bound every activation over ``inp`` and the readout's range and one-position
    change (module docstring). Softmax heads only; hard heads are refused by name.

    Activations are kept per *row* — a position with one of its allowed tokens — so that
    a free position's box is conditioned on its token instead of covering all of them;
    the change of the changed position itself (``self_``) is kept per position."""
    model.require_classic("the certified bound propagation (attncert.soft.certified)", SUPPORTED)
    for li, layer in enumerate(model.layers):
        for hi_, h in enumerate(layer.heads):
            if h.kind.is_hard:
                raise UnsupportedError(
                    f"head uses {h.kind.value!r} (hard) attention; the certified soft bounds "
                    "are for softmax heads",
                    where=f"layers[{li}].heads[{hi_}]",
                    expected="kind 'softmax'",
                )
    n_tok = inp.n_tokens
    d = model.d
    r = readout_token(model, inp.n)
    y_opt, valid, _ = _layer0(model, inp)
    rows = A.Rows(valid)
    kk = rows.k
    box = (y_opt[0].reshape(-1, d), y_opt[1].reshape(-1, d))
    single_r = r is not None and valid[r].sum() == 1
    crown = RO.eligible(model, r) and single_r
    crown_result = None
    other = np.zeros((n_tok * kk, d))
    h_lo, h_hi = rows.hull(*box)
    self_ = np.where(inp.changeable[:, None], R.up(h_hi - h_lo), 0.0)
    steps: list[StepRecord] = []
    ln_steps: list[LNStep] = []
    alpha_r: tuple[float, ...] = ()
    fp_label = "none (no attention)"
    r_rows = None if r is None else np.nonzero(rows.pos == r)[0][valid[r]]

    def at_r(x):  # a row array at the readout position (its single row, or the hull)
        return x[r_rows].max(axis=0)

    def record(layer: int, step: str) -> None:
        norms = np.sqrt(np.sum(other * other, axis=1))
        rn = float(norms[r_rows].max()) if r is not None else float(norms.mean())
        steps.append(
            StepRecord(
                layer, step, float(norms.max()), rn, float(np.sqrt(np.sum(self_**2, axis=1)).max())
            )
        )

    record(0, "embedding")
    for li, layer in enumerate(model.layers):
        y0 = (box, other, self_)  # a parallel layer's FFN reads the layer's input
        if layer.pre_norm and layer.norm1 is not None:
            # the changed position's own input change does not enter (its query's output
            # is bounded by the width of its range; its key by its box of values)
            u, u_other, _ = _norm(
                layer.norm1, rows, box, other, self_, f"layer {li + 1} norm1", ln_steps
            )
        else:
            u, u_other = box, other
        u_opt = (u[0].reshape(n_tok, kk, d), u[1].reshape(n_tok, kk, d)) if li == 0 else None
        att_box = (np.zeros((n_tok * kk, d)), np.zeros((n_tok * kk, d)))
        att_other, att_self = np.zeros((n_tok * kk, d)), np.zeros((n_tok, d))
        queries, label = _fp_queries(model, inp, li, r)
        if li == 0 and layer.heads:
            fp_label = label
        alphas = []
        last = li == len(model.layers) - 1 and crown
        contexts = []
        for head in layer.heads:
            beta = beta_enclosure(head, n_tok)
            hb = A.head_boxes(head, *u, beta, rows.pos)
            vis = head.mask.matrix(n_tok)
            s_lo, s_hi = A.scores(hb, rows)
            l_w, u_w = A.weight_bounds(s_lo, s_hi, vis[rows.pos])
            out = A.output_range(hb, l_w, u_w, head.mask, vis, rows, lp=lp)
            hbo = None
            if li == 0 and (queries is not None or last):
                hbo = _option_boxes(head, u_opt, beta)
            if queries is not None:
                out = _exact_first_layer(hbo, valid, head.mask, queries, out)
            hc = A.change_bound(hb, u_w, head.mask, vis, out, inp.changeable, u_other, rows)
            if last:
                opt = (u_opt, valid) if li == 0 else None
                contexts.append(RO.HeadContext(head, hb, l_w, u_w, vis, out, opt, hbo))
            att_box = R.add(*att_box, *out)
            att_other = R.up(att_other + hc.other)
            att_self = R.up(att_self + hc.self_)
            alphas.append(float(at_r(hc.alpha_max)) if r is not None else float(hc.alpha_max.max()))
        alpha_r = tuple(alphas)
        y_before = (at_r(-box[0]) * -1, at_r(box[1]), at_r(other)) if last else None
        if layer.residual:
            box = R.add(*box, *att_box)
            other = R.up(other + att_other)
            self_ = R.up(self_ + att_self)
        else:
            box, other, self_ = att_box, att_other, att_self
        record(li + 1, "attention")
        if last:
            oracle = RO.Oracle(contexts, u, u_other, inp.changeable, r, lp, rows)
            crown_result = RO.crown_readout(
                model,
                layer,
                oracle,
                (y_before[0], y_before[1]),
                y_before[2],
                (-at_r(-box[0]), at_r(box[1])),
                at_r(other),
            )
        if not layer.pre_norm and layer.norm1 is not None:
            box, other, self_ = _norm(
                layer.norm1, rows, box, other, self_, f"layer {li + 1} norm1", ln_steps
            )
            record(li + 1, "norm1")
        if layer.ffn is not None:
            # with a pre-norm the residual adds y to FFN(LN₂(y)); otherwise to FFN(y), and
            # the centred form then covers y + FFN(y) as one map (I + J)
            # a parallel layer (pre-norm, residual): y + attn(LN₁ y) + FFN(LN₂ y)
            same = (
                layer.residual
                and not layer.parallel
                and not (layer.pre_norm and layer.norm2 is not None)
            )
            x_in = y0 if layer.parallel else (box, other, self_)
            if layer.pre_norm and layer.norm2 is not None:
                f_in, f_other, f_self = _norm(
                    layer.norm2, rows, *x_in, f"layer {li + 1} norm2", ln_steps
                )
            else:
                f_in, f_other, f_self = x_in
            f_box, f_o, f_s = _ffn(layer.ffn, rows, f_in, f_other, f_self, same)
            if layer.residual and not same:
                box = R.add(*box, *f_box)
                other, self_ = R.up(other + f_o), R.up(self_ + f_s)
            else:
                box, other, self_ = f_box, f_o, f_s
            record(li + 1, "ffn")
        if not layer.pre_norm and layer.norm2 is not None:
            box, other, self_ = _norm(
                layer.norm2, rows, box, other, self_, f"layer {li + 1} norm2", ln_steps
            )
            record(li + 1, "norm2")
    if model.final_norm is not None:
        box, other, self_ = _norm(model.final_norm, rows, box, other, self_, "final norm", ln_steps)
        record(len(model.layers) + 1, "final norm")
    if r is None:  # mean readout: the mean of every position's hull
        p_lo, p_hi = rows.hull(*box)
        f_lo = R.down(R.sum_lower(p_lo, axis=0) / n_tok)
        f_hi = R.up(R.sum_upper(p_hi, axis=0) / n_tok)
        ch = inp.changeable
        worst_self = self_[ch].max(axis=0) if ch.any() else np.zeros(d)
        f_change = R.up(R.up(R.sum_up(rows.per_position_max(other), axis=0) + worst_self) / n_tok)
    else:
        f_lo, f_hi = -at_r(-box[0]), at_r(box[1])
        f_change = at_r(other)
    w = model.readout.weight
    z_lo, z_hi = R.affine(f_lo[None], f_hi[None], w[None], np.array([model.readout.bias]))
    norm = last_norm(model)
    if norm is not None:  # a LayerNorm output lies on a sphere: a cap independent of the box
        s_lo, s_hi = sphere_range(norm, w, model.readout.bias)
        z_lo, z_hi = np.maximum(z_lo, s_lo), np.minimum(z_hi, s_hi)
    change = float(R.nonneg_matmul_up(f_change[None], np.abs(w)[:, None])[0, 0])
    z_lo, z_hi = float(z_lo[0, 0]), float(z_hi[0, 0])
    extra = {}
    if crown_result is not None:
        extra = {
            "box_path": {"z_lo": z_lo, "z_hi": z_hi, "change": change},
            "crown": dataclasses.asdict(crown_result),
        }
        z_lo, z_hi = max(z_lo, crown_result.z_lo), min(z_hi, crown_result.z_hi)
        change = min(change, crown_result.change)
    if not inp.changeable.any():
        change = 0.0
    per_row = []
    if r is not None and crown_result is None:
        for k in np.nonzero(valid[r])[0]:
            row = r * kk + k
            zr = _readout_z(model, box[0][row], box[1][row], norm)
            ch_r = float(R.nonneg_matmul_up(other[row][None], np.abs(w)[:, None])[0, 0])
            ch_r = ch_r if inp.changeable.any() else 0.0
            per_row.append((int(k), zr[0], zr[1], ch_r, (box[0][row], box[1][row]), other[row]))
    return Propagation(
        z_lo=z_lo,
        z_hi=z_hi,
        change=change,
        final_box=(f_lo, f_hi),
        final_change=f_change,
        steps=tuple(steps),
        ln=tuple(ln_steps),
        alpha_readout=alpha_r,
        first_layer=fp_label,
        extra=extra,
        per_row=tuple(per_row),
    )


def _readout_z(model: Model, f_lo, f_hi, norm) -> tuple[float, float]:
    """The logit's range for a readout vector in [f_lo, f_hi] (∩ the LayerNorm sphere)."""
    w = model.readout.weight
    z_lo, z_hi = R.affine(f_lo[None], f_hi[None], w[None], np.array([model.readout.bias]))
    if norm is not None:
        s_lo, s_hi = sphere_range(norm, w, model.readout.bias)
        z_lo, z_hi = np.maximum(z_lo, s_lo), np.minimum(z_hi, s_hi)
    return float(z_lo[0, 0]), float(z_hi[0, 0])


def _option_boxes(head, u_opt, beta) -> A.HeadBoxes:
    """The head's q, k, ṽ boxes for every position and allowed token, shaped (N, K, ·)."""
    n_tok, kk, d = u_opt[0].shape
    pos = np.repeat(np.arange(n_tok), kk)
    hbo = A.head_boxes(head, u_opt[0].reshape(-1, d), u_opt[1].reshape(-1, d), beta, pos)

    def shape(b):
        return (b[0].reshape(n_tok, kk, -1), b[1].reshape(n_tok, kk, -1))

    return dataclasses.replace(hbo, q=shape(hbo.q), k=shape(hbo.k), v=shape(hbo.v))


def _exact_first_layer(hbo: A.HeadBoxes, valid, mask, queries, out):
    """Intersect the head's output box (rows) with the exact fractional-program range of
    each row (position, token) at ``queries`` (layer 1)."""
    lo, hi = first_layer_range(hbo.q, hbo.k, hbo.v, valid, hbo.beta, mask, queries)
    n_tok, kk = valid.shape
    # a query that sees no key, or a token the position cannot carry, comes back as
    # [+inf, −inf]: keep the row's box (checked before rounding: down(+inf) is finite)
    seen = np.isfinite(lo) & np.isfinite(hi)
    lo, hi = R.add(np.where(seen, lo, 0.0), np.where(seen, hi, 0.0), hbo.bias[0], hbo.bias[1])
    o_lo, o_hi = out[0].reshape(n_tok, kk, -1).copy(), out[1].reshape(n_tok, kk, -1).copy()
    o_lo[queries] = np.where(seen, np.maximum(o_lo[queries], lo), o_lo[queries])
    o_hi[queries] = np.where(seen, np.minimum(o_hi[queries], hi), o_hi[queries])
    return o_lo.reshape(n_tok * kk, -1), o_hi.reshape(n_tok * kk, -1)
