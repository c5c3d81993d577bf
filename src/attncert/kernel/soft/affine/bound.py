"""The logit's range over every completion of a restriction, by affine forms (trusted;
issue 15, Corollary 2's soft analogue).

:func:`restriction_range` bounds the accept logit of a softmax model over all completions
of a restriction ρ, keeping every activation as an affine form in the free positions'
choices (:mod:`attncert.kernel.soft.affine.forms`) instead of a box, so that correlations survive
LayerNorm, GELU and a second attention layer. It is the kernel's own code: the
restriction search (:mod:`attncert.soft.certified.restriction`) calls it to test a
candidate ρ, and :mod:`attncert.kernel.soft.checker` calls it again, from the model and the
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
* position-wise steps (LayerNorm, activations, affine maps) by :mod:`attncert.kernel.soft.affine.forms`.

Supported: softmax heads with any mask and constant-in-x temperature, pre- and post-norm
LayerNorm or RMSNorm, final norm, ReLU/GELU/tanh-GELU/SiLU, gated MLPs (the product of two
forms, :func:`~attncert.kernel.soft.affine.forms.multiply`), the parallel residual, BOS/EOS,
readouts at one position or by mean; rotary heads (q and k forms rotated at each row's
position by arb-built cos/sin enclosures) and ALiBi (two constant coordinates,
q′·k′ = q·k − m(i − j)) — a row's position is known, so nothing is bounded over angles.
Layers after the first are computed for every row only when a later layer or a mean
readout needs them (:data:`BUDGET` bounds that work; beyond it the method is refused
with :class:`Unsupported`, and the box propagation of :mod:`attncert.kernel.soft.propagate`
still applies).

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.kernel.soft.affine.bound import restriction_range
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

from attncert.arith import enclose
from attncert.kernel.core import bounds as B
from attncert.kernel.soft.affine import forms as A
from attncert.kernel.soft.affine.heads import attention_layer, collapse, first_layer
from attncert.kernel.soft.affine.rows import BUDGET, Rows, Unsupported, make_rows, mix
from attncert.model.spec import AttentionKind, Model

__implements__ = ("Hahn Theorem 6",)

__all__ = [
    "AffineRange",
    "Rows",
    "Unsupported",
    "applicable",
    "make_rows",
    "restriction_range",
]

_U = 2.0**-53
_TINY = 2.0**-1000


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
    # per free position (in order), how far its choice moves the logit's affine part
    # (the spread of its coefficients over the symbols, largest over readout rows): a
    # diagnosis for the verifier's split choice, no part of the bound
    blame: tuple[float, ...] | None = None

    @property
    def decision(self) -> bool | None:
        if self.z_lo > 0:
            return True
        if self.z_hi < 0:
            return False
        return None


def _ffn(ffn, x: A.Form) -> A.Form:
    """W₂ act(W₁x + b₁) + b₂, or gated W₂ (act(W_g x + b_g) ⊙ (W₁x + b₁)) + b₂."""
    h = A.affine_map(x, ffn.w1, ffn.b1)
    if ffn.gated:
        gate = A.activation(A.affine_map(x, ffn.w_gate, ffn.b_gate), ffn.activation.value)
        hidden = A.multiply(gate, h)
    else:
        hidden = A.activation(h, ffn.activation.value)
    return A.affine_map(hidden, ffn.w2, ffn.b2)


def _finish(model: Model, li: int, f: A.Form, x: A.Form) -> A.Form:
    """The rest of layer ``li`` after its attention sublayer (residual included in ``f``):
    post-norm LN1, the FFN (with pre-norm LN2) and its residual, post-norm LN2. A
    parallel layer's FFN reads the layer input ``x`` (the same rows): y + attn(LN₁y) +
    FFN(LN₂y); ``x``'s private symbols are the first of ``f``'s, the FFN's new ones are
    appended after ``f``'s."""
    layer = model.layers[li]
    if layer.parallel:
        if layer.ffn is not None:
            inp = A.layer_norm(x, layer.norm2) if layer.norm2 is not None else x
            f = A.add(f, _ffn(layer.ffn, inp), shared=x.E.shape[-1])
        return f
    if not layer.pre_norm and layer.norm1 is not None:
        f = A.layer_norm(f, layer.norm1)
    if layer.ffn is not None:
        x = A.layer_norm(f, layer.norm2) if layer.pre_norm and layer.norm2 is not None else f
        ff = _ffn(layer.ffn, x)
        f = A.add(f, ff) if layer.residual else ff
    if not layer.pre_norm and layer.norm2 is not None:
        f = A.layer_norm(f, layer.norm2)
    return f


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
    z = collapse(A.affine_map(f, w[None], None))
    everything = np.arange(rows.n_tok)
    kr = rows.base[everything]
    groups = np.arange(rows.m)
    cs, gs, es, rs = mix(
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


def hard_head(model: Model) -> str | None:
    """The first head that is not a softmax head, in words (None if every head is)."""
    for li, layer in enumerate(model.layers):
        for hi, head in enumerate(layer.heads):
            if head.kind is not AttentionKind.SOFTMAX:
                return f"layers[{li}].heads[{hi}] is a {head.kind.value} hard-attention head"
    return None


def applicable(model: Model, n: int, free: int | None = None) -> str | None:
    """None if the affine propagation applies to ``model`` at length ``n`` with ``free``
    free positions (default n/4), else why not."""
    if not model.layers:
        return "a model without layers"
    hard = hard_head(model)
    if hard:
        return hard + " (affine forms bound softmax heads)"
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
    when the method does not apply, :class:`~attncert.kernel.core.bounds.Undecided` when
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
    x = enclose.embed(model, rows.tok, rows.pos, rows.n_tok).take(need)
    f = _finish(model, 0, f, A.point(x.mid, x.rad, rows.m, rows.a))
    for li in range(1, len(model.layers)):
        need = readout if (li == last and readout is not None) else every
        x = f.take(need)
        f, nb = attention_layer(model, li, f, rows, need)
        f = _finish(model, li, f, x)
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
        if rows.m:
            vals = A.choices(z.G[:, 0])[0]  # (R, m, A + 1)
            spread = (vals.max(axis=-1) - vals.min(axis=-1)).max(axis=0)
            return AffineRange(rho, base, z_lo, z_hi, per, boxed, tuple(map(float, spread)))
    return AffineRange(rho, base, z_lo, z_hi, per, boxed)
