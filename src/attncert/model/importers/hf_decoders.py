"""Import a Hugging Face ``transformers`` decoder (Llama, Qwen2, Mistral, GPT-NeoX, Bloom;
GPT-2 through :func:`~attncert.model.importers.hf_gpt2.model_from_hf_gpt2`) as an attncert
:class:`Model` (model-file version 3: rotary positions, ALiBi, RMSNorm, gated MLPs,
parallel residual).

:func:`model_from_hf` dispatches on ``config.model_type``. For each type the base model
(``LlamaModel`` …: hidden states after the final norm, readout weight zero), the causal LM
(``…ForCausalLM``: the LM-head rows of ``lm_symbols`` → :attr:`Readout.lm_weight`) and the
sequence classifier (``…ForSequenceClassification``: ``score`` at the last token, 1 label →
the logit, 2 labels → score[1] − score[0]) are imported. The pipeline, one module per step
(the installed ``transformers/models/*/modeling_*.py`` and ``modeling_rope_utils.py`` are
the reference):

1. :mod:`~attncert.model.importers.hf_config` — the class and config, refused naming the
   field where attncert cannot represent them;
2. :mod:`~attncert.model.importers.hf_tokens` — the caller's token strings (``bos="<s>"``)
   as one-character symbols, BOS read from ``config.bos_token_id`` when omitted, a
   contradiction with the config or a pad token that would move a classifier's reading
   position refused;
3. :mod:`~attncert.model.importers.hf_blocks` — the layers of each family, with
   :mod:`~attncert.model.importers.hf_attention` (grouped-query heads, fused
   ``query_key_value``, the score scale, ALiBi slopes) and
   :mod:`~attncert.model.importers.hf_rotary` (RoPE over the whole head on the Llama
   family, partial on GPT-NeoX; default or linear rope);
4. :mod:`~attncert.model.importers.hf_readout` — the readout of each class.

Refused, naming the config field or module: other ``model_type`` values and classes, rope
types other than default/linear (dynamic, yarn, llama3, longrope, …), a
``partial_rotary_factor`` ≠ 1 on the Llama family, an odd rotary dimension, sliding windows
(Mistral, Qwen2) unless ``max_length`` ≤ the window (then the model carries a zero position
table of ``max_length`` rows so that longer inputs are refused by the evaluator),
activations that are not exactly representable (``gelu_fast``, ``quick_gelu``, …), dropout
in training mode, non-finite weights, bad token ids, an omitted ``bos`` whose
``config.bos_token_id`` has no ``token_ids`` entry, BOS/EOS ids that contradict the config,
a classifier's pad token among its symbols' tokens.

Needs ``torch`` and ``transformers``; nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from attncert.model.importers._common import (
    attention_kind,
    check_finite,
    require_torch,
    to_numpy,
    token_table,
)
from attncert.model.importers.hf_attention import alibi_slopes
from attncert.model.importers.hf_blocks import bloom_layers, llama_layers, neox_layers
from attncert.model.importers.hf_config import (
    ACTIVATIONS,
    BLOOM_GELU_CONSTANT,
    LLAMA_FAMILY,
    SUPPORTED,
    HFImport,
    model_role,
    model_type,
)
from attncert.model.importers.hf_gpt2 import model_from_hf_gpt2
from attncert.model.importers.hf_readout import readout
from attncert.model.importers.hf_rotary import ROPE_TYPES
from attncert.model.importers.hf_tokens import FROM_CONFIG, Omitted, Tokens, resolve_tokens
from attncert.model.spec import AttentionKind, Embedding, Model

__all__ = [
    "ACTIVATIONS",
    "BLOOM_GELU_CONSTANT",
    "FROM_CONFIG",
    "ROPE_TYPES",
    "SUPPORTED",
    "alibi_slopes",
    "model_from_hf",
]


def model_from_hf(
    model: Any,
    *,
    alphabet: Sequence[str],
    token_ids: Mapping[str, int],
    bos: str | Omitted | None = FROM_CONFIG,
    eos: str | None = None,
    lm_symbols: Sequence[str] | None = None,
    max_length: int | None = None,
    kind: AttentionKind | str = AttentionKind.SOFTMAX,
    name: str | None = None,
    meta: dict[str, Any] | None = None,
) -> Model:
    """Import a Hugging Face decoder ``model`` (module docstring), dispatching on
    ``config.model_type``.

    ``alphabet``: the characters of the strings the model decides; ``token_ids`` maps each
    of them, and the token strings ``bos``/``eos`` if given (e.g. ``"<s>"``), to its token
    id. ``bos`` omitted: the ``token_ids`` entry whose id is ``config.bos_token_id`` (refused,
    naming the field, when the config has one and no entry does); ``bos=None``: no BOS.
    ``lm_symbols`` (causal LMs; default the alphabet plus ``eos``) names the symbols (or
    BOS/EOS token strings) whose next-token logits are kept, in that order; ``max_length``
    (tokens, BOS/EOS included) bounds the inputs: required when the model has a sliding
    window (it must not exceed the window), and for GPT-2 the number of ``wpe`` rows kept.
    ``kind`` softmax reproduces the model; a hard kind reinterprets every head as hard
    attention. How token strings become symbols: :mod:`~attncert.model.importers.hf_tokens`."""
    require_torch("importing a Hugging Face model")
    mtype = model_type(model)
    role = model_role(model, mtype)
    akind = attention_kind(kind, "kind")
    tokens = resolve_tokens(
        model.config,
        role,
        alphabet=alphabet,
        token_ids=token_ids,
        bos=bos,
        eos=eos,
        lm_symbols=lm_symbols,
    )
    if mtype == "gpt2":
        imported = model_from_hf_gpt2(
            model,
            alphabet=tokens.alphabet,
            token_ids=tokens.token_ids,
            bos=tokens.bos,
            eos=tokens.eos,
            lm_symbols=tokens.lm_symbols,
            max_length=max_length,
            kind=akind,
            name=name or "gpt2-model",
            meta=meta,
        )
        gpt2_meta = {**imported.meta["hf_gpt2"], "tokens": dict(tokens.meta)}
        return replace(imported, meta={**imported.meta, "hf_gpt2": gpt2_meta})
    imp = HFImport(model, mtype, akind)
    return _run(imp, tokens, max_length=max_length, name=name or f"{mtype}-model", meta=meta)


def _run(
    imp: HFImport,
    tokens: Tokens,
    *,
    max_length: int | None,
    name: str,
    meta: dict[str, Any] | None,
) -> Model:
    """The import of a Llama-family, GPT-NeoX or Bloom model, step by step."""
    alphabet, token_ids, bos, eos = tokens.alphabet, tokens.token_ids, tokens.bos, tokens.eos
    imp.check_training()
    imp.check_finite()
    imp.activation = imp.read_activation()
    imp.field("vocab_size")
    imp.field("n_layer" if imp.type == "bloom" else "num_hidden_layers")
    vocab, ids = token_table(alphabet, bos, eos, token_ids, imp.config)
    word = to_numpy(imp.core.get_input_embeddings().weight)
    imp.d = word.shape[1]
    table = imp.length_limit(max_length)
    emb = Embedding(vocab=vocab, word=word[ids], table=table)
    check_finite(emb.word, "get_input_embeddings().weight (rows of token_ids)")
    if imp.type in LLAMA_FAMILY:
        layers, final = llama_layers(imp)
    elif imp.type == "gpt_neox":
        layers, final = neox_layers(imp)
    else:
        layers, final = bloom_layers(imp)
    ro, label = readout(imp, alphabet, eos, tokens.lm_symbols, token_ids)
    hf_meta = {
        "class": imp.cls,
        "model_type": imp.type,
        "config": imp.fields,
        "kind": imp.kind.value,
        "token_ids": {s: int(token_ids[s]) for s in vocab},
        "tokens": dict(tokens.meta),
        "readout": label,
        "score_scale": imp.score_scale,
        **imp.notes,
    }
    return Model(
        alphabet=alphabet,
        embedding=emb,
        layers=tuple(layers),
        readout=ro,
        bos=bos,
        eos=eos,
        name=name,
        meta={"hf": hf_meta, **(meta or {})},
        final_norm=final,
    )
