"""Building models from numpy arrays.

Flat array dictionaries (:func:`model_from_arrays`, inverse :func:`model_to_arrays`)
use these keys (l = layer, h = head, both 0-based and contiguous)::

    embedding.word            (|vocab|, d)    required
    embedding.pos_weight      (d, F)          optional (F = len(features))
    embedding.table           (max_len, d)    optional learned absolute positions
    layers.{l}.heads.{h}.w_q  (d_k, d)        all four required per head
    layers.{l}.heads.{h}.w_k  (d_k, d)
    layers.{l}.heads.{h}.w_v  (d_v, d)
    layers.{l}.heads.{h}.w_o  (d, d_v)
    layers.{l}.ffn.w1 / .b1 / .w2 / .b2       (d_ff, d) (d_ff,) (d, d_ff) (d,): all or none
    layers.{l}                (any shape)     marks a layer with no heads and no FFN
    readout.weight            (d,)            required
    readout.bias              () or (1,)      optional, default 0
    readout.lm_weight / readout.lm_bias       optional next-symbol head

Any other key is an error (a typo would otherwise silently drop a weight).

The PyTorch and Hugging Face importers live in :mod:`attncert.model.importers`;
:func:`model_from_torch` is re-exported here for existing callers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attncert.errors import SpecError
from attncert.model.importers.torch_encoder import model_from_torch
from attncert.model.positional import PosFeature
from attncert.model.spec import (
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    Mask,
    Model,
    Readout,
    Temperature,
)

__all__ = ["model_from_arrays", "model_from_torch", "model_to_arrays"]

_HEAD_KEYS = ("w_q", "w_k", "w_v", "w_o")
_FFN_KEYS = ("w1", "b1", "w2", "b2")
_KEY_RE = re.compile(
    r"layers\.(\d+)(?:\.(heads)\.(\d+)\.(w_q|w_k|w_v|w_o)|\.(ffn)\.(w1|b1|w2|b2))?"
)
_TOP_KEYS = (
    "embedding.word",
    "embedding.pos_weight",
    "embedding.table",
    "readout.weight",
    "readout.bias",
    "readout.lm_weight",
    "readout.lm_bias",
)

PerHead = Any  # a single value, or one sequence per layer with one value per head


def _per_head(value: PerHead, li: int, hi: int, what: str) -> Any:
    """Value for head (li, hi): a scalar setting, or ``value[li][hi]``."""
    if value is None or isinstance(value, (str, AttentionKind, Mask, Temperature)):
        return value
    try:
        row = value[li]
        if isinstance(row, (str, AttentionKind, Mask, Temperature)):
            raise TypeError("not nested")
        return row[hi]
    except (IndexError, KeyError, TypeError):
        raise SpecError(
            f"no {what} given for layer {li} head {hi}",
            where=what,
            expected="one value for all heads, or one list per layer with one value per head",
        ) from None


def _array(arrays: Mapping[str, Any], key: str, ndim: int | tuple[int, ...]) -> np.ndarray:
    try:
        arr = np.array(arrays[key], dtype=np.float64)
    except (TypeError, ValueError):
        raise SpecError("not a numeric array", where=f"arrays[{key!r}]") from None
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in dims:
        raise SpecError(
            f"array of shape {arr.shape}",
            where=f"arrays[{key!r}]",
            expected=" or ".join(f"{k}-dimensional" for k in dims),
        )
    return arr


def _kind(value: Any, where: str) -> AttentionKind:
    try:
        return AttentionKind(value)
    except ValueError:
        raise SpecError(
            f"unknown attention kind {value!r}",
            where=f"{where}.kind",
            expected=", ".join(repr(k.value) for k in AttentionKind),
        ) from None


def _key_of_field(where: str) -> str:
    """``layers[0].heads[1].w_q`` → ``layers.0.heads.1.w_q`` (the array-dict key)."""
    return re.sub(r"\[(\d+)\]", r".\1", where)


def model_from_arrays(
    arrays: Mapping[str, Any],
    *,
    alphabet: Sequence[str],
    vocab: Sequence[str] | None = None,
    bos: str | None = None,
    eos: str | None = None,
    kind: PerHead = AttentionKind.LEFTMOST,
    mask: PerHead = Mask.NONE,
    temperature: PerHead = None,
    features: Sequence[PosFeature] = (),
    residual: bool = True,
    position: str | int = "last",
    output_coords: Sequence[int] = (),
    lm_symbols: Sequence[str] = (),
    name: str = "model",
    meta: Mapping[str, Any] | None = None,
) -> Model:
    """A :class:`Model` from a flat dict of arrays (keys in the module docstring).

    ``vocab`` (the rows of ``embedding.word``) defaults to the alphabet followed by
    BOS and EOS if given. ``kind``/``mask``/``temperature`` are one value for all
    heads or nested per layer and head. Errors name the offending key.
    """
    alphabet = tuple(alphabet)
    layer_heads: dict[int, set[int]] = {}
    layer_ffn: dict[int, set[str]] = {}
    for key in arrays:
        if not isinstance(key, str):
            raise SpecError(f"key {key!r} is not a string", where="arrays")
        if key in _TOP_KEYS:
            continue
        m = _KEY_RE.fullmatch(key)
        if m is None:
            raise SpecError(
                f"unknown key {key!r}",
                where="arrays",
                expected="keys like 'embedding.word', 'layers.0.heads.1.w_q', 'layers.0.ffn.w1', "
                "'readout.weight'",
            )
        li = int(m.group(1))
        layer_heads.setdefault(li, set())
        layer_ffn.setdefault(li, set())
        if m.group(2):
            layer_heads[li].add(int(m.group(3)))
        elif m.group(5):
            layer_ffn[li].add(m.group(6))
    for required in ("embedding.word", "readout.weight"):
        if required not in arrays:
            raise SpecError(f"missing key {required!r}", where="arrays")
    n_layers = max(layer_heads, default=-1) + 1
    for li in range(n_layers):
        if li not in layer_heads:
            raise SpecError(
                f"missing layer {li} (layers must be numbered 0..{n_layers - 1})",
                where=f"arrays['layers.{li}.…']",
            )
    layers = []
    for li in range(n_layers):
        n_heads = max(layer_heads[li], default=-1) + 1
        heads = []
        for hi in range(n_heads):
            prefix = f"layers.{li}.heads.{hi}"
            for k in _HEAD_KEYS:
                if f"{prefix}.{k}" not in arrays:
                    raise SpecError(f"missing key '{prefix}.{k}'", where="arrays")
            mats = {k: _array(arrays, f"{prefix}.{k}", 2) for k in _HEAD_KEYS}
            head_kind = _kind(_per_head(kind, li, hi, "kind") or AttentionKind.LEFTMOST, prefix)
            temp = _per_head(temperature, li, hi, "temperature")
            try:
                heads.append(
                    Head(
                        **mats,
                        kind=head_kind,
                        mask=_per_head(mask, li, hi, "mask") or Mask.NONE,
                        temperature=temp if head_kind is AttentionKind.SOFTMAX else None,
                    )
                )
            except SpecError as err:
                raise SpecError(
                    err.message, where=f"{prefix}.{err.where}", expected=err.expected
                ) from None
        ffn = None
        present = layer_ffn[li]
        if present:
            missing = [k for k in _FFN_KEYS if k not in present]
            if missing:
                raise SpecError(
                    f"missing key 'layers.{li}.ffn.{missing[0]}'",
                    where="arrays",
                    expected="all of w1, b1, w2, b2 for a feed-forward sublayer",
                )
            ffn = FeedForward(
                **{
                    k: _array(arrays, f"layers.{li}.ffn.{k}", 2 if k[0] == "w" else 1)
                    for k in _FFN_KEYS
                }
            )
        layers.append(Layer(tuple(heads), ffn, residual))
    bias = 0.0
    if "readout.bias" in arrays:
        b = _array(arrays, "readout.bias", (0, 1))
        if b.size != 1:
            raise SpecError(f"shape {b.shape}", where="arrays['readout.bias']", expected="a scalar")
        bias = float(b.reshape(()))
    vocab = (
        tuple(vocab)
        if vocab is not None
        else alphabet + tuple(s for s in (bos, eos) if s is not None)
    )
    features = tuple(features)
    try:
        model = Model(
            alphabet=alphabet,
            embedding=Embedding(
                vocab=vocab,
                word=_array(arrays, "embedding.word", 2),
                features=features,
                pos_weight=_array(arrays, "embedding.pos_weight", 2)
                if "embedding.pos_weight" in arrays
                else None,
                table=_array(arrays, "embedding.table", 2) if "embedding.table" in arrays else None,
            ),
            layers=tuple(layers),
            readout=Readout(
                weight=_array(arrays, "readout.weight", 1),
                bias=bias,
                position=position,
                output_coords=tuple(output_coords),
                lm_weight=_array(arrays, "readout.lm_weight", 2)
                if "readout.lm_weight" in arrays
                else None,
                lm_bias=_array(arrays, "readout.lm_bias", 1)
                if "readout.lm_bias" in arrays
                else None,
                lm_symbols=tuple(lm_symbols),
            ),
            bos=bos,
            eos=eos,
            name=name,
            meta=dict(meta or {}),
        )
    except SpecError as err:
        where = err.where or ""
        key = _key_of_field(where)
        if re.fullmatch(r"(embedding|readout|layers)\.[\w.]+", key) and not key.endswith(
            ("vocab", "output_coords", "lm_symbols")
        ):
            where = f"arrays[{key!r}]"
        raise SpecError(err.message, where=where, expected=err.expected) from None
    return model


def model_to_arrays(model: Model) -> dict[str, np.ndarray]:
    """The flat array dictionary of ``model`` (inverse of :func:`model_from_arrays`
    for the arrays; settings such as kinds and masks are not arrays)."""
    out: dict[str, np.ndarray] = {"embedding.word": model.embedding.word}
    if model.embedding.features:
        out["embedding.pos_weight"] = model.embedding.pos_weight
    if model.embedding.table is not None:
        out["embedding.table"] = model.embedding.table
    for li, layer in enumerate(model.layers):
        if not layer.heads and layer.ffn is None:
            out[f"layers.{li}"] = np.zeros(0)
        for hi, h in enumerate(layer.heads):
            for k in _HEAD_KEYS:
                out[f"layers.{li}.heads.{hi}.{k}"] = getattr(h, k)
        if layer.ffn is not None:
            for k in _FFN_KEYS:
                out[f"layers.{li}.ffn.{k}"] = getattr(layer.ffn, k)
    r = model.readout
    out["readout.weight"] = r.weight
    out["readout.bias"] = np.array(r.bias)
    if r.lm_weight is not None:
        out["readout.lm_weight"] = r.lm_weight
        out["readout.lm_bias"] = r.lm_bias
    return out
