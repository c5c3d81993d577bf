"""Importers: models trained elsewhere as attncert :class:`~attncert.model.spec.Model` values.

* :func:`model_from_torch` — PyTorch ``nn.TransformerEncoder`` / ``TransformerEncoderLayer``
  (:mod:`attncert.model.importers.torch_encoder`);
* :func:`model_from_hf_gpt2` — Hugging Face GPT-2 (``GPT2Model``, ``GPT2LMHeadModel``,
  ``GPT2ForSequenceClassification``; :mod:`attncert.model.importers.hf_gpt2`);
* :func:`model_from_hf` — Hugging Face decoders by ``config.model_type``: GPT-2, Llama,
  Qwen2, Mistral, GPT-NeoX, Bloom (base, causal LM, sequence classifier;
  :mod:`attncert.model.importers.hf_decoders`), taking the tokenizer's own token strings
  (``bos="<s>"``) and reading BOS from ``config.bos_token_id``
  (:mod:`attncert.model.importers.hf_tokens`);
* :func:`model_from_transformer_lens` — TransformerLens ``HookedTransformer`` (learned,
  rotary or ALiBi positions, LN/RMS/LNPre/RMSPre, gated and parallel MLPs, GQA,
  attention-only; the ``tlens`` extra; :mod:`attncert.model.importers.transformer_lens`).

Each converts float32/float64 weights to float64 exactly and refuses what it cannot
represent with an :class:`~attncert.errors.UnsupportedError` naming the module and
field. torch, transformers and transformer_lens are optional and imported only when an
importer runs.
:func:`hardening_report` measures how often an imported soft model and its hardened
version decide alike (accept decisions, next-symbol predictions, output coordinates).
"""

from attncert.model.importers.hardening import HardeningReport, hardening_report
from attncert.model.importers.hf_decoders import model_from_hf
from attncert.model.importers.hf_gpt2 import model_from_hf_gpt2
from attncert.model.importers.torch_encoder import model_from_torch
from attncert.model.importers.transformer_lens import model_from_transformer_lens

__all__ = [
    "HardeningReport",
    "hardening_report",
    "model_from_hf",
    "model_from_hf_gpt2",
    "model_from_torch",
    "model_from_transformer_lens",
]
