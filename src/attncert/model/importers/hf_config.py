"""One Hugging Face decoder import: the model's class and config, read field by field
(each field used is recorded for ``meta``) and refused, naming the field, where attncert
cannot represent it — model types and classes, dropout in training mode, non-finite
weights, activations, sliding windows.

:class:`HFImport` is the mutable record the other ``hf_*`` modules fill in
(:mod:`~attncert.model.importers.hf_rotary`, :mod:`~attncert.model.importers.hf_attention`,
:mod:`~attncert.model.importers.hf_blocks`, :mod:`~attncert.model.importers.hf_readout`);
:func:`~attncert.model.importers.hf_decoders.model_from_hf` drives them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attncert.errors import SpecError, UnsupportedError
from attncert.model.importers._common import plain_config, require_torch, to_numpy
from attncert.model.spec import Activation, AttentionKind, Rotary

SUPPORTED = ("gpt2", "llama", "qwen2", "mistral", "gpt_neox", "bloom")
PREFIX = {
    "llama": "Llama",
    "qwen2": "Qwen2",
    "mistral": "Mistral",
    "gpt_neox": "GPTNeoX",
    "bloom": "Bloom",
}
SUFFIXES = ("Model", "ForCausalLM", "ForSequenceClassification")
GPT2_CLASSES = ("GPT2Model", "GPT2LMHeadModel", "GPT2ForSequenceClassification")
LLAMA_FAMILY = ("llama", "qwen2", "mistral")

ACTIVATIONS = {
    "silu": Activation.SILU,
    "swish": Activation.SILU,
    "gelu": Activation.GELU,
    "gelu_python": Activation.GELU,
    "gelu_new": Activation.GELU_TANH,
    "gelu_pytorch_tanh": Activation.GELU_TANH,
    "gelu_python_tanh": Activation.GELU_TANH,
    "relu": Activation.RELU,
}
BLOOM_GELU_CONSTANT = 0.79788456  # bloom_gelu_forward's √(2/π)
_DROPOUT_FIELDS = (
    "attention_dropout",
    "hidden_dropout",
    "embd_pdrop",
    "attn_pdrop",
    "resid_pdrop",
)


def model_type(model: Any) -> str:
    """``config.model_type``, refused unless it is one of :data:`SUPPORTED`."""
    config = getattr(model, "config", None)
    mtype = getattr(config, "model_type", None)
    if mtype not in SUPPORTED:
        raise UnsupportedError(
            f"model type {mtype!r} ({type(model).__name__})",
            where="config.model_type",
            expected="one of " + ", ".join(SUPPORTED),
        )
    return mtype


def model_role(model: Any, mtype: str) -> str:
    """What the class computes — ``"Model"``, ``"ForCausalLM"`` or
    ``"ForSequenceClassification"`` — refusing any other class of ``mtype``."""
    cls = type(model).__name__
    if mtype == "gpt2":
        if cls not in GPT2_CLASSES:
            raise UnsupportedError(
                f"model class {cls}", where="model", expected="one of " + ", ".join(GPT2_CLASSES)
            )
        return {"GPT2LMHeadModel": "ForCausalLM"}.get(cls, cls[len("GPT2") :])
    prefix = PREFIX[mtype]
    allowed = tuple(prefix + s for s in SUFFIXES)
    if cls not in allowed:
        raise UnsupportedError(
            f"model class {cls}", where="model", expected="one of " + ", ".join(allowed)
        )
    return cls[len(prefix) :]


class HFImport:
    """One import: the model, its config and what has been recorded for ``meta``
    (``fields``: the config fields read; ``notes``; ``score_scale``). The per-part modules
    set ``d``, ``activation`` and ``rotary`` as the import proceeds."""

    def __init__(self, model: Any, mtype: str, kind: AttentionKind):
        self.torch = require_torch("importing a Hugging Face model")
        self.model = model
        self.config = model.config
        self.type = mtype
        self.cls = type(model).__name__
        self.role = model_role(model, mtype)
        self.core = model if self.role == "Model" else model.base_model
        self.kind = kind
        self.notes: dict[str, Any] = {}
        self.score_scale: dict[str, str] = {}
        self.fields: dict[str, Any] = {}
        self.d = 0
        self.activation: Activation | None = None
        self.rotary: Rotary | None = None

    def field(self, name: str, default: Any = None) -> Any:
        """``config.<name>`` (recorded in meta as a config field used)."""
        value = getattr(self.config, name, default)
        self.fields[name] = plain_config(value)
        return value

    def refuse(self, field: str, message: str, expected: str) -> None:
        raise UnsupportedError(message, where=f"config.{field}", expected=expected)

    def linear(self, module: Any, where: str) -> tuple[np.ndarray, np.ndarray | None]:
        """(weight, bias or None) of an ``nn.Linear``, as float64."""
        w = to_numpy(module.weight)
        b = to_numpy(module.bias) if getattr(module, "bias", None) is not None else None
        return w, b

    # ----- refusals before any weight is read ------------------------------------------
    def check_training(self) -> None:
        """Training mode with dropout is a random forward pass: refused."""
        if not self.model.training:
            return
        for field in _DROPOUT_FIELDS:
            p = getattr(self.config, field, 0.0) or 0.0
            if p > 0:
                self.refuse(
                    field,
                    f"the model is in training mode with dropout {field} = {p} "
                    "(a random forward pass)",
                    "model.eval(), or dropout 0",
                )
        for mod_name, mod in self.model.named_modules():
            if isinstance(mod, self.torch.nn.Dropout) and mod.p > 0:
                raise UnsupportedError(
                    f"the model is in training mode with dropout p = {mod.p}",
                    where=mod_name,
                    expected="model.eval(), or dropout 0",
                )

    def check_finite(self) -> None:
        """Every parameter finite, except the embedding and LM-head matrices, whose used
        rows are checked where they are read."""
        skip = {id(self.core.get_input_embeddings().weight)}
        out = self.model.get_output_embeddings() if self.role == "ForCausalLM" else None
        if out is not None:
            skip.add(id(out.weight))
        for pname, p in self.model.named_parameters():
            if id(p) in skip:
                continue
            if not bool(self.torch.isfinite(p).all()):
                bad = (~self.torch.isfinite(p)).nonzero()[0].tolist()
                raise SpecError(
                    f"non-finite value {float(p.detach()[tuple(bad)])!r} at index {tuple(bad)}",
                    where=pname,
                    expected="finite weights",
                )

    def read_activation(self) -> Activation:
        """The MLP activation (``config.hidden_act``; Bloom's own tanh-GELU, noted)."""
        if self.type == "bloom":
            self.notes["activation"] = (
                "bloom_gelu_forward: x/2·(1 + tanh(0.79788456·x·(1 + 0.044715x²))) imported "
                "as gelu_tanh with √(2/π) = 0.7978845608028654: the constants differ by "
                f"{math.sqrt(2 / math.pi) - BLOOM_GELU_CONSTANT:.3e} (relative 1.0e-9), so "
                "each activation differs from the checkpoint's by at most ~1e-9·|x|"
            )
            return Activation.GELU_TANH
        act = self.field("hidden_act")
        if act not in ACTIVATIONS:
            self.refuse(
                "hidden_act",
                f"activation {act!r} (not exactly one of attncert's)",
                "one of " + ", ".join(ACTIVATIONS),
            )
        return ACTIVATIONS[act]

    def length_limit(self, max_length: int | None) -> np.ndarray | None:
        """A zero position table of ``max_length`` rows when the model needs a length bound
        (sliding window), else None."""
        window = None
        if self.type in ("mistral", "qwen2"):
            window = self.field("sliding_window")
            if self.type == "qwen2":
                use = self.field("use_sliding_window", False)
                types = self.field("layer_types", None)
                if not use or (types is not None and "sliding_attention" not in types):
                    window = None
        if max_length is not None and (
            isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1
        ):
            raise SpecError(f"max_length {max_length!r}", where="max_length", expected="≥ 1")
        if window is None:
            if max_length is None:
                return None
            self.notes["max_length"] = (
                f"inputs limited to {max_length} tokens by a zero position table (the model "
                "itself has no limit)"
            )
            return np.zeros((max_length, self.d))
        if max_length is None or max_length > window:
            self.refuse(
                "sliding_window",
                f"sliding window of {window} tokens: attention windows shorter than the input "
                "cannot be represented"
                + (f" (max_length {max_length} > {window})" if max_length is not None else ""),
                f"max_length ≤ {window} (the inputs then never exceed the window), or no window",
            )
        self.notes["max_length"] = (
            f"sliding window {window} ≥ max_length {max_length}: no key is ever outside the "
            f"window; a zero position table of {max_length} rows makes the evaluator refuse "
            "longer inputs"
        )
        return np.zeros((max_length, self.d))
