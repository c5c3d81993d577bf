"""The blocks of a TransformerLens ``HookedTransformer`` (``transformer_lens/components/*.py``
is the reference):

* norms (:func:`norm`): ``normalization_type`` LN → LayerNorm ``w``, ``b``; RMS → RMSNorm
  ``w``; LNPre / RMSPre → weight 1, bias 0; None → no norm; ε = ``cfg.eps``;
* heads: ``W_Q``/``W_K``/``W_V`` [H, d, d_head] transposed per head, ``W_O`` [H, d_head, d]
  transposed, ``b_Q``/``b_K``/``b_V`` per head, ``b_O`` → head 0's b_O; grouped-query
  attention expanded as TransformerLens's ``repeat_interleave`` (query head h reads
  key/value head h // (H / H_kv)); the score scale q·k / ``attn.attn_scale`` (:func:`_scale`);
* MLP ``W_in``/``b_in``/``W_out``/``b_out``; ``gated_mlp``: TransformerLens computes
  W_out(act(x W_gate) ⊙ (x W_in) + b_in) + b_out, b_in added after the product, which is
  attncert's gated FFN with b₁ = b_gate = 0 and b₂ = b_out + W_out·b_in (the sum rounded in
  float64, recorded in ``meta``);
* ``parallel_attn_mlp`` → :attr:`Layer.parallel` (LN₁ for the heads, LN₂ for the MLP);
  ``attn_only`` → layers without MLP.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attncert.errors import UnsupportedError
from attncert.model.importers._common import fold_scale, scale_query, to_numpy
from attncert.model.importers.tlens_config import TLImport
from attncert.model.spec import (
    AttentionKind,
    FeedForward,
    Head,
    Layer,
    LayerNorm,
    NormKind,
    NormPosition,
    Temperature,
)


def norm(imp: TLImport, module: Any, where: str, norm_type: str | None) -> LayerNorm | None:
    """The norm ``module`` of ``norm_type`` (refused if its class is another one)."""
    d = imp.d
    if norm_type is None:
        return None
    eps = float(getattr(module, "eps", imp.cfg.eps))
    rms = norm_type.startswith("RMS")
    if norm_type.endswith("Pre"):
        weight, bias = np.ones(d), np.zeros(d)
    else:
        weight = to_numpy(module.w)
        b = getattr(module, "b", None)
        bias = np.zeros(d) if b is None or rms else to_numpy(b)
    expected = {"LN": "LayerNorm", "LNPre": "LayerNormPre", "RMS": "RMSNorm"}
    want = expected.get(norm_type, "RMSNormPre")
    if type(module).__name__ != want:
        raise UnsupportedError(
            f"{type(module).__name__} is not a {want}",
            where=where,
            expected=f"the {want} of cfg.normalization_type {imp.norm_type!r}",
        )
    return LayerNorm(weight, bias, eps, NormKind.RMS if rms else NormKind.LAYER)


def layer_norm_rows(rows: np.ndarray, ln: LayerNorm) -> np.ndarray:
    """LN of each row in float64, in TransformerLens's order of operations."""
    x = rows - rows.mean(axis=-1, keepdims=True)
    scale = np.sqrt((x * x).mean(axis=-1, keepdims=True) + ln.eps)
    return (x / scale) * ln.weight + ln.bias


def block(imp: TLImport, li: int, blk: Any) -> Layer:
    """``blocks[li]`` as one pre-norm layer."""
    where = f"blocks.{li}"
    norm1 = norm(imp, getattr(blk, "ln1", None), f"{where}.ln1", imp.norm_type)
    heads = _heads(imp, li, blk.attn, where)
    ffn, norm2 = None, None
    if not imp.attn_only:
        norm2 = norm(imp, getattr(blk, "ln2", None), f"{where}.ln2", imp.norm_type)
        ffn = _mlp(imp, blk.mlp, where)
    parallel = bool(imp.cfg.parallel_attn_mlp) and not imp.attn_only
    return Layer(tuple(heads), ffn, True, norm1, norm2, NormPosition.PRE, parallel=parallel)


def _heads(imp: TLImport, li: int, attn: Any, where: str) -> list[Head]:
    nh = int(imp.cfg.n_heads)
    wq, wk, wv, wo = (to_numpy(getattr(attn, n)) for n in ("W_Q", "W_K", "W_V", "W_O"))
    bq, bk, bv, bo = (to_numpy(getattr(attn, n)) for n in ("b_Q", "b_K", "b_V", "b_O"))
    if wk.shape[0] != nh or wv.shape[0] != nh:
        raise UnsupportedError(
            f"W_K/W_V with {wk.shape[0]}/{wv.shape[0]} heads for {nh} query heads",
            where=f"{where}.attn",
            expected=f"{nh} (grouped heads expanded by repeat_interleave)",
        )
    if li == 0 and imp.cfg.n_key_value_heads is not None:
        rep = nh // int(imp.cfg.n_key_value_heads)
        imp.notes["gqa"] = (
            f"{imp.cfg.n_key_value_heads} key/value heads shared by {nh} query heads: "
            f"query head h reads key/value head h // {rep} (repeat_interleave), expanded "
            f"into {nh} heads"
        )
    heads = []
    for h in range(nh):
        q_w, q_b, temp = _scale(
            imp, np.ascontiguousarray(wq[h].T), bq[h], float(attn.attn_scale), where
        )
        heads.append(
            Head(
                q_w,
                np.ascontiguousarray(wk[h].T),
                np.ascontiguousarray(wv[h].T),
                np.ascontiguousarray(wo[h].T),
                kind=imp.kind,
                mask=imp.mask,
                temperature=temp,
                b_q=q_b,
                b_k=bk[h],
                b_v=bv[h],
                b_o=bo if h == 0 else None,
                rotary=imp.rotary,
                alibi=None if imp.slopes is None else float(imp.slopes[h]),
            )
        )
    return heads


def _scale(
    imp: TLImport, w_q: np.ndarray, b_q: np.ndarray, s: float, where: str
) -> tuple[np.ndarray, np.ndarray, Temperature | None]:
    """Scores q·k / s (``attn.attn_scale``) as W_Q, b_Q and a temperature: when s = √k for
    an integer k by :func:`scale_query` (for ALiBi heads :func:`fold_scale`, since a
    temperature would scale the ALiBi term), else the temperature fl(1/s) (folded for
    ALiBi)."""
    if not (math.isfinite(s) and s > 0):
        raise UnsupportedError(
            f"attention scale {s!r}", where=f"{where}.attn.attn_scale", expected="a number > 0"
        )
    sq = round(s * s)
    if sq >= 1 and math.sqrt(sq) == s:
        if imp.slopes is not None:
            return fold_scale(w_q, b_q, sq, imp.kind, imp.score_scale)
        return scale_query(w_q, b_q, sq, imp.kind, imp.score_scale)
    beta = 1.0 / s
    soft = imp.kind is AttentionKind.SOFTMAX
    if imp.slopes is not None:
        imp.score_scale[repr(s)] = (
            f"fl(1/{s!r}) = {beta!r} folded into w_q and b_q (each product rounded)"
        )
        return w_q * beta, b_q * beta, (Temperature(1.0) if soft else None)
    if soft:
        imp.score_scale[repr(s)] = f"softmax inverse temperature {beta!r} = fl(1/{s!r})"
        return w_q, b_q, Temperature(beta)
    imp.score_scale[repr(s)] = f"positive factor 1/{s!r} dropped (argmax- and tie-invariant)"
    return w_q, b_q, None


def _mlp(imp: TLImport, mlp: Any, where: str) -> FeedForward:
    w_in, b_in = to_numpy(mlp.W_in), to_numpy(mlp.b_in)
    w_out, b_out = to_numpy(mlp.W_out), to_numpy(mlp.b_out)
    if not imp.cfg.gated_mlp:
        return FeedForward(w_in.T, b_in, w_out.T, b_out, activation=imp.activation)
    if type(mlp).__name__ != "GatedMLP":
        raise UnsupportedError(
            f"{type(mlp).__name__} is not a GatedMLP", where=f"{where}.mlp", expected="GatedMLP"
        )
    w_gate = to_numpy(mlp.W_gate)
    imp.notes["gated_mlp"] = (
        "TransformerLens's W_out(act(x W_gate) ⊙ (x W_in) + b_in) + b_out as attncert's "
        "W₂(act(W_g y) ⊙ (W₁ y)) + b₂ with b₂ = b_out + W_out·b_in (rounded in float64)"
    )
    b2 = b_out + w_out.T @ b_in
    return FeedForward(
        w_in.T,
        np.zeros(w_in.shape[1]),
        w_out.T,
        b2,
        activation=imp.activation,
        w_gate=w_gate.T,
    )
