"""Import a TransformerLens ``HookedTransformer`` as an attncert :class:`Model`.

:func:`model_from_transformer_lens` reads the model's ``cfg`` (a
``HookedTransformerConfig``) and its weights in TransformerLens's own layout (the installed
``transformer_lens/components/*.py`` and ``HookedTransformer.py`` are the reference).
TransformerLens 4 removed ``HookedTransformer`` (its ``TransformerBridge`` wraps a
Hugging Face model: import that one with :func:`~attncert.model.importers.model_from_hf`),
so this importer needs TransformerLens 2 or 3. What maps to what:

* ``embed.W_E`` rows of the symbols' token ids → :attr:`Embedding.word`;
  ``positional_embedding_type`` "standard": ``pos_embed.W_pos`` (its first ``max_length``
  rows, default all ``n_ctx``) → the learned position table (0-based token index, BOS
  included); "rotary": RoPE in the rotate-half layout on the first ``rotary_dim``
  coordinates of each head, base ``rotary_base``, ``rotary_scaling_factor`` →
  :attr:`Rotary.scale`; "alibi": per-head slopes as TransformerLens computes them
  (``create_alibi_multipliers``: 2^(−8/H)·(2^(−8/H))^h in float32), TransformerLens adds
  m·(j − i) for keys j ≤ i, attncert's −m·(i − j);
* ``post_embedding_ln`` (a LayerNorm on the token embeddings, before ``W_pos`` is added):
  without learned positions a head-less post-norm layer 0 computing LN(y + 0) = LN(y)
  (exact); with them the symbols' normalized rows, computed in float64 (rounded, recorded
  in ``meta``), as the word embedding;
* blocks: pre-norm ``ln1``/``ln2`` (``normalization_type`` LN → LayerNorm ``w``, ``b``;
  RMS → RMSNorm ``w``; LNPre / RMSPre → weight 1, bias 0; None → no norm; ε = ``cfg.eps``);
  heads ``W_Q``/``W_K``/``W_V`` [H, d, d_head] transposed per head, ``W_O`` [H, d_head, d]
  transposed, ``b_Q``/``b_K``/``b_V`` per head, ``b_O`` → head 0's b_O; grouped-query
  attention (``n_key_value_heads``) expanded as TransformerLens's ``repeat_interleave``
  (query head h reads key/value head h // (H / H_kv)); ``attention_dir`` "causal" → mask
  ``future``, "bidirectional" → no mask; MLP ``W_in``/``b_in``/``W_out``/``b_out``,
  ``act_fn`` relu / gelu (erf) / gelu_new and gelu_pytorch_tanh (tanh-GELU) / silu;
  ``gated_mlp``: TransformerLens computes W_out(act(x W_gate) ⊙ (x W_in) + b_in) + b_out,
  b_in added after the product, which is attncert's gated FFN with b₁ = b_gate = 0 and
  b₂ = b_out + W_out·b_in (the sum rounded in float64, recorded in ``meta``);
  ``parallel_attn_mlp`` → :attr:`Layer.parallel` (LN₁ for the heads, LN₂ for the MLP, as
  TransformerLens); ``attn_only`` → layers without MLP;
* the final ``ln_final`` (``final_rms`` → RMSNorm); the readout: ``unembed.W_U`` columns
  and ``b_U`` entries of ``lm_symbols`` → the next-symbol head (logits at every position),
  and, when ``readout`` is given, an accept decision (as
  :func:`~attncert.model.importers.model_from_torch` reads it).

The score scale: TransformerLens divides q·k by ``attn.attn_scale`` (√d_head by default,
1 without ``use_attn_scale``, times layer + 1 with ``scale_attn_by_inverse_layer_idx``).
When it is √s for an integer s the factor is handled by :func:`scale_query` (folded into
W_Q and b_Q when s = 4^k, else a softmax inverse temperature fl(1/√s)), for ALiBi heads
folded into W_Q and b_Q (:func:`fold_scale`: a temperature would scale the ALiBi term);
any other scale becomes the temperature fl(1/scale) (or the folded fl(1/scale) for ALiBi).

Refused with an :class:`~attncert.errors.UnsupportedError` naming the ``cfg`` field and
the supported values: "shortformer" and "relative_positional_bias" positions,
``rotary_adjacent_pairs`` (GPT-J's interleaved rotary), NTK-by-parts, YaRN and dynamic-NTK
rope, log-n attention, QK norms (``use_qk_norm``, the OLMo architectures), ``clip_qkv``,
local attention windows, attention sinks, mixtures of experts, norms after the sublayers
(``use_normalization_before_and_after``, post-norm architectures), soft caps of scores or
logits, 4-bit weights, activations without an exact attncert counterpart (solu, solu_ln,
gelu_fast, xielu, relu2, …), ALiBi with bidirectional attention (TransformerLens's bias is
0 for keys after the query, attncert's is not), forward hooks attached to the model (they
change its forward pass); also non-finite weights, bad token ids, symbols without one.

Accepted as they are, since they add hook points or another evaluation order of the same
function: ``use_attn_result``, ``use_split_qkv_input``, ``use_attn_in``,
``use_hook_mlp_in``, ``use_hook_tokens``, ``ungroup_grouped_query_attention``.

One module per step: :mod:`~attncert.model.importers.tlens_config` (class, ``cfg``,
refusals, hooks, finite weights), :mod:`~attncert.model.importers.tlens_positions`,
:mod:`~attncert.model.importers.tlens_blocks` (norms, heads, score scale, MLPs),
:mod:`~attncert.model.importers.tlens_readout`; :func:`model_from_transformer_lens` is the
pipeline.

Needs ``torch`` and ``transformer_lens`` (``pip install 'attncert[tlens]'``); nothing is
downloaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attncert.model.importers._common import (
    attention_kind,
    check_finite,
    norm_only_layer,
    to_numpy,
    token_table,
)
from attncert.model.importers.tlens_blocks import block, layer_norm_rows, norm
from attncert.model.importers.tlens_config import (
    ACTIVATIONS,
    ATTENTION_DIRS,
    NORMALIZATIONS,
    POSITIONS,
    TLImport,
)
from attncert.model.importers.tlens_positions import positions
from attncert.model.importers.tlens_readout import readout as tl_readout
from attncert.model.spec import AttentionKind, Embedding, Layer, Model

__all__ = [
    "ACTIVATIONS",
    "ATTENTION_DIRS",
    "NORMALIZATIONS",
    "POSITIONS",
    "model_from_transformer_lens",
]


def model_from_transformer_lens(
    model: Any,
    *,
    alphabet: Sequence[str],
    token_ids: Mapping[str, int],
    bos: str | None = None,
    eos: str | None = None,
    lm_symbols: Sequence[str] | None = None,
    readout: Any = None,
    position: str | int = "last",
    max_length: int | None = None,
    kind: AttentionKind | str = AttentionKind.SOFTMAX,
    name: str | None = None,
    meta: dict[str, Any] | None = None,
) -> Model:
    """Import a TransformerLens ``HookedTransformer`` ``model`` (module docstring).

    ``token_ids`` maps every alphabet symbol (and ``bos``/``eos`` if given) to its token
    id (< ``cfg.d_vocab``); ``lm_symbols`` (default the alphabet plus ``eos``) names the
    symbols whose unembed logits are kept, in that order (ids < ``cfg.d_vocab_out``).
    ``readout`` (optional): an accept decision read at ``position`` — a :class:`Readout`
    (used as given), an ``nn.Linear(d, 1)`` (the accept logit), ``nn.Linear(d, 2)``
    (accept − reject) or a (d,) array; without it the model rejects every string and
    carries the next-symbol head only. ``max_length`` (tokens, BOS/EOS included): for
    learned positions the number of ``W_pos`` rows kept (≤ ``n_ctx``, default ``n_ctx``);
    for rotary/ALiBi models a zero position table of that many rows bounding the inputs
    (default none). ``kind`` softmax reproduces the model; a hard kind reinterprets every
    head as hard attention over the same scores."""
    imp = TLImport(model)
    imp.kind = attention_kind(kind, "kind")
    alphabet = tuple(alphabet)
    imp.check_config()
    imp.check_hooks()
    imp.check_finite()
    cfg = imp.cfg
    vocab, ids = token_table(alphabet, bos, eos, token_ids, cfg, "d_vocab")
    word = to_numpy(model.embed.W_E)
    imp.d = word.shape[1]
    table = positions(imp, max_length)
    rows = word[ids]
    check_finite(rows, "embed.W_E (rows of token_ids)")
    layers: list[Layer] = []
    if imp.field("post_embedding_ln", False):
        ln = norm(imp, model.embed.ln, "embed.ln", "LN")
        if table is None:
            layers.append(norm_only_layer(ln))
            imp.notes["post_embedding_ln"] = (
                "layers[0] = embed.ln (no heads, no MLP: LN(y + 0), exact)"
            )
        else:  # TransformerLens normalizes W_E[token] before adding W_pos
            rows = layer_norm_rows(rows, ln)
            imp.notes["post_embedding_ln"] = (
                "embed.ln applied to the symbols' W_E rows before W_pos is added, as "
                "TransformerLens does: the normalized rows are computed in float64 "
                "(rounded) and imported as the word embedding"
            )
    emb = Embedding(vocab=vocab, word=rows, table=table)
    for li, blk in enumerate(model.blocks):
        layers.append(block(imp, li, blk))
    final = None
    if imp.norm_type is not None:
        final_type = imp.norm_type
        if imp.field("final_rms", False) and imp.norm_type.startswith("LN"):
            final_type = "RMS" + imp.norm_type[2:]
        final = norm(imp, model.ln_final, "ln_final", final_type)
    ro, label = tl_readout(imp, alphabet, eos, lm_symbols, token_ids, readout, position)
    tl_meta = {
        "class": imp.cls,
        "config": imp.fields,
        "kind": imp.kind.value,
        "token_ids": {s: int(token_ids[s]) for s in vocab},
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
        name=name or f"tlens-{cfg.model_name}",
        meta={"transformer_lens": tl_meta, **(meta or {})},
        final_norm=final,
    )
