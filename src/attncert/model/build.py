"""Building models from numpy arrays and importing PyTorch encoders.

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

:func:`model_from_torch` imports an ``nn.TransformerEncoder`` (or a list of
``nn.TransformerEncoderLayer``) whose LayerNorms are ``nn.Identity``:

* ``self_attn.in_proj_weight`` (3E × E) stacks W_Q, W_K, W_V; head h owns rows
  ``h·d_h … (h+1)·d_h`` of each block (d_h = E / nhead), and columns
  ``h·d_h … (h+1)·d_h`` of ``out_proj.weight`` are its W_O.
* PyTorch scores are (W_Q y)·(W_K y)/√d_h. If 1/√d_h is a power of two (d_h = 4^k)
  it is folded into W_Q, which is exact. Otherwise: softmax heads get the inverse
  temperature β = fl(1/√d_h) (a float64 rounding of the true factor — recorded in
  ``meta["torch"]["score_scale"]``); hard heads drop the factor, which cannot change
  an argmax or a tie since it is a positive constant.
* Biases (``in_proj_bias``, ``out_proj.bias``): our heads have none. When any is
  non-zero the model gets one extra residual coordinate (index d, recorded in
  ``meta["torch"]["bias_coordinate"]``) that the embedding sets to 1 and no layer
  writes to; W_Q, W_K, W_V get the bias as an extra column, and W_V an extra row
  carrying the constant 1 so that W_O's extra column adds ``out_proj.bias``.
  This is exact whenever a query sees at least one key (attention weights sum to
  1). The FFN biases map directly. ``bias_coordinate=False`` refuses instead.
* Dropout is ignored (evaluation semantics); the activation must be ReLU.
* Masks are not stored in PyTorch modules: pass ``mask=Mask.FUTURE`` for a causal
  ``src_mask``.

torch is an optional dependency (``pip install attncert[torch]``), imported lazily.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attncert.errors import SpecError, UnsupportedError
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


# ----------------------------------------------------------------------------------
# PyTorch import
# ----------------------------------------------------------------------------------


def _np(t: Any) -> np.ndarray:
    """A torch tensor as a float64 numpy array (float32/16 → float64 is exact)."""
    return t.detach().cpu().double().numpy().copy()


def _require_torch() -> Any:
    try:
        import torch
    except ModuleNotFoundError:
        raise UnsupportedError(
            "importing a PyTorch model needs torch, which is not installed",
            expected="pip install 'attncert[torch]'",
        ) from None
    return torch


def _is_identity_or_absent(module: Any, torch: Any) -> bool:
    return module is None or isinstance(module, torch.nn.Identity)


def model_from_torch(
    encoder: Any,
    *,
    alphabet: Sequence[str],
    embedding: Any,
    readout: Any = None,
    bos: str | None = None,
    eos: str | None = None,
    vocab: Sequence[str] | None = None,
    features: Sequence[PosFeature] = (),
    pos_weight: np.ndarray | None = None,
    table: np.ndarray | None = None,
    kind: AttentionKind | str = AttentionKind.SOFTMAX,
    mask: Mask | str = Mask.NONE,
    bias_coordinate: bool = True,
    position: str | int = "last",
    name: str = "torch-model",
) -> Model:
    """Import a LayerNorm-free ``nn.TransformerEncoder`` (see the module docstring).

    ``embedding``: an :class:`Embedding`, an ``nn.Embedding`` or a (|vocab|, d) array
    (rows in ``vocab`` order: by default the alphabet, then BOS, EOS); with an array
    or ``nn.Embedding``, ``features``/``pos_weight``/``table`` give positional terms.
    ``readout``: a :class:`Readout`, an ``nn.Linear(d, 1)``, a (d,) weight array, or
    None (zero weight: every string rejected; useful to inspect activations).
    ``kind``: softmax reproduces PyTorch; a hard kind reinterprets every head as
    hard attention over the same scores.
    """
    torch = _require_torch()
    nn = torch.nn
    if isinstance(encoder, nn.TransformerEncoder):
        if not _is_identity_or_absent(getattr(encoder, "norm", None), torch):
            raise UnsupportedError(
                f"the encoder's final norm is {type(encoder.norm).__name__}",
                where="encoder.norm",
                expected="None or nn.Identity (LayerNorm is not supported)",
            )
        torch_layers = list(encoder.layers)
    elif isinstance(encoder, nn.TransformerEncoderLayer):
        torch_layers = [encoder]
    else:
        torch_layers = list(encoder)
    kind = _kind(kind, "model_from_torch")
    try:
        mask = Mask(mask)
    except ValueError:
        raise SpecError(
            f"unknown mask {mask!r}", expected=", ".join(m.value for m in Mask)
        ) from None
    alphabet = tuple(alphabet)

    # --- embedding ---------------------------------------------------------------
    if isinstance(embedding, Embedding):
        emb = embedding
    else:
        word = (
            _np(embedding.weight)
            if isinstance(embedding, nn.Embedding)
            else np.asarray(embedding, float)
        )
        vocab_t = (
            tuple(vocab) if vocab is not None else alphabet + tuple(s for s in (bos, eos) if s)
        )
        emb = Embedding(
            vocab=vocab_t, word=word, features=tuple(features), pos_weight=pos_weight, table=table
        )
    d = emb.d

    # --- read every layer ----------------------------------------------------------
    raw = []
    need_bias = False
    for li, tl in enumerate(torch_layers):
        where = f"encoder.layers[{li}]"
        if not isinstance(tl, nn.TransformerEncoderLayer):
            raise UnsupportedError(
                f"{type(tl).__name__}", where=where, expected="nn.TransformerEncoderLayer"
            )
        for nname in ("norm1", "norm2"):
            if not _is_identity_or_absent(getattr(tl, nname, None), torch):
                raise UnsupportedError(
                    f"{nname} is {type(getattr(tl, nname)).__name__}",
                    where=f"{where}.{nname}",
                    expected="nn.Identity (set layer.norm1 = layer.norm2 = nn.Identity())",
                )
        act = tl.activation
        if not (act is torch.nn.functional.relu or isinstance(act, nn.ReLU)):
            raise UnsupportedError(
                f"activation {getattr(act, '__name__', type(act).__name__)}",
                where=f"{where}.activation",
                expected="ReLU",
            )
        attn = tl.self_attn
        e, nh = attn.embed_dim, attn.num_heads
        if e != d:
            raise SpecError(
                f"embed_dim {e} differs from the embedding width {d}", where=f"{where}.self_attn"
            )
        if attn._qkv_same_embed_dim:
            wq, wk, wv = np.split(_np(attn.in_proj_weight), 3, axis=0)
        else:
            wq, wk, wv = (_np(getattr(attn, f"{c}_proj_weight")) for c in "qkv")
        ib = attn.in_proj_bias
        bq, bk, bv = np.split(_np(ib), 3) if ib is not None else (np.zeros(e),) * 3
        wo = _np(attn.out_proj.weight)
        bo = _np(attn.out_proj.bias) if attn.out_proj.bias is not None else np.zeros(e)
        if getattr(attn, "bias_k", None) is not None or getattr(attn, "add_zero_attn", False):
            raise UnsupportedError("add_bias_kv / add_zero_attn", where=f"{where}.self_attn")
        ffn = {
            "w1": _np(tl.linear1.weight),
            "b1": _np(tl.linear1.bias)
            if tl.linear1.bias is not None
            else np.zeros(tl.linear1.out_features),
            "w2": _np(tl.linear2.weight),
            "b2": _np(tl.linear2.bias) if tl.linear2.bias is not None else np.zeros(d),
        }
        need_bias |= any(np.any(b != 0) for b in (bq, bk, bv, bo))
        raw.append((wq, wk, wv, wo, bq, bk, bv, bo, nh, ffn))
    if need_bias and not bias_coordinate:
        raise UnsupportedError(
            "the attention has non-zero biases (in_proj_bias / out_proj.bias) and "
            "bias_coordinate=False",
            expected="zero attention biases, or bias_coordinate=True",
        )

    # --- scaling ------------------------------------------------------------------------
    scale_note: dict[str, str] = {}

    def scaled_q(
        wq_h: np.ndarray, bq_h: np.ndarray, dh: int
    ) -> tuple[np.ndarray, np.ndarray, Temperature | None]:
        k = round(math.log(dh, 4)) if dh > 0 else 0
        if 4**k == dh:
            factor = 2.0**-k
            out_w, out_b = wq_h * factor, bq_h * factor
            if np.array_equal(out_w / factor, wq_h) and np.array_equal(out_b / factor, bq_h):
                scale_note[str(dh)] = f"1/sqrt({dh}) = 2^-{k} folded into w_q (exact)"
                return out_w, out_b, (Temperature(1.0) if kind is AttentionKind.SOFTMAX else None)
        if kind is AttentionKind.SOFTMAX:
            beta = 1.0 / math.sqrt(dh)
            scale_note[str(dh)] = f"softmax inverse temperature {beta!r} = fl(1/sqrt({dh}))"
            return wq_h, bq_h, Temperature(beta)
        scale_note[str(dh)] = f"positive factor 1/sqrt({dh}) dropped (argmax- and tie-invariant)"
        return wq_h, bq_h, None

    # --- assemble --------------------------------------------------------------------------
    dd = d + 1 if need_bias else d

    def pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
        return np.vstack([a, np.zeros((rows - a.shape[0], a.shape[1]))]) if rows > a.shape[0] else a

    layers = []
    for wq, wk, wv, wo, bq, bk, bv, bo, nh, ffn in raw:
        e = wq.shape[0]
        dh = e // nh
        heads = []
        for h in range(nh):
            sl = slice(h * dh, (h + 1) * dh)
            q_w, q_b, temp = scaled_q(wq[sl], bq[sl], dh)
            k_w, k_b, v_w, v_b, o_w = wk[sl], bk[sl], wv[sl], bv[sl], wo[:, sl]
            if need_bias:
                # extra input column = the constant coordinate; W_V also carries the 1 through
                q_w = np.hstack([q_w, q_b[:, None]])
                k_w = np.hstack([k_w, k_b[:, None]])
                v_w = np.vstack([np.hstack([v_w, v_b[:, None]]), np.eye(1, dd, d)])
                o_last = bo[:, None] if h == 0 else np.zeros((d, 1))
                o_w = pad_rows(np.hstack([o_w, o_last]), dd)
            heads.append(Head(q_w, k_w, v_w, o_w, kind=kind, mask=mask, temperature=temp))
        w1, b1, w2, b2 = ffn["w1"], ffn["b1"], ffn["w2"], ffn["b2"]
        if need_bias:
            w1 = np.hstack([w1, np.zeros((w1.shape[0], 1))])
            w2 = pad_rows(w2, dd)
            b2 = np.append(b2, 0.0)
        layers.append(Layer(tuple(heads), FeedForward(w1, b1, w2, b2)))

    if need_bias:
        emb = Embedding(
            vocab=emb.vocab,
            word=np.hstack([emb.word, np.ones((emb.word.shape[0], 1))]),
            features=emb.features,
            pos_weight=pad_rows(emb.pos_weight, dd) if emb.features else None,
            table=None
            if emb.table is None
            else np.hstack([emb.table, np.zeros((emb.table.shape[0], 1))]),
        )

    if readout is None:
        ro = Readout(weight=np.zeros(dd), position=position)
    elif isinstance(readout, Readout):
        ro = readout
    elif isinstance(readout, nn.Linear):
        if readout.out_features != 1:
            raise SpecError(
                f"readout has {readout.out_features} outputs",
                where="readout",
                expected="nn.Linear(d, 1)",
            )
        b = float(_np(readout.bias)[0]) if readout.bias is not None else 0.0
        ro = Readout(weight=_np(readout.weight)[0], bias=b, position=position)
    else:
        ro = Readout(weight=np.asarray(readout, dtype=np.float64), position=position)
    if need_bias and ro.weight.shape == (d,):
        ro = Readout(
            weight=np.append(ro.weight, 0.0),
            bias=ro.bias,
            position=ro.position,
            output_coords=ro.output_coords,
            lm_weight=None
            if ro.lm_weight is None
            else np.hstack([ro.lm_weight, np.zeros((ro.lm_weight.shape[0], 1))]),
            lm_bias=ro.lm_bias,
            lm_symbols=ro.lm_symbols,
        )

    torch_meta: dict[str, Any] = {
        "layers": len(layers),
        "heads": [len(layer.heads) for layer in layers],
        "kind": kind.value,
        "mask": mask.value,
        "score_scale": scale_note,
    }
    if need_bias:
        torch_meta["bias_coordinate"] = d
    return Model(
        alphabet=alphabet,
        embedding=emb,
        layers=tuple(layers),
        readout=ro,
        bos=bos,
        eos=eos,
        name=name,
        meta={"torch": torch_meta},
    )
