"""A model's position-wise maps, evaluated rigorously in a :class:`~attncert.arith.field.Field`.

Hahn's Theorem 1 lets f_act and f_att be arbitrary functions of one position's
activations; for a concrete model (:mod:`attncert.model.spec`) they are affine maps,
LayerNorm, the FFN activation and the readout. This module evaluates exactly those,
row by row, on flint matrices whose rows are activation vectors:

* in the exact field (rational models: no LayerNorm, ReLU only) every result is the
  exact rational;
* in a ball field every result is an arb enclosure (LayerNorm's and RMSNorm's
  1/√(σ²+ε), GELU's erf, tanh-GELU's tanh and √(2/π), SiLU's e^(−x), and the rotary
  angles' cos and sin are arb functions with rigorous error bounds).

The version-3 kinds (:mod:`attncert.model.spec`): RMSNorm, SiLU and gated MLPs, GPT-NeoX's
parallel residual (:func:`finish_layer`), rotary queries and keys (:func:`rotate_rows`:
cos and sin of t·base^(−2k/dim) in arb, never taken from floats) and ALiBi's exact
term −m·(i − j) as two more query and key coordinates (:func:`position_rows`).

Matrix products run in C (``fmpq_mat`` / ``arb_mat``); the element-wise maps loop in
Python. Both the search (:mod:`attncert.hard.collapse`) and the kernel use these maps:
they are the model's arithmetic, not a decision procedure (every decision is made by
the caller with :meth:`Field.sign` / :meth:`Field.compare`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from flint import arb

from attncert.arith.field import Field, Matrix, NeedPrecision, Number
from attncert.model.spec import Activation, Layer, LayerNorm, Model, Rotary

GELU_TANH_CUBIC = 0.044715  # the float64 nearest 0.044715, as in PyTorch and GPT-2


@dataclass(frozen=True, eq=False)
class NormMaps:
    weight: list[Number]
    bias: list[Number]
    eps: Number
    rms: bool = False


@dataclass(frozen=True, eq=False)
class HeadMaps:
    wq_t: Matrix  # d × d_k
    bq: Matrix | None  # 1 × d_k (None: zero)
    wk_t: Matrix
    bk: Matrix | None
    wvo_t: Matrix  # d × d: W_Vᵀ W_Oᵀ (the value-output map of one attended row)
    bvo: Matrix | None  # 1 × d: b_V W_Oᵀ
    bo: Matrix  # 1 × d


@dataclass(frozen=True, eq=False)
class LayerMaps:
    layer: Layer
    heads: tuple[HeadMaps, ...]
    norm1: NormMaps | None
    norm2: NormMaps | None
    w1_t: Matrix | None
    b1: Matrix | None
    w2_t: Matrix | None
    b2: Matrix | None
    wg_t: Matrix | None = None  # gated MLP: W_gateᵀ
    bg: Matrix | None = None


@dataclass(frozen=True, eq=False)
class ModelMaps:
    """The weights of ``model`` as matrices of ``field`` (built once per model and field)."""

    model: Model
    field: Field
    layers: tuple[LayerMaps, ...]
    final_norm: NormMaps | None
    readout: Matrix  # d × 1
    readout_bias: Number


_CACHE: weakref.WeakKeyDictionary[Model, dict[int | None, ModelMaps]] = weakref.WeakKeyDictionary()


def model_maps(model: Model, field: Field) -> ModelMaps:
    """Field copies of every weight of ``model`` (cached per model and precision)."""
    per = _CACHE.setdefault(model, {})
    maps = per.get(field.prec)
    if maps is None:
        maps = per[field.prec] = _build(model, field)
    return maps


def _norm(field: Field, norm: LayerNorm | None) -> NormMaps | None:
    if norm is None:
        return None
    return NormMaps(
        [field.num(v) for v in norm.weight.tolist()],
        [field.num(v) for v in norm.bias.tolist()],
        field.num(norm.eps),
        norm.rms,
    )


def _head(field: Field, h) -> HeadMaps:
    wo_t = field.mat(h.w_o.T)
    return HeadMaps(
        wq_t=field.mat(h.w_q.T),
        bq=None if h.b_q is None else field.row(h.b_q),
        wk_t=field.mat(h.w_k.T),
        bk=None if h.b_k is None else field.row(h.b_k),
        wvo_t=field.mat(h.w_v.T) * wo_t,
        bvo=None if h.b_v is None else field.row(h.b_v) * wo_t,
        bo=field.row(h.bias("b_o")),
    )


def _build(model: Model, field: Field) -> ModelMaps:
    layers = []
    for layer in model.layers:
        heads = tuple(_head(field, h) for h in layer.heads)
        f = layer.ffn
        layers.append(
            LayerMaps(
                layer=layer,
                heads=heads,
                norm1=_norm(field, layer.norm1),
                norm2=_norm(field, layer.norm2),
                w1_t=None if f is None else field.mat(f.w1.T),
                b1=None if f is None else field.row(f.b1),
                w2_t=None if f is None else field.mat(f.w2.T),
                b2=None if f is None else field.row(f.b2),
                wg_t=None if f is None or not f.gated else field.mat(f.w_gate.T),
                bg=None if f is None or not f.gated else field.row(f.b_gate),
            )
        )
    r = model.readout
    return ModelMaps(
        model=model,
        field=field,
        layers=tuple(layers),
        final_norm=_norm(field, model.final_norm),
        readout=field.mat(r.weight.reshape(-1, 1)),
        readout_bias=field.num(r.bias),
    )


# --------------------------------------------------------------------------- elementwise
def add_bias(field: Field, m: Matrix, b: Matrix | None) -> Matrix:
    """m + 1·b (b a 1 × k row added to every row of m; None = zero)."""
    if b is None:
        return m
    ones = field.matrix(m.nrows(), 1, [1] * m.nrows())
    return m + ones * b


def _square(field: Field, c: Number) -> Number:
    if field.exact or c > 0 or c < 0:
        return c * c
    m = c.abs_upper()
    return arb(0).union((m * m).upper())  # [0, max|c|²] (a ball straddling 0)


def layer_norm_rows(field: Field, norm: NormMaps, m: Matrix) -> Matrix:
    """LN of every row: γ ⊙ (x − μ)/√(σ² + ε) + β (σ² the biased variance); RMSNorm
    (``norm.rms``): γ ⊙ x/√(mean(x²) + ε) + β. In the exact field this is refused
    (irrational); callers use a ball field for such models."""
    if field.exact:
        raise ValueError("LayerNorm is irrational: evaluate the model in a ball field")
    d = m.ncols()
    ents = m.entries()
    out: list[Number] = []
    inv_d = arb(1) / d
    for k in range(m.nrows()):
        x = ents[k * d : (k + 1) * d]
        mu = arb(0) if norm.rms else sum(x, arb(0)) * inv_d
        c = list(x) if norm.rms else [v - mu for v in x]
        var = sum((_square(field, v) for v in c), arb(0)) * inv_d
        s = var + norm.eps
        if not s > 0:
            raise NeedPrecision("a LayerNorm variance + ε is not separated from 0")
        r = s.rsqrt()
        out.extend(v * r * g + b for v, g, b in zip(c, norm.weight, norm.bias, strict=True))
    return field.matrix(m.nrows(), d, out)


def relu(field: Field, x: Number) -> Number:
    if field.exact:
        return x if x > 0 else field.zero()
    if x > 0:
        return x
    if x < 0 or x.is_zero():
        return arb(0)
    return arb(0).union(x.upper())  # [0, max(x)]


def activation_rows(field: Field, activation: Activation, m: Matrix) -> Matrix:
    """The FFN non-linearity applied to every entry."""
    ents = m.entries()
    if activation is Activation.RELU:
        out = [relu(field, x) for x in ents]
    elif field.exact:
        raise ValueError(f"{activation.value} is irrational: evaluate in a ball field")
    elif activation is Activation.GELU:
        inv_sqrt2 = arb(2).rsqrt()
        out = [x * (1 + (x * inv_sqrt2).erf()) / 2 for x in ents]
    elif activation is Activation.SILU:
        out = [x / (1 + (-x).exp()) for x in ents]
    else:
        k = (arb(2) / arb.pi()).sqrt()
        c = arb(GELU_TANH_CUBIC)
        out = [x * (1 + (k * (x + c * x * x * x)).tanh()) / 2 for x in ents]
    return field.matrix(m.nrows(), m.ncols(), out)


# --------------------------------------------------------------------------- sublayers
def attention_inputs(maps: ModelMaps, li: int, x: Matrix) -> Matrix:
    """What the heads of layer ``li`` (0-based) read: LN₁(x) for pre-norm, else x."""
    lm = maps.layers[li]
    if lm.layer.pre_norm and lm.norm1 is not None:
        return layer_norm_rows(maps.field, lm.norm1, x)
    return x


def rotation(field: Field, rot: Rotary, t: int) -> tuple[list[Number], list[Number]]:
    """(cos, sin) of the rotary angles (t/scale)·base^(−2k/dim), k < dim/2, in arb
    (Rotary; never from floats). Irrational: refused in the exact field."""
    if field.exact:
        raise ValueError("rotary angles are irrational: evaluate the model in a ball field")
    base, scale = arb(rot.base), arb(rot.scale)
    cos, sin = [], []
    for k in range(rot.dim // 2):
        theta = arb(t) / scale * base ** (arb(-2 * k) / rot.dim)
        cos.append(theta.cos())
        sin.append(theta.sin())
    return cos, sin


def rotate_rows(field: Field, rot: Rotary | None, m: Matrix, positions: list[int]) -> Matrix:
    """Rows of ``m`` (queries or keys) rotated by their 0-based token positions
    ``positions`` (RoPE, rotate-half layout: coordinate k pairs with k + dim/2; the
    coordinates past ``dim`` are kept); ``m`` itself without a rotary embedding."""
    if rot is None:
        return m
    ncols = m.ncols()
    ents = m.entries()
    h = rot.dim // 2
    out: list[Number] = []
    for r, t in enumerate(positions):
        x = ents[r * ncols : (r + 1) * ncols]
        cos, sin = rotation(field, rot, t)
        first = [x[k] * cos[k] - x[k + h] * sin[k] for k in range(h)]
        second = [x[k + h] * cos[k] + x[k] * sin[k] for k in range(h)]
        out.extend(first + second + list(x[rot.dim :]))
    return field.matrix(len(positions), ncols, out)


def position_rows(
    field: Field, head, q: Matrix, k: Matrix, positions: list[int]
) -> tuple[Matrix, Matrix]:
    """Queries and keys of rows at 0-based token ``positions`` such that every score is a
    dot product (as :func:`attncert.arith.enclose.projections_at`): rotated by RoPE
    (:func:`rotate_rows`), and for ALiBi extended to q′ = [q, m, −m·i], k′ = [k, j, 1]
    (q′·k′ = q·k − m·(i − j), exact in the field)."""
    q = rotate_rows(field, head.rotary, q, positions)
    k = rotate_rows(field, head.rotary, k, positions)
    if head.alibi is None:
        return q, k
    m = field.num(head.alibi)
    dq, dk = q.ncols(), k.ncols()
    qe, ke = q.entries(), k.entries()
    q_out: list[Number] = []
    k_out: list[Number] = []
    for r, t in enumerate(positions):
        q_out.extend([*qe[r * dq : (r + 1) * dq], m, -m * field.num(t)])
        k_out.extend([*ke[r * dk : (r + 1) * dk], field.num(t), field.num(1)])
    n = len(positions)
    return field.matrix(n, dq + 2, q_out), field.matrix(n, dk + 2, k_out)


def projections(maps: ModelMaps, li: int, hi: int, u: Matrix) -> tuple[Matrix, Matrix, Matrix]:
    """(Q, K, OV) for head ``hi`` of layer ``li``: Q = u W_Qᵀ + b_Q, K = u W_Kᵀ + b_K,
    OV = (u W_Vᵀ + b_V) W_Oᵀ (the head output of attending to one row, before b_O).
    Q and K are not rotated here (a row's value does not know its position):
    :func:`rotate_rows` does that for the caller that does."""
    f = maps.field
    hm = maps.layers[li].heads[hi]
    q = add_bias(f, u * hm.wq_t, hm.bq)
    k = add_bias(f, u * hm.wk_t, hm.bk)
    ov = add_bias(f, u * hm.wvo_t, hm.bvo)
    return q, k, ov


def finish_layer(maps: ModelMaps, li: int, x: Matrix, attention: Matrix) -> Matrix:
    """The rest of layer ``li`` after attention: ``attention`` holds, per row, the sum
    over heads of (W_O·attn + b_O). Residual add, the norms in their places, the FFN."""
    f = maps.field
    lm = maps.layers[li]
    layer = lm.layer
    pre = layer.pre_norm
    if layer.parallel:  # GPT-NeoX: x + attn(LN₁(x)) + FFN(LN₂(x)) (the FFN reads x)
        out = x + attention
        if lm.w1_t is not None:
            inp = layer_norm_rows(f, lm.norm2, x) if lm.norm2 is not None else x
            out = out + _ffn_rows(lm, f, inp)
        return out
    after = x + attention if layer.residual else attention
    if not pre and lm.norm1 is not None:
        after = layer_norm_rows(f, lm.norm1, after)
    out = after
    if lm.w1_t is not None:
        inp = layer_norm_rows(f, lm.norm2, after) if pre and lm.norm2 is not None else after
        ff = _ffn_rows(lm, f, inp)
        out = after + ff if layer.residual else ff
    if not pre and lm.norm2 is not None:
        out = layer_norm_rows(f, lm.norm2, out)
    return out


def _ffn_rows(lm: LayerMaps, f: Field, inp: Matrix) -> Matrix:
    """W₂ act(W₁ y + b₁) + b₂, or gated W₂ (act(W_g y + b_g) ⊙ (W₁ y + b₁)) + b₂."""
    act = lm.layer.ffn.activation
    up = add_bias(f, inp * lm.w1_t, lm.b1)
    if lm.wg_t is None:
        hidden = activation_rows(f, act, up)
    else:
        gate = activation_rows(f, act, add_bias(f, inp * lm.wg_t, lm.bg)).entries()
        hidden = f.matrix(
            up.nrows(), up.ncols(), [g * v for g, v in zip(gate, up.entries(), strict=True)]
        )
    return add_bias(f, hidden * lm.w2_t, lm.b2)


def final_rows(maps: ModelMaps, y: Matrix) -> Matrix:
    """The activations the readout reads: the final norm applied, if the model has one."""
    if maps.final_norm is None:
        return y
    return layer_norm_rows(maps.field, maps.final_norm, y)


def readout_terms(maps: ModelMaps, y: Matrix) -> list[Number]:
    """w · r for every row r of the final (normed) activations (without the bias)."""
    return (final_rows(maps, y) * maps.readout).entries()
