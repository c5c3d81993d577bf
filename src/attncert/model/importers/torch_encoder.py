"""Import a PyTorch ``nn.TransformerEncoder`` (or its layers) as an attncert :class:`Model`.

What maps to what (PyTorch 2.x, ``torch/nn/modules/transformer.py``):

* ``self_attn.in_proj_weight`` (3E × E) stacks W_Q, W_K, W_V (or, with
  ``_qkv_same_embed_dim`` False, ``q_proj_weight``/``k_proj_weight``/``v_proj_weight``);
  head h owns rows ``h·d_h … (h+1)·d_h`` of each, and columns ``h·d_h … (h+1)·d_h`` of
  ``out_proj.weight`` are its W_O. ``in_proj_bias`` gives the first-class biases
  b_Q, b_K, b_V; ``out_proj.bias`` is added once per layer, so it becomes head 0's b_O.
* Scores are (W_Q u + b_Q)·(W_K u + b_K)/√d_h: folded into W_Q, b_Q when d_h = 4^k
  (exact), else a softmax inverse temperature fl(1/√d_h) (see
  :func:`attncert.model.importers._common.scale_query`), recorded in
  ``meta["torch"]["score_scale"]``.
* ``norm1``/``norm2`` (``nn.LayerNorm``; ``nn.Identity`` = none) with ``norm_first``
  True → pre-norm, False → post-norm (:class:`attncert.model.spec.NormPosition`);
  the encoder's final ``norm`` → :attr:`Model.final_norm`. ``elementwise_affine=False``
  or ``bias=False`` norms become weight 1 / bias 0.
* ``activation``: ``F.relu``/``nn.ReLU`` → relu; ``F.gelu``/``nn.GELU()`` → gelu (erf);
  ``nn.GELU(approximate="tanh")`` → gelu_tanh, which is what the module computes on
  PyTorch's slow path (its fused fast path computes erf-GELU for any ``nn.GELU``).
* Masks are call-time arguments in PyTorch, not module state: pass ``causal=True``
  (what ``is_causal=True`` with ``generate_square_subsequent_mask`` computes) or
  ``mask=`` a :class:`Mask` or the explicit (N × N) float/bool mask tensor you pass to
  PyTorch, which is recognized as one of the :class:`Mask` patterns or refused. The
  mask and where it came from are recorded in ``meta["torch"]``.
* ``batch_first`` only changes the tensor layout; it is recorded, not needed.
* Dropout is the identity in eval mode; a module in training mode with dropout > 0 is
  refused (its forward pass is random).

Refused, naming module and field (:class:`UnsupportedError`): RMSNorm or other norms,
custom activations, ``add_bias_kv``, ``add_zero_attn``, key padding masks, subclasses
of the PyTorch layers (their forward may differ), dropout in training mode.

torch is an optional dependency (``pip install 'attncert[torch]'``), imported lazily.

Python::

    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, activation="gelu",
                                norm_first=True), 2, norm=nn.LayerNorm(16)).eval()
    model = model_from_torch(enc, alphabet="01", bos="^", embedding=nn.Embedding(3, 16),
                             readout=nn.Linear(16, 1), position="first", causal=True)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from attncert.errors import SpecError, UnsupportedError
from attncert.model.importers._common import (
    accept_readout,
    attention_kind,
    layer_norm,
    mask_value,
    require_torch,
    scale_query,
    symbol_vocab,
    to_numpy,
)
from attncert.model.positional import PosFeature
from attncert.model.spec import (
    Activation,
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    LayerNorm,
    Mask,
    Model,
    NormPosition,
)


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
    pos_weight: Any = None,
    table: Any = None,
    kind: AttentionKind | str = AttentionKind.SOFTMAX,
    mask: Any = Mask.NONE,
    causal: bool = False,
    key_padding_mask: Any = None,
    position: str | int = "last",
    name: str = "torch-model",
    meta: dict[str, Any] | None = None,
    bias_coordinate: bool | None = None,
) -> Model:
    """Import ``encoder`` (an ``nn.TransformerEncoder``, one ``nn.TransformerEncoderLayer``
    or a sequence of them) with the embedding and readout around it (module docstring).

    ``embedding``: an :class:`Embedding`, an ``nn.Embedding`` or a (|vocab|, d) array
    (rows in ``vocab`` order: by default the alphabet, then BOS, EOS); with an array or
    ``nn.Embedding``, ``features``/``pos_weight`` (d × F array, tensor or
    ``nn.Linear(F, d, bias=False)``) and ``table`` give positional terms.
    ``readout``: a :class:`Readout`, an ``nn.Linear(d, 1)`` (the accept logit),
    ``nn.Linear(d, 2)`` (logit difference accept − reject), a (d,) array, or None (zero
    weight: every string rejected; useful to inspect activations), read at ``position``
    ("last", "first", "mean" or a 1-based index).
    ``kind``: softmax reproduces PyTorch; a hard kind reinterprets every head as hard
    attention over the same scores (see also :func:`attncert.model.harden`).
    ``causal=True`` or ``mask=`` (a :class:`Mask`, its name, or PyTorch's explicit mask
    tensor) give the attention mask PyTorch is called with. ``meta`` is merged into the
    model's meta. ``bias_coordinate`` is accepted for compatibility and ignored: biases
    are first-class fields now.
    """
    torch = require_torch()
    nn = torch.nn
    if bias_coordinate is not None:
        warnings.warn(
            "model_from_torch(bias_coordinate=...) is ignored: attention biases are "
            "first-class fields of the model (b_q, b_k, b_v, b_o)",
            DeprecationWarning,
            stacklevel=2,
        )
    if key_padding_mask is not None:
        raise UnsupportedError(
            "key padding masks change which keys each string sees",
            where="key_padding_mask",
            expected="None (attncert models see every token of the input)",
        )
    final_norm_module, torch_layers = _layers_of(encoder, nn)
    kind = attention_kind(kind, "kind")
    alphabet = tuple(alphabet)
    emb = _embedding(embedding, alphabet, bos, eos, vocab, features, pos_weight, table, nn)
    d = emb.d
    the_mask, mask_source = _resolve_mask(mask, causal, torch)

    notes: dict[str, str] = {}
    layers = []
    batch_first = set()
    for li, tl in enumerate(torch_layers):
        where = f"encoder.layers[{li}]"
        layers.append(_layer(tl, where, d, kind, the_mask, notes, torch))
        batch_first.add(bool(tl.self_attn.batch_first))
    final_norm = (
        layer_norm(final_norm_module, d, "encoder.norm", torch)
        if final_norm_module is not None
        else None
    )
    ro = accept_readout(readout, d, position, nn)
    torch_meta: dict[str, Any] = {
        "layers": len(layers),
        "heads": [len(layer.heads) for layer in layers],
        "kind": kind.value,
        "mask": the_mask.value,
        "mask_source": mask_source,
        "score_scale": notes,
        "norm_first": [layer.pre_norm for layer in layers],
        "batch_first": sorted(batch_first),
        "torch_version": str(torch.__version__),
    }
    return Model(
        alphabet=alphabet,
        embedding=emb,
        layers=tuple(layers),
        readout=ro,
        bos=bos,
        eos=eos,
        name=name,
        meta={"torch": torch_meta, **(meta or {})},
        final_norm=final_norm,
    )


# ----- pieces ---------------------------------------------------------------------------


def _layers_of(encoder: Any, nn: Any) -> tuple[Any, list[Any]]:
    """(final norm module or None, the encoder layers)."""
    if isinstance(encoder, nn.TransformerEncoder):
        if type(encoder) is not nn.TransformerEncoder:
            raise UnsupportedError(
                f"a subclass {type(encoder).__name__} of nn.TransformerEncoder "
                "(its forward may differ)",
                where="encoder",
                expected="nn.TransformerEncoder itself",
            )
        return getattr(encoder, "norm", None), list(encoder.layers)
    if isinstance(encoder, nn.TransformerEncoderLayer):
        return None, [encoder]
    if isinstance(encoder, nn.Module) and not isinstance(encoder, (nn.ModuleList, nn.Sequential)):
        raise UnsupportedError(
            f"{type(encoder).__name__}",
            where="encoder",
            expected="nn.TransformerEncoder, nn.TransformerEncoderLayer or a list of them",
        )
    try:
        return None, list(encoder)
    except TypeError:
        raise UnsupportedError(
            f"{type(encoder).__name__}",
            where="encoder",
            expected="nn.TransformerEncoder, nn.TransformerEncoderLayer or a list of them",
        ) from None


def _embedding(
    embedding: Any,
    alphabet: tuple[str, ...],
    bos: str | None,
    eos: str | None,
    vocab: Sequence[str] | None,
    features: Sequence[PosFeature],
    pos_weight: Any,
    table: Any,
    nn: Any,
) -> Embedding:
    if isinstance(embedding, Embedding):
        return embedding
    word = (
        to_numpy(embedding.weight) if isinstance(embedding, nn.Embedding) else to_numpy(embedding)
    )
    if isinstance(pos_weight, nn.Linear):
        if pos_weight.bias is not None:
            raise UnsupportedError(
                "the positional projection has a bias",
                where="pos_weight.bias",
                expected="nn.Linear(F, d, bias=False) (add a constant feature '1' instead)",
            )
        pos_weight = pos_weight.weight
    return Embedding(
        vocab=symbol_vocab(alphabet, bos, eos, vocab),
        word=word,
        features=tuple(features),
        pos_weight=None if pos_weight is None else to_numpy(pos_weight),
        table=None if table is None else to_numpy(table),
    )


def _resolve_mask(mask: Any, causal: bool, torch: Any) -> tuple[Mask, str]:
    """The :class:`Mask` PyTorch is called with, and a note saying where it came from."""
    if torch.is_tensor(mask):
        found = _mask_from_tensor(mask, torch)
        if causal and found is not Mask.FUTURE:
            raise SpecError(
                f"causal=True but the explicit mask is the {found.value!r} pattern",
                where="mask",
                expected="a causal (square subsequent) mask, or causal=False",
            )
        n = int(mask.shape[0])
        return found, f"explicit {n}x{n} {str(mask.dtype).replace('torch.', '')} mask tensor"
    m = mask_value(mask, "mask")
    if causal:
        if m not in (Mask.NONE, Mask.FUTURE):
            raise SpecError(
                f"causal=True contradicts mask={m.value!r}",
                where="mask",
                expected="mask 'none' or 'future' with causal=True",
            )
        return Mask.FUTURE, "causal=True"
    return m, "argument" if m is not Mask.NONE else "none given"


def _mask_from_tensor(mask: Any, torch: Any) -> Mask:
    """Which :class:`Mask` an explicit PyTorch attention mask is.

    PyTorch masks are (N × N) with entry [i, j] for query i, key j: a bool mask is
    True where attention is *not* allowed; a float mask is added to the scores (0 where
    allowed, −inf where not). Anything else (finite penalties, per-head masks, patterns
    other than the :class:`Mask` ones) is refused."""
    if mask.dim() != 2 or mask.shape[0] != mask.shape[1] or mask.shape[0] == 0:
        raise UnsupportedError(
            f"mask of shape {tuple(mask.shape)}",
            where="mask",
            expected="a square (N, N) mask shared by every head and string",
        )
    m = mask.detach().cpu()
    if m.dtype == torch.bool:
        allowed = ~m.numpy()
    else:
        v = m.double().numpy()
        if not np.all((v == 0) | (v == -np.inf)):
            raise UnsupportedError(
                "a float mask with finite non-zero entries (a score penalty, not a mask)",
                where="mask",
                expected="entries 0 (attend) or -inf (masked)",
            )
        allowed = v == 0
    n = allowed.shape[0]
    for cand in Mask:
        if np.array_equal(cand.matrix(n), allowed):
            return cand
    raise UnsupportedError(
        "the mask is none of the patterns none, future, future_strict, past, past_strict",
        where="mask",
        expected="a causal mask such as nn.Transformer.generate_square_subsequent_mask(N)",
    )


def _activation(tl: Any, where: str, torch: Any) -> Activation:
    act = tl.activation
    nn, F = torch.nn, torch.nn.functional
    if act is F.relu or type(act) is nn.ReLU:
        return Activation.RELU
    if act is F.gelu:
        return Activation.GELU
    if type(act) is nn.GELU:
        return Activation.GELU_TANH if act.approximate == "tanh" else Activation.GELU
    label = getattr(act, "__name__", type(act).__name__)
    raise UnsupportedError(
        f"custom activation {label}",
        where=f"{where}.activation",
        expected="'relu' or 'gelu' (F.relu, F.gelu, nn.ReLU(), nn.GELU())",
    )


def _check_attention(attn: Any, where: str, d: int, nn: Any) -> None:
    if type(attn) is not nn.MultiheadAttention:
        raise UnsupportedError(
            f"{type(attn).__name__}", where=f"{where}.self_attn", expected="nn.MultiheadAttention"
        )
    if attn.embed_dim != d:
        raise SpecError(
            f"embed_dim {attn.embed_dim} differs from the embedding width {d}",
            where=f"{where}.self_attn",
        )
    if getattr(attn, "bias_k", None) is not None or getattr(attn, "bias_v", None) is not None:
        raise UnsupportedError(
            "add_bias_kv=True appends a learned key/value to every sequence",
            where=f"{where}.self_attn.bias_k",
            expected="add_bias_kv=False",
        )
    if getattr(attn, "add_zero_attn", False):
        raise UnsupportedError(
            "add_zero_attn=True appends a zero key/value to every sequence",
            where=f"{where}.self_attn.add_zero_attn",
            expected="add_zero_attn=False",
        )


def _check_dropout(tl: Any, where: str) -> None:
    if not tl.training:
        return
    probs = {
        "dropout": tl.dropout.p,
        "dropout1": tl.dropout1.p,
        "dropout2": tl.dropout2.p,
        "self_attn.dropout": tl.self_attn.dropout,
    }
    for field, p in probs.items():
        if p > 0:
            raise UnsupportedError(
                f"the layer is in training mode with dropout p = {p} (a random forward pass)",
                where=f"{where}.{field}",
                expected="model.eval(), or dropout 0",
            )


def _layer(
    tl: Any,
    where: str,
    d: int,
    kind: AttentionKind,
    mask: Mask,
    notes: dict[str, str],
    torch: Any,
) -> Layer:
    nn = torch.nn
    if type(tl) is not nn.TransformerEncoderLayer:
        raise UnsupportedError(
            f"{type(tl).__name__}",
            where=where,
            expected="nn.TransformerEncoderLayer itself (a subclass's forward may differ)",
        )
    attn = tl.self_attn
    _check_attention(attn, where, d, nn)
    _check_dropout(tl, where)
    activation = _activation(tl, where, torch)
    norm1: LayerNorm | None = layer_norm(tl.norm1, d, f"{where}.norm1", torch)
    norm2: LayerNorm | None = layer_norm(tl.norm2, d, f"{where}.norm2", torch)

    nh = attn.num_heads
    if attn._qkv_same_embed_dim:
        wq, wk, wv = np.split(to_numpy(attn.in_proj_weight), 3, axis=0)
    else:
        wq, wk, wv = (to_numpy(getattr(attn, f"{c}_proj_weight")) for c in "qkv")
    ib = attn.in_proj_bias
    bq, bk, bv = np.split(to_numpy(ib), 3) if ib is not None else (None, None, None)
    wo = to_numpy(attn.out_proj.weight)
    bo = to_numpy(attn.out_proj.bias) if attn.out_proj.bias is not None else None
    dh = d // nh
    heads = []
    for h in range(nh):
        sl = slice(h * dh, (h + 1) * dh)
        q_b = bq[sl] if bq is not None else np.zeros(dh)
        q_w, q_b, temp = scale_query(wq[sl], q_b, dh, kind, notes)
        heads.append(
            Head(
                q_w,
                wk[sl],
                wv[sl],
                wo[:, sl],
                kind=kind,
                mask=mask,
                temperature=temp,
                b_q=q_b if bq is not None else None,
                b_k=bk[sl] if bk is not None else None,
                b_v=bv[sl] if bv is not None else None,
                b_o=bo if (bo is not None and h == 0) else None,
            )
        )
    l1, l2 = tl.linear1, tl.linear2
    ffn = FeedForward(
        to_numpy(l1.weight),
        to_numpy(l1.bias) if l1.bias is not None else np.zeros(l1.out_features),
        to_numpy(l2.weight),
        to_numpy(l2.bias) if l2.bias is not None else np.zeros(d),
        activation=activation,
    )
    position = NormPosition.PRE if tl.norm_first else NormPosition.POST
    return Layer(tuple(heads), ffn, True, norm1, norm2, position)
