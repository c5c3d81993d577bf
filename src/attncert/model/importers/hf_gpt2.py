"""Import a Hugging Face ``transformers`` GPT-2 model as an attncert :class:`Model`.

Supported classes: ``GPT2Model`` (hidden states after ``ln_f``), ``GPT2LMHeadModel``
(next-token logits through the tied ``lm_head``) and ``GPT2ForSequenceClassification``
(``score`` read at the last token). What maps to what
(``transformers/models/gpt2/modeling_gpt2.py``):

* ``wte`` rows of the caller's token ids → :attr:`Embedding.word` (the caller maps each
  alphabet symbol, and BOS/EOS if used, to a token id: ``token_ids={"0": 15, ...}``);
  the learned positions ``wpe`` → :attr:`Embedding.table` (the first ``max_length``
  rows; longer inputs are refused by the evaluator);
* each block is pre-norm (``ln_1``, attention, ``ln_2``, MLP) with causal attention
  (mask ``future``); ``ln_f`` → :attr:`Model.final_norm`;
* ``Conv1D`` computes x·W + b with W stored (in, out), the transpose of
  ``nn.Linear``: ``c_attn.weight`` (E × 3E) holds W_Qᵀ, W_Kᵀ, W_Vᵀ side by side, head h
  owning columns ``h·d_h … (h+1)·d_h`` of each; rows ``h·d_h … (h+1)·d_h`` of
  ``attn.c_proj.weight`` are head h's W_Oᵀ and ``attn.c_proj.bias`` is head 0's b_O;
* ``scale_attn_weights`` divides the scores by √d_h: folded into W_Q when d_h = 4^k,
  else a softmax inverse temperature fl(1/√d_h) (``meta["hf_gpt2"]["score_scale"]``);
* ``activation_function``: ``gelu_new`` and ``gelu_pytorch_tanh`` → gelu_tanh (the
  same formula), ``gelu`` → gelu (erf), ``relu`` → relu;
* the LM head → :attr:`Readout.lm_weight` rows for ``lm_symbols`` (bias 0, GPT-2's
  head has none); a classification head with 2 labels → the accept logit
  score[1] − score[0] at the last token (1 label: score[0]).

Refused, naming the config field or module: ``scale_attn_by_inverse_layer_idx``,
``add_cross_attention``, rotary or ALiBi position settings, other activations,
dropout in training mode, more than 2 labels, a pad token that is an alphabet symbol's or
EOS's token (the classifier would read an earlier position:
:func:`~attncert.model.importers.hf_tokens.check_pad_token`), other model classes.
Called directly, BOS and EOS are one-character symbols as given and the config's
``bos_token_id`` is not read; :func:`~attncert.model.importers.model_from_hf` takes the
tokenizer's token strings and checks them against the config first
(:mod:`~attncert.model.importers.hf_tokens`). ``reorder_and_upcast_attn``
only changes rounding and is accepted.

Needs ``torch`` and ``transformers`` (``pip install 'attncert[hf]'``); nothing is
downloaded: the model is whatever object the caller built or loaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attncert.errors import SpecError, UnsupportedError
from attncert.model.importers._common import (
    attention_kind,
    layer_norm,
    linear_readout_weight,
    require_torch,
    scale_query,
    to_numpy,
    token_table,
)
from attncert.model.importers.hf_tokens import check_pad_token
from attncert.model.spec import (
    Activation,
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    Mask,
    Model,
    NormPosition,
    Readout,
    Temperature,
)

ACTIVATIONS = {
    "gelu_new": Activation.GELU_TANH,
    "gelu_pytorch_tanh": Activation.GELU_TANH,
    "gelu": Activation.GELU,
    "relu": Activation.RELU,
}
_CLASSES = ("GPT2Model", "GPT2LMHeadModel", "GPT2ForSequenceClassification")
# config attributes of GPT-2 variants that change the position scheme
_POSITION_FIELDS = ("rotary", "rotary_dim", "rope_scaling", "rope_theta", "alibi", "use_alibi")


def model_from_hf_gpt2(
    model: Any,
    *,
    alphabet: Sequence[str],
    token_ids: Mapping[str, int],
    bos: str | None = None,
    eos: str | None = None,
    lm_symbols: Sequence[str] | None = None,
    max_length: int | None = None,
    kind: AttentionKind | str = AttentionKind.SOFTMAX,
    name: str = "gpt2-model",
    meta: dict[str, Any] | None = None,
) -> Model:
    """Import a GPT-2 ``model`` (module docstring).

    ``token_ids`` maps every alphabet symbol (and ``bos``/``eos`` if given) to its token
    id; ``lm_symbols`` (LM head only; default the alphabet plus ``eos``) names the
    symbols whose next-token logits are kept, in that order; ``max_length`` keeps the
    first rows of ``wpe`` (default all ``n_positions``). ``kind`` softmax reproduces
    the model; a hard kind reinterprets every head as hard attention."""
    torch = require_torch("importing a Hugging Face GPT-2 model")
    cls = type(model).__name__
    if cls not in _CLASSES or not hasattr(model, "config"):
        raise UnsupportedError(
            f"model class {cls}", where="model", expected="one of " + ", ".join(_CLASSES)
        )
    config = model.config
    _check_config(config, model)
    kind = attention_kind(kind, "kind")
    alphabet = tuple(alphabet)
    core = model if cls == "GPT2Model" else model.transformer
    vocab, ids = token_table(alphabet, bos, eos, token_ids, config)
    d = int(config.n_embd)
    wte = to_numpy(core.wte.weight)
    n_pos = core.wpe.weight.shape[0]
    keep = n_pos if max_length is None else int(max_length)
    if not 1 <= keep <= n_pos:
        raise SpecError(
            f"max_length {max_length}", where="max_length", expected=f"1..{n_pos} (n_positions)"
        )
    emb = Embedding(vocab=vocab, word=wte[ids], table=to_numpy(core.wpe.weight[:keep]))

    notes: dict[str, str] = {}
    layers = []
    activation = ACTIVATIONS[config.activation_function]
    for li, block in enumerate(core.h):
        layers.append(
            _block(block, f"transformer.h[{li}]", d, config, kind, activation, notes, torch)
        )
    final_norm = layer_norm(core.ln_f, d, "transformer.ln_f", torch)

    readout, label = _readout(model, cls, config, alphabet, eos, lm_symbols, token_ids, d)
    hf_meta = {
        "class": cls,
        "n_layer": int(config.n_layer),
        "n_head": int(config.n_head),
        "n_embd": d,
        "activation_function": config.activation_function,
        "kind": kind.value,
        "score_scale": notes,
        "token_ids": {s: int(token_ids[s]) for s in vocab},
        "positions_kept": keep,
        "readout": label,
    }
    return Model(
        alphabet=alphabet,
        embedding=emb,
        layers=tuple(layers),
        readout=readout,
        bos=bos,
        eos=eos,
        name=name,
        meta={"hf_gpt2": hf_meta, **(meta or {})},
        final_norm=final_norm,
    )


def _check_config(config: Any, model: Any) -> None:
    def refuse(field: str, message: str, expected: str) -> None:
        raise UnsupportedError(message, where=f"config.{field}", expected=expected)

    if getattr(config, "model_type", "gpt2") != "gpt2":
        refuse("model_type", f"model type {config.model_type!r}", "'gpt2'")
    if getattr(config, "scale_attn_by_inverse_layer_idx", False):
        refuse(
            "scale_attn_by_inverse_layer_idx",
            "scores scaled by 1/(layer index + 1)",
            "scale_attn_by_inverse_layer_idx=False",
        )
    if getattr(config, "add_cross_attention", False):
        refuse("add_cross_attention", "cross-attention blocks", "add_cross_attention=False")
    pos_type = getattr(config, "position_embedding_type", None)
    if pos_type not in (None, "absolute"):
        refuse(
            "position_embedding_type",
            f"position embedding {pos_type!r}",
            "learned absolute positions (wpe)",
        )
    for field in _POSITION_FIELDS:
        value = getattr(config, field, None)
        if value not in (None, False):
            refuse(field, f"{field} = {value!r} (rotary/ALiBi positions)", f"no {field}")
    act = getattr(config, "activation_function", None)
    if act not in ACTIVATIONS:
        refuse("activation_function", f"activation {act!r}", "one of " + ", ".join(ACTIVATIONS))
    if model.training:
        for field in ("embd_pdrop", "attn_pdrop", "resid_pdrop"):
            p = getattr(config, field, 0.0) or 0.0
            if p > 0:
                refuse(
                    field,
                    f"the model is in training mode with dropout {field} = {p} "
                    "(a random forward pass)",
                    "model.eval(), or dropout 0",
                )


def _block(
    block: Any,
    where: str,
    d: int,
    config: Any,
    kind: AttentionKind,
    activation: Activation,
    notes: dict[str, str],
    torch: Any,
) -> Layer:
    attn, mlp = block.attn, block.mlp
    nh = int(attn.num_heads)
    dh = d // nh
    w = to_numpy(attn.c_attn.weight)  # (d, 3d): x @ w
    b = to_numpy(attn.c_attn.bias)
    wq, wk, wv = (w[:, k * d : (k + 1) * d].T for k in range(3))
    bq, bk, bv = (b[k * d : (k + 1) * d] for k in range(3))
    wo_t = to_numpy(attn.c_proj.weight)  # (d, d): rows = concatenated head outputs
    bo = to_numpy(attn.c_proj.bias)
    heads = []
    for h in range(nh):
        sl = slice(h * dh, (h + 1) * dh)
        if attn.scale_attn_weights:
            q_w, q_b, temp = scale_query(wq[sl], bq[sl], dh, kind, notes)
        else:
            q_w, q_b = wq[sl], bq[sl]
            temp = None
            if kind is AttentionKind.SOFTMAX:
                temp = Temperature(1.0)
                notes["1"] = "scale_attn_weights=False: scores unscaled"
        heads.append(
            Head(
                q_w,
                wk[sl],
                wv[sl],
                wo_t[sl].T,
                kind=kind,
                mask=Mask.FUTURE,
                temperature=temp,
                b_q=q_b,
                b_k=bk[sl],
                b_v=bv[sl],
                b_o=bo if h == 0 else None,
            )
        )
    ffn = FeedForward(
        to_numpy(mlp.c_fc.weight).T,
        to_numpy(mlp.c_fc.bias),
        to_numpy(mlp.c_proj.weight).T,
        to_numpy(mlp.c_proj.bias),
        activation=activation,
    )
    norm1 = layer_norm(block.ln_1, d, f"{where}.ln_1", torch)
    norm2 = layer_norm(block.ln_2, d, f"{where}.ln_2", torch)
    return Layer(tuple(heads), ffn, True, norm1, norm2, NormPosition.PRE)


def _readout(
    model: Any,
    cls: str,
    config: Any,
    alphabet: tuple[str, ...],
    eos: str | None,
    lm_symbols: Sequence[str] | None,
    token_ids: Mapping[str, int],
    d: int,
) -> tuple[Readout, str]:
    if cls == "GPT2LMHeadModel":
        symbols = (
            tuple(lm_symbols) if lm_symbols is not None else alphabet + ((eos,) if eos else ())
        )
        missing = [s for s in symbols if s not in token_ids]
        if missing:
            raise SpecError(
                f"no token id for LM symbol {missing[0]!r}",
                where="token_ids",
                expected="a token id for every symbol of lm_symbols",
            )
        head = to_numpy(model.lm_head.weight)
        rows = [int(token_ids[s]) for s in symbols]
        bias = (
            to_numpy(model.lm_head.bias)[rows]
            if getattr(model.lm_head, "bias", None) is not None
            else np.zeros(len(rows))
        )
        ro = Readout(
            weight=np.zeros(d),
            position="last",
            lm_weight=head[rows],
            lm_bias=bias,
            lm_symbols=symbols,
        )
        return ro, "lm_head logits of " + "".join(symbols) + " (no accept decision)"
    if cls == "GPT2ForSequenceClassification":
        used = {s: int(token_ids[s]) for s in alphabet + ((eos,) if eos else ())}
        check_pad_token(config, used, eos)
        score = to_numpy(model.score.weight)
        bias = to_numpy(model.score.bias) if model.score.bias is not None else None
        w, b = linear_readout_weight(score, bias, "score (config.num_labels)")
        label = "score[1] - score[0] at the last token" if score.shape[0] == 2 else "score[0]"
        return Readout(weight=w, bias=b, position="last"), label
    return Readout(weight=np.zeros(d), position="last"), "none (hidden states after ln_f)"
