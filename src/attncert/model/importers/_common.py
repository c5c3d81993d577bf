"""Pieces every importer shares: lazy torch, tensors to float64, the score scale,
LayerNorm modules, symbol tables and readouts.

Nothing here imports torch at module level; :func:`require_torch` does, with an error
that names the optional extra when it is missing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attncert.errors import SpecError, UnsupportedError
from attncert.model.spec import (
    AttentionKind,
    Layer,
    LayerNorm,
    Mask,
    NormPosition,
    Readout,
    Temperature,
)


def require_torch(what: str = "importing a PyTorch model") -> Any:
    """The ``torch`` module, or an :class:`UnsupportedError` naming the extra."""
    try:
        import torch
    except ModuleNotFoundError:
        raise UnsupportedError(
            f"{what} needs torch, which is not installed",
            expected="pip install 'attncert[torch]'",
        ) from None
    return torch


def to_numpy(t: Any) -> np.ndarray:
    """A tensor (or array) as a fresh float64 numpy array. float32/float16/bfloat16 →
    float64 is exact, so the imported weights are the trained weights, bit for bit."""
    if hasattr(t, "detach"):
        return t.detach().cpu().double().numpy().copy()
    return np.array(t, dtype=np.float64, copy=True)


def attention_kind(kind: AttentionKind | str, where: str) -> AttentionKind:
    try:
        return AttentionKind(kind)
    except ValueError:
        raise SpecError(
            f"unknown attention kind {kind!r}",
            where=where,
            expected=", ".join(repr(k.value) for k in AttentionKind),
        ) from None


def mask_value(mask: Mask | str, where: str) -> Mask:
    try:
        return Mask(mask)
    except ValueError:
        raise SpecError(
            f"unknown mask {mask!r}", where=where, expected=", ".join(m.value for m in Mask)
        ) from None


def scale_query(
    w_q: np.ndarray,
    b_q: np.ndarray,
    scale_sq: int,
    kind: AttentionKind,
    notes: dict[str, str],
) -> tuple[np.ndarray, np.ndarray, Temperature | None]:
    """Account for a score scale 1/√``scale_sq`` (1/√d_head in PyTorch and GPT-2).

    When ``scale_sq`` = 4^k the factor 2^-k is folded into W_Q and b_Q (exact: a power
    of two, checked by dividing back). Otherwise a softmax head gets the inverse
    temperature β = fl(1/√scale_sq), the float64 rounding of the true factor, which is
    recorded in ``notes``; a hard head drops the factor, a positive constant that
    changes neither an argmax nor a tie. Returns (W_Q, b_Q, temperature)."""
    soft = kind is AttentionKind.SOFTMAX
    k = round(math.log(scale_sq, 4)) if scale_sq > 0 else 0
    if 4**k == scale_sq:
        factor = 2.0**-k
        out_w, out_b = w_q * factor, b_q * factor
        if np.array_equal(out_w / factor, w_q) and np.array_equal(out_b / factor, b_q):
            notes[str(scale_sq)] = f"1/sqrt({scale_sq}) = 2^-{k} folded into w_q (exact)"
            return out_w, out_b, (Temperature(1.0) if soft else None)
    if soft:
        beta = 1.0 / math.sqrt(scale_sq)
        notes[str(scale_sq)] = f"softmax inverse temperature {beta!r} = fl(1/sqrt({scale_sq}))"
        return w_q, b_q, Temperature(beta)
    notes[str(scale_sq)] = f"positive factor 1/sqrt({scale_sq}) dropped (argmax- and tie-invariant)"
    return w_q, b_q, None


def fold_scale(
    w_q: np.ndarray,
    b_q: np.ndarray,
    scale_sq: int,
    kind: AttentionKind,
    notes: dict[str, str],
) -> tuple[np.ndarray, np.ndarray, Temperature | None]:
    """Fold a score scale 1/√``scale_sq`` into W_Q and b_Q for a head whose scores get an
    unscaled additive term (ALiBi), where a temperature would scale that term too: exact
    when ``scale_sq`` = 4^k, else fl(1/√scale_sq) times each weight, rounded (recorded in
    ``notes``). Returns (W_Q, b_Q, temperature 1 for softmax, None for hard heads)."""
    factor = 1.0 / math.sqrt(scale_sq)
    k = round(math.log(scale_sq, 4)) if scale_sq > 0 else 0
    exact = 4**k == scale_sq
    notes[str(scale_sq)] = (
        f"1/sqrt({scale_sq}) = 2^-{k} folded into w_q and b_q (exact; ALiBi term unscaled)"
        if exact
        else f"fl(1/sqrt({scale_sq})) = {factor!r} folded into w_q and b_q (each product "
        "rounded to float64; a temperature would also scale the ALiBi term)"
    )
    temp = Temperature(1.0) if kind is AttentionKind.SOFTMAX else None
    return w_q * factor, b_q * factor, temp


def layer_norm(module: Any, d: int, where: str, torch: Any) -> LayerNorm | None:
    """An ``nn.LayerNorm`` (or ``nn.Identity`` / None → no norm) as a :class:`LayerNorm`.

    ``elementwise_affine=False`` and ``bias=False`` become weight 1 / bias 0 exactly;
    RMSNorm and anything else are refused, naming ``where``."""
    nn = torch.nn
    if module is None or isinstance(module, nn.Identity):
        return None
    if type(module) is not nn.LayerNorm:
        raise UnsupportedError(
            f"{type(module).__name__} is not supported",
            where=where,
            expected="nn.LayerNorm, nn.Identity or None",
        )
    shape = tuple(module.normalized_shape)
    if shape != (d,):
        raise UnsupportedError(
            f"normalized_shape {shape} normalizes more than one position's {d} coordinates",
            where=f"{where}.normalized_shape",
            expected=f"({d},)",
        )
    weight = to_numpy(module.weight) if module.weight is not None else np.ones(d)
    bias = to_numpy(module.bias) if module.bias is not None else np.zeros(d)
    return LayerNorm(weight, bias, float(module.eps))


def symbol_vocab(
    alphabet: Sequence[str], bos: str | None, eos: str | None, vocab: Sequence[str] | None
) -> tuple[str, ...]:
    """The embedding rows' symbols: ``vocab``, or the alphabet then BOS, EOS."""
    if vocab is not None:
        return tuple(vocab)
    return tuple(alphabet) + tuple(s for s in (bos, eos) if s is not None)


def linear_readout_weight(weight: np.ndarray, bias: np.ndarray | None, where: str) -> tuple:
    """(w, b) of the accept logit from a classifier layer with 1 or 2 outputs:
    one output is the logit itself; two outputs (labels 0 = reject, 1 = accept) give
    the logit difference row₁ − row₀, whose sign is the predicted label."""
    b = np.zeros(weight.shape[0]) if bias is None else bias
    if weight.shape[0] == 1:
        return weight[0], float(b[0])
    if weight.shape[0] == 2:
        return weight[1] - weight[0], float(b[1] - b[0])
    raise UnsupportedError(
        f"a classifier with {weight.shape[0]} outputs",
        where=where,
        expected="1 output (the accept logit) or 2 (reject, accept)",
    )


def norm_only_layer(norm: LayerNorm | None) -> Layer:
    """A layer computing ``norm`` (y ↦ LN(y)): no heads, no MLP, residual, post-norm —
    the evaluator computes LN₁(y + 0) = LN₁(y) exactly."""
    return Layer((), None, True, norm, None, NormPosition.POST)


def check_finite(arr: np.ndarray, where: str) -> None:
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise SpecError(
            f"non-finite value {float(arr[bad])!r} at index {bad}",
            where=where,
            expected="finite weights",
        )


def plain_config(value: Any) -> Any:
    """A config value as plain JSON data."""
    if isinstance(value, Mapping):
        return {str(k): plain_config(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_config(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def token_table(
    alphabet: tuple[str, ...],
    bos: str | None,
    eos: str | None,
    token_ids: Mapping[str, int],
    config: Any,
    size_field: str = "vocab_size",
) -> tuple[tuple[str, ...], list[int]]:
    """The embedding rows' symbols (alphabet, BOS, EOS) and their token ids, each checked:
    present, an integer, in 0..``config.<size_field>`` − 1, distinct."""
    size = int(getattr(config, size_field))
    vocab = alphabet + tuple(s for s in (bos, eos) if s is not None)
    ids = []
    for s in vocab:
        if s not in token_ids:
            raise SpecError(
                f"no token id for symbol {s!r}",
                where="token_ids",
                expected="a token id for every alphabet symbol and BOS/EOS",
            )
        t = token_ids[s]
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
            raise SpecError(f"token id {t!r} for {s!r}", where="token_ids", expected="an integer")
        if not 0 <= int(t) < size:
            raise SpecError(
                f"token id {t} for {s!r}",
                where="token_ids",
                expected=f"0..{size - 1} ({size_field})",
            )
        ids.append(int(t))
    if len(set(ids)) != len(ids):
        raise SpecError(
            "two symbols map to the same token id", where="token_ids", expected="distinct ids"
        )
    return vocab, ids


def accept_readout(readout: Any, d: int, position: str | int, nn: Any) -> Readout:
    """The accept readout from what the caller passed: None (zeros), a :class:`Readout`,
    an ``nn.Linear`` (one output; weight and bias checked) or a weight vector."""
    if readout is None:
        return Readout(weight=np.zeros(d), position=position)
    if isinstance(readout, Readout):
        return readout
    if isinstance(readout, nn.Linear):
        bias = to_numpy(readout.bias) if readout.bias is not None else None
        w, b = linear_readout_weight(to_numpy(readout.weight), bias, "readout")
        return Readout(weight=w, bias=b, position=position)
    return Readout(weight=to_numpy(readout), position=position)
