"""One TransformerLens import: the ``HookedTransformer``'s class and ``cfg``, read field by
field (each field used is recorded for ``meta``) and refused, naming the ``cfg`` field and
the supported values, where attncert cannot represent it; forward hooks and non-finite
weights refused too.

:class:`TLImport` is the mutable record that
:mod:`~attncert.model.importers.tlens_positions`,
:mod:`~attncert.model.importers.tlens_blocks` and
:mod:`~attncert.model.importers.tlens_readout` fill in;
:func:`~attncert.model.importers.transformer_lens.model_from_transformer_lens` drives them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncert.errors import SpecError, UnsupportedError
from attncert.model.importers._common import plain_config, require_torch
from attncert.model.spec import Activation, AttentionKind, Mask, Rotary

ACTIVATIONS = {
    "relu": Activation.RELU,
    "gelu": Activation.GELU,
    "gelu_new": Activation.GELU_TANH,
    "gelu_pytorch_tanh": Activation.GELU_TANH,
    "silu": Activation.SILU,
}
POSITIONS = ("standard", "rotary", "alibi")
NORMALIZATIONS = ("LN", "LNPre", "RMS", "RMSPre", None)
ATTENTION_DIRS = {"causal": Mask.FUTURE, "bidirectional": Mask.NONE}
_QK_NORM_ARCHITECTURES = ("OlmoeForCausalLM", "Olmo2ForCausalLM", "Olmo3ForCausalLM")

# (field, value that keeps the forward pass attncert can express, what it does otherwise)
_OFF_FIELDS = (
    ("use_NTK_by_parts_rope", False, "NTK-by-parts rope frequencies"),
    ("use_yarn_rope", False, "YaRN rope frequencies"),
    ("use_dynamic_ntk_rope", False, "a rope base that grows with the input length"),
    ("use_logn_attn", False, "queries scaled by log(position) past the training length"),
    ("use_qk_norm", False, "RMSNorm of queries and keys"),
    ("clip_qkv", None, "queries, keys and values clamped"),
    ("use_local_attn", False, "local attention windows"),
    ("use_attention_sinks", False, "a learned sink logit in every softmax"),
    ("num_experts", None, "a mixture-of-experts MLP"),
    ("use_normalization_before_and_after", False, "norms after the attention and MLP"),
    ("load_in_4bit", False, "4-bit quantized weights"),
)


class TLImport:
    """One import: the model, its cfg and what has been recorded for ``meta``
    (``fields``: the cfg fields read; ``notes``; ``score_scale``). :meth:`check_config`
    sets ``pos_type``, ``norm_type``, ``attn_only``, ``activation`` and ``mask``; the
    positions set ``rotary`` / ``slopes``."""

    def __init__(self, model: Any):
        self.torch = require_torch("importing a TransformerLens model")
        cls = type(model).__name__
        names = {c.__name__ for c in type(model).__mro__}
        if "HookedTransformer" not in names:
            raise UnsupportedError(
                f"model class {cls}",
                where="model",
                expected="a transformer_lens HookedTransformer (TransformerLens 2 or 3; "
                "a TransformerBridge wraps a Hugging Face model: import that with model_from_hf)",
            )
        self.model = model
        self.cfg = model.cfg
        self.cls = cls
        self.kind = AttentionKind.SOFTMAX  # the caller's kind, set after the class check
        self.notes: dict[str, Any] = {}
        self.score_scale: dict[str, str] = {}
        self.fields: dict[str, Any] = {}
        self.d = 0
        self.activation: Activation | None = None
        self.rotary: Rotary | None = None
        self.slopes: np.ndarray | None = None

    def field(self, name: str, default: Any = None) -> Any:
        """``cfg.<name>`` (recorded in meta as a cfg field used)."""
        value = getattr(self.cfg, name, default)
        self.fields[name] = plain_config(value)
        return value

    def refuse(self, field: str, message: str, expected: str) -> None:
        raise UnsupportedError(message, where=f"cfg.{field}", expected=expected)

    def check_config(self) -> None:
        """Every ``cfg`` field that changes the forward pass: supported, or refused."""
        for f in ("d_model", "d_head", "n_heads", "n_layers", "n_ctx", "d_vocab", "d_vocab_out"):
            self.field(f)
        self.pos_type = self.field("positional_embedding_type", "standard")
        if self.pos_type not in POSITIONS:
            what = {
                "shortformer": "shortformer positions (added to the queries' and keys' inputs "
                "only, not to the residual stream)",
                "relative_positional_bias": "T5's bucketed relative position bias",
            }.get(self.pos_type, f"positional embedding type {self.pos_type!r}")
            self.refuse(
                "positional_embedding_type", what, "one of " + ", ".join(map(repr, POSITIONS))
            )
        self.norm_type = self.field("normalization_type", "LN")
        if self.norm_type not in NORMALIZATIONS:
            self.refuse(
                "normalization_type",
                f"normalization type {self.norm_type!r}",
                "one of " + ", ".join(map(repr, NORMALIZATIONS)),
            )
        self.attn_only = bool(self.field("attn_only", False))
        self.activation = None
        if not self.attn_only:
            act = self.field("act_fn")
            if act not in ACTIVATIONS:
                self.refuse(
                    "act_fn",
                    f"activation {act!r} (not exactly one of attncert's)",
                    "one of " + ", ".join(ACTIVATIONS),
                )
            self.activation = ACTIVATIONS[act]
            self.field("d_mlp")
            self.field("gated_mlp", False)
        self.field("parallel_attn_mlp", False)
        self.field("eps")
        direction = self.field("attention_dir", "causal")
        if direction not in ATTENTION_DIRS:
            self.refuse(
                "attention_dir", f"attention direction {direction!r}", "'causal' or 'bidirectional'"
            )
        self.mask = ATTENTION_DIRS[direction]
        if self.pos_type == "alibi" and self.mask is Mask.NONE:
            self.refuse(
                "attention_dir",
                "ALiBi with bidirectional attention: TransformerLens's bias m·min(j − i, 0) is "
                "0 for keys after the query, attncert's −m·(i − j) is not",
                "'causal' with ALiBi",
            )
        if self.pos_type == "rotary" and self.field("rotary_adjacent_pairs", False):
            self.refuse(
                "rotary_adjacent_pairs",
                "rotary_adjacent_pairs=True (GPT-J's interleaved pairs 2k, 2k + 1)",
                "False (the rotate-half layout: pairs k, k + rotary_dim/2)",
            )
        for f, off, what in _OFF_FIELDS:
            value = self.field(f, off)
            if value is not None and value != off:
                self.refuse(f, f"{what} ({f} = {value!r})", f"{f}={off!r}")
        for f in ("attn_scores_soft_cap", "output_logits_soft_cap"):
            cap = self.field(f, -1.0)
            if cap is not None and cap > 0:
                self.refuse(f, f"a soft cap c·tanh(x/c) with c = {cap}", "a value ≤ 0 (disabled)")
        arch = self.field("original_architecture")
        if arch in _QK_NORM_ARCHITECTURES:
            self.refuse(
                "original_architecture",
                f"{arch}: RMSNorm of queries and keys"
                + (" and norms after the sublayers" if arch != "OlmoeForCausalLM" else ""),
                "an architecture without q/k norms (not " + ", ".join(_QK_NORM_ARCHITECTURES) + ")",
            )
        for f in ("use_attn_scale", "attn_scale", "scale_attn_by_inverse_layer_idx"):
            self.field(f)
        nh, nkv = int(self.cfg.n_heads), self.field("n_key_value_heads")
        if nkv is not None and (int(nkv) < 1 or nh % int(nkv)):
            self.refuse(
                "n_key_value_heads",
                f"{nkv} key/value heads for {nh} query heads",
                "a divisor of n_heads",
            )

    def check_hooks(self) -> None:
        """Forward hooks (``add_hook``, ``hooks(...)``) change the forward pass."""
        for mod_name, mod in self.model.named_modules():
            if getattr(mod, "_forward_hooks", None) or getattr(mod, "_forward_pre_hooks", None):
                raise UnsupportedError(
                    "a forward hook is attached (it changes the forward pass)",
                    where=mod_name or "model",
                    expected="no hooks: model.reset_hooks()",
                )

    def check_finite(self) -> None:
        """Every parameter finite, except the embedding and unembedding matrices, whose
        used rows / columns are checked where they are read."""
        skip = {id(self.model.embed.W_E), id(self.model.unembed.W_U)}
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
