"""Import a Hugging Face ``transformers`` decoder (Llama, Qwen2, Mistral, GPT-NeoX, Bloom;
GPT-2 through :func:`~attncert.model.importers.hf_gpt2.model_from_hf_gpt2`) as an attncert
:class:`Model` (model-file version 3: rotary positions, ALiBi, RMSNorm, gated MLPs,
parallel residual).

:func:`model_from_hf` dispatches on ``config.model_type``. For each type the base model
(``LlamaModel`` …: hidden states after the final norm, readout weight zero), the causal LM
(``…ForCausalLM``: the LM-head rows of ``lm_symbols`` → :attr:`Readout.lm_weight`; tied
embeddings are read through ``get_output_embeddings()``, the same tensor) and the
sequence classifier (``…ForSequenceClassification``: ``score`` at the last token, 1 label →
the logit, 2 labels → score[1] − score[0]) are imported. What maps to what (the installed
``transformers/models/*/modeling_*.py`` and ``modeling_rope_utils.py`` are the reference):

* **Llama, Qwen2, Mistral**: pre-norm RMSNorm (``input_layernorm``,
  ``post_attention_layernorm``, final ``norm``; ε = ``rms_norm_eps``), causal attention
  (mask ``future``), gated MLP W₂(act(W_g y) ⊙ W₁ y) with W_g = ``gate_proj``, W₁ =
  ``up_proj``, W₂ = ``down_proj`` (``hidden_act`` silu → SwiGLU; gelu → GeGLU;
  gelu_new/gelu_pytorch_tanh → tanh-GeGLU), grouped-query attention expanded as
  ``repeat_kv`` does (query head h reads key/value head h // (H / H_kv)), q/k/v/o biases
  when present (``o_proj.bias`` → head 0's b_O), RoPE over the whole head
  (``rope_parameters``: ``rope_theta``, ``rope_type`` default or linear → Rotary.scale);
* **GPT-NeoX**: pre-norm LayerNorm, ``query_key_value`` fused per head as
  [q_h, k_h, v_h], RoPE on the first ``int(head_size · partial_rotary_factor)``
  coordinates (``rotary_pct``), ``use_parallel_residual`` → :attr:`Layer.parallel`, an
  ungated MLP;
* **Bloom**: ``word_embeddings_layernorm`` as a head-less post-norm layer 0 (it computes
  LN(y + 0) = LN(y), exactly), ALiBi slopes as transformers computes them (float32),
  fused per-head ``query_key_value``, pre-norm LayerNorm, Bloom's tanh-GELU (constant
  0.79788456 for √(2/π), relative difference 1.0e-9, recorded in ``meta``) as gelu_tanh;
  ``apply_residual_connection_post_layernorm=True`` as four layers per block (exact).

The score scale 1/√d_head: folded into W_Q and b_Q when d_head = 4^k (exact), else a
softmax inverse temperature fl(1/√d_head) (:func:`scale_query`); for ALiBi heads the
temperature would also scale the ALiBi term, so fl(1/√d_head) is folded into W_Q and b_Q
(rounded products, recorded in ``meta["hf"]["score_scale"]``).

Refused, naming the config field or module: other ``model_type`` values and classes, rope
types other than default/linear (dynamic, yarn, llama3, longrope, …), a
``partial_rotary_factor`` ≠ 1 on the Llama family (transformers ignores it there or fails),
an odd rotary dimension, sliding windows (Mistral, Qwen2) unless ``max_length`` ≤ the
window (then the model carries a zero position table of ``max_length`` rows so that longer
inputs are refused by the evaluator), activations that are not exactly representable
(``gelu_fast``, ``quick_gelu``, …), dropout in training mode, non-finite weights, bad token
ids, a pad token among the caller's tokens (sequence classifiers).

Needs ``torch`` and ``transformers``; nothing is downloaded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attncert.errors import SpecError, UnsupportedError
from attncert.model.importers._common import (
    attention_kind,
    check_finite,
    fold_scale,
    layer_norm,
    linear_readout_weight,
    norm_only_layer,
    plain_config,
    require_torch,
    scale_query,
    to_numpy,
    token_table,
)
from attncert.model.importers.hf_gpt2 import model_from_hf_gpt2
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
    NormKind,
    NormPosition,
    Readout,
    Rotary,
    Temperature,
)

SUPPORTED = ("gpt2", "llama", "qwen2", "mistral", "gpt_neox", "bloom")
_PREFIX = {
    "llama": "Llama",
    "qwen2": "Qwen2",
    "mistral": "Mistral",
    "gpt_neox": "GPTNeoX",
    "bloom": "Bloom",
}
_SUFFIXES = ("Model", "ForCausalLM", "ForSequenceClassification")
_LLAMA_FAMILY = ("llama", "qwen2", "mistral")

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
ROPE_TYPES = ("default", "linear")
BLOOM_GELU_CONSTANT = 0.79788456  # bloom_gelu_forward's √(2/π)
_DROPOUT_FIELDS = (
    "attention_dropout",
    "hidden_dropout",
    "embd_pdrop",
    "attn_pdrop",
    "resid_pdrop",
)


def model_from_hf(
    model: Any,
    *,
    alphabet: Sequence[str],
    token_ids: Mapping[str, int],
    bos: str | None = None,
    eos: str | None = None,
    lm_symbols: Sequence[str] | None = None,
    max_length: int | None = None,
    kind: AttentionKind | str = AttentionKind.SOFTMAX,
    name: str | None = None,
    meta: dict[str, Any] | None = None,
) -> Model:
    """Import a Hugging Face decoder ``model`` (module docstring), dispatching on
    ``config.model_type``.

    ``token_ids`` maps every alphabet symbol (and ``bos``/``eos`` if given) to its token
    id; ``lm_symbols`` (causal LMs; default the alphabet plus ``eos``) names the symbols
    whose next-token logits are kept, in that order; ``max_length`` (tokens, BOS/EOS
    included) bounds the inputs: required when the model has a sliding window (it must
    not exceed the window), and for GPT-2 the number of ``wpe`` rows kept. ``kind``
    softmax reproduces the model; a hard kind reinterprets every head as hard attention."""
    require_torch("importing a Hugging Face model")
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in SUPPORTED:
        raise UnsupportedError(
            f"model type {model_type!r} ({type(model).__name__})",
            where="config.model_type",
            expected="one of " + ", ".join(SUPPORTED),
        )
    if model_type == "gpt2":
        return model_from_hf_gpt2(
            model,
            alphabet=alphabet,
            token_ids=token_ids,
            bos=bos,
            eos=eos,
            lm_symbols=lm_symbols,
            max_length=max_length,
            kind=kind,
            name=name or "gpt2-model",
            meta=meta,
        )
    return _Importer(model, model_type).run(
        alphabet=tuple(alphabet),
        token_ids=token_ids,
        bos=bos,
        eos=eos,
        lm_symbols=lm_symbols,
        max_length=max_length,
        kind=attention_kind(kind, "kind"),
        name=name or f"{model_type}-model",
        meta=meta,
    )


def alibi_slopes(num_heads: int) -> np.ndarray:
    """Bloom's ALiBi slopes for ``num_heads`` heads, as transformers computes them
    (``_get_alibi_slopes``): with p the largest power of two ≤ H, slopes b^1 … b^p for
    b = 2^(−8/p), then (H > p) c^1, c^3, … c^(2(H−p)−1) for c = 2^(−4/p) — the bases
    rounded to float32 and the powers taken in float32 (exact powers of two for H < 9).
    Returned as float64 (exactly the float32 values)."""
    torch = require_torch("computing ALiBi slopes")
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        raise SpecError(f"{num_heads!r} heads", where="n_head", expected="an integer ≥ 1")
    p = 2 ** math.floor(math.log2(num_heads))
    base = torch.full((), 2 ** (-(2 ** -(math.log2(p) - 3))), dtype=torch.float32)
    slopes = torch.pow(base, torch.arange(1, 1 + p, dtype=torch.int32))
    if p != num_heads:
        extra = torch.full((), 2 ** (-(2 ** -(math.log2(2 * p) - 3))), dtype=torch.float32)
        rest = min(p, num_heads - p)
        powers = torch.arange(1, 1 + 2 * rest, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra, powers)], dim=0)
    return slopes.double().numpy().copy()


class _Importer:
    """One import: the model, its config and what has been recorded for ``meta``."""

    def __init__(self, model: Any, model_type: str):
        self.torch = require_torch("importing a Hugging Face model")
        self.model = model
        self.config = model.config
        self.type = model_type
        self.cls = type(model).__name__
        prefix = _PREFIX[model_type]
        allowed = tuple(prefix + s for s in _SUFFIXES)
        if self.cls not in allowed:
            raise UnsupportedError(
                f"model class {self.cls}", where="model", expected="one of " + ", ".join(allowed)
            )
        self.role = self.cls[len(prefix) :]
        self.core = model if self.role == "Model" else model.base_model
        self.notes: dict[str, str] = {}
        self.score_scale: dict[str, str] = {}
        self.fields: dict[str, Any] = {}

    # ----- small helpers --------------------------------------------------------------
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

    # ----- the import -------------------------------------------------------------------
    def run(
        self,
        *,
        alphabet: tuple[str, ...],
        token_ids: Mapping[str, int],
        bos: str | None,
        eos: str | None,
        lm_symbols: Sequence[str] | None,
        max_length: int | None,
        kind: AttentionKind,
        name: str,
        meta: dict[str, Any] | None,
    ) -> Model:
        self.kind = kind
        self._check_training()
        self._check_finite()
        self.activation = self._activation()
        self.field("vocab_size")
        self.field("n_layer" if self.type == "bloom" else "num_hidden_layers")
        vocab, ids = token_table(alphabet, bos, eos, token_ids, self.config)
        word = to_numpy(self.core.get_input_embeddings().weight)
        self.d = word.shape[1]
        table = self._length_limit(max_length)
        emb = Embedding(vocab=vocab, word=word[ids], table=table)
        check_finite(emb.word, "get_input_embeddings().weight (rows of token_ids)")
        if self.type in _LLAMA_FAMILY:
            layers, final = self._llama_layers()
        elif self.type == "gpt_neox":
            layers, final = self._neox_layers()
        else:
            layers, final = self._bloom_layers()
        readout, label = self._readout(alphabet, eos, lm_symbols, token_ids)
        hf_meta = {
            "class": self.cls,
            "model_type": self.type,
            "config": self.fields,
            "kind": kind.value,
            "token_ids": {s: int(token_ids[s]) for s in vocab},
            "readout": label,
            "score_scale": self.score_scale,
            **self.notes,
        }
        return Model(
            alphabet=alphabet,
            embedding=emb,
            layers=tuple(layers),
            readout=readout,
            bos=bos,
            eos=eos,
            name=name,
            meta={"hf": hf_meta, **(meta or {})},
            final_norm=final,
        )

    def _check_training(self) -> None:
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

    def _check_finite(self) -> None:
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

    def _activation(self) -> Activation:
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

    def _length_limit(self, max_length: int | None) -> np.ndarray | None:
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

    # ----- rotary positions --------------------------------------------------------------
    def _rotary(self, head_dim: int) -> Rotary:
        config = self.config
        params = getattr(config, "rope_parameters", None)
        if params is None:  # transformers < 5
            params = dict(getattr(config, "rope_scaling", None) or {})
            for old, new in (("rope_theta", "rope_theta"), ("rotary_emb_base", "rope_theta")):
                if getattr(config, old, None) is not None:
                    params.setdefault(new, getattr(config, old))
            for old in ("partial_rotary_factor", "rotary_pct"):
                if getattr(config, old, None) is not None:
                    params.setdefault("partial_rotary_factor", getattr(config, old))
        params = dict(params)
        self.fields["rope_parameters"] = plain_config(params)
        if any(isinstance(v, Mapping) for v in params.values()):
            self.refuse(
                "rope_parameters", "per-layer-type rope parameters", "one rope_parameters dict"
            )
        rope_type = params.get("rope_type", params.get("type", "default")) or "default"
        if rope_type not in ROPE_TYPES:
            self.refuse(
                "rope_parameters['rope_type']",
                f"rope type {rope_type!r} (position-dependent or length-dependent frequencies)",
                "'default' or 'linear' (rope_scaling factor → Rotary.scale)",
            )
        base = float(params.get("rope_theta", getattr(config, "rope_theta", 10000.0)))
        scale = 1.0
        if rope_type == "linear":
            scale = float(params["factor"])
        partial = params.get("partial_rotary_factor")
        if self.type in _LLAMA_FAMILY:
            if partial not in (None, 1, 1.0):
                self.refuse(
                    "partial_rotary_factor",
                    f"partial_rotary_factor {partial} on {self.cls}: transformers' "
                    "apply_rotary_pos_emb there rotates the whole head (the default rope "
                    "ignores the factor, linear rope fails)",
                    "partial_rotary_factor 1 (or None)",
                )
            dim = head_dim
        else:
            dim = int(head_dim * (1.0 if partial is None else float(partial)))
        if dim % 2 or dim < 2:
            self.refuse(
                "rope_parameters['partial_rotary_factor']",
                f"rotary dimension {dim} of head dimension {head_dim}: transformers rotates "
                f"{2 * ((dim + 1) // 2)} coordinates with frequencies base^(-2k/{dim})",
                "an even rotary dimension ≥ 2",
            )
        rot = Rotary(base=base, dim=dim, scale=scale)
        self._check_inv_freq(rot)
        self.notes["rope"] = {
            "rope_type": rope_type,
            "base": base,
            "dim": dim,
            "head_dim": head_dim,
            "scale": scale,
            "note": "attncert's angles are the exact t·base^(-2k/dim), t = position/scale; "
            "transformers computes inv_freq, the angles and cos/sin in float32",
        }
        return rot

    def _check_inv_freq(self, rot: Rotary) -> None:
        """The module's own frequencies must be the formula's (to float32 rounding)."""
        emb = getattr(self.core, "rotary_emb", None)
        inv = getattr(emb, "inv_freq", None)
        if inv is None:
            return
        got = to_numpy(inv)
        k = np.arange(rot.dim // 2)
        want = rot.base ** (-2.0 * k / rot.dim) / rot.scale
        scaling = float(getattr(emb, "attention_scaling", 1.0))
        if (
            got.shape != want.shape
            or not np.allclose(got, want, rtol=1e-5, atol=0)
            or (scaling != 1.0)
        ):
            raise UnsupportedError(
                f"rotary_emb.inv_freq (length {got.shape[0]}, attention_scaling {scaling}) is "
                f"not base^(-2k/dim)/scale for base {rot.base}, dim {rot.dim}, scale {rot.scale}",
                where="rotary_emb",
                expected="the default or linear rope of config.rope_parameters",
            )

    # ----- Llama, Qwen2, Mistral ---------------------------------------------------------
    def _llama_layers(self) -> tuple[list[Layer], LayerNorm | None]:
        nh = int(self.field("num_attention_heads"))
        nkv = int(self.field("num_key_value_heads", None) or nh)
        self.field("hidden_size")
        self.field("intermediate_size")
        self.field("rms_norm_eps")
        for f in ("attention_bias", "mlp_bias", "head_dim", "max_position_embeddings"):
            self.field(f)
        if nh % nkv:
            self.refuse(
                "num_key_value_heads",
                f"{nkv} key/value heads for {nh} query heads",
                "a divisor of num_attention_heads",
            )
        layers = []
        head_dim = None
        for li, block in enumerate(self.core.layers):
            where = f"layers[{li}]"
            attn = block.self_attn
            head_dim = int(attn.head_dim)
            if li == 0:
                self.rotary = self._rotary(head_dim)
                if nkv != nh:
                    self.notes["gqa"] = (
                        f"{nkv} key/value heads shared by {nh} query heads: query head h reads "
                        f"key/value head h // {nh // nkv} (repeat_kv), expanded into {nh} heads"
                    )
            scaling = float(getattr(attn, "scaling", head_dim**-0.5))
            if scaling != head_dim**-0.5:
                raise UnsupportedError(
                    f"attention scaling {scaling}",
                    where=f"{where}.self_attn.scaling",
                    expected=f"head_dim**-0.5 = {head_dim**-0.5}",
                )
            wq, bq = self.linear(attn.q_proj, f"{where}.self_attn.q_proj")
            wk, bk = self.linear(attn.k_proj, f"{where}.self_attn.k_proj")
            wv, bv = self.linear(attn.v_proj, f"{where}.self_attn.v_proj")
            wo, bo = self.linear(attn.o_proj, f"{where}.self_attn.o_proj")
            if wq.shape[0] != nh * head_dim or wk.shape[0] != nkv * head_dim:
                raise UnsupportedError(
                    f"q_proj/k_proj shapes {wq.shape}/{wk.shape}",
                    where=f"{where}.self_attn",
                    expected=f"({nh}·{head_dim}, d) and ({nkv}·{head_dim}, d)",
                )
            heads = self._heads(wq, bq, wk, bk, wv, bv, wo, bo, nh, nkv, head_dim)
            mlp = block.mlp
            wg, bg = self.linear(mlp.gate_proj, f"{where}.mlp.gate_proj")
            w1, b1 = self.linear(mlp.up_proj, f"{where}.mlp.up_proj")
            w2, b2 = self.linear(mlp.down_proj, f"{where}.mlp.down_proj")
            ffn = FeedForward(
                w1,
                np.zeros(w1.shape[0]) if b1 is None else b1,
                w2,
                np.zeros(w2.shape[0]) if b2 is None else b2,
                activation=self.activation,
                w_gate=wg,
                b_gate=bg,
            )
            norm1 = self._rms(block.input_layernorm, f"{where}.input_layernorm")
            norm2 = self._rms(block.post_attention_layernorm, f"{where}.post_attention_layernorm")
            layers.append(Layer(tuple(heads), ffn, True, norm1, norm2, NormPosition.PRE))
        self.notes["rms_norm"] = (
            "transformers computes RMSNorm in float32 (hidden_states.to(torch.float32)) even "
            "for a float64 model; attncert's RMSNorm is γ ⊙ x/√(mean(x²)+ε) exactly"
        )
        return layers, self._rms(self.core.norm, "norm")

    def _rms(self, module: Any, where: str) -> LayerNorm:
        if not type(module).__name__.endswith("RMSNorm"):
            raise UnsupportedError(
                f"{type(module).__name__} is not an RMSNorm", where=where, expected="an RMSNorm"
            )
        eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
        weight = to_numpy(module.weight)
        bias = to_numpy(module.bias) if getattr(module, "bias", None) is not None else None
        return LayerNorm(
            weight, np.zeros_like(weight) if bias is None else bias, float(eps), NormKind.RMS
        )

    def _heads(
        self,
        wq: np.ndarray,
        bq: np.ndarray | None,
        wk: np.ndarray,
        bk: np.ndarray | None,
        wv: np.ndarray,
        bv: np.ndarray | None,
        wo: np.ndarray,
        bo: np.ndarray | None,
        nh: int,
        nkv: int,
        dh: int,
        *,
        alibi: np.ndarray | None = None,
    ) -> list[Head]:
        """Heads from the projections: ``wq`` (nh·dh, d), ``wk``/``wv`` (nkv·dh, d) each
        grouped head by head, ``wo`` (d, nh·dh)."""
        rep = nh // nkv
        heads = []
        for h in range(nh):
            sq = slice(h * dh, (h + 1) * dh)
            g = h // rep
            skv = slice(g * dh, (g + 1) * dh)
            q_w = wq[sq]
            q_b = np.zeros(dh) if bq is None else bq[sq]
            if alibi is not None:
                q_w, q_b, temp = self._fold_alibi_scale(q_w, q_b, dh)
            else:
                q_w, q_b, temp = scale_query(q_w, q_b, dh, self.kind, self.score_scale)
            heads.append(
                Head(
                    q_w,
                    wk[skv],
                    wv[skv],
                    wo[:, sq],
                    kind=self.kind,
                    mask=Mask.FUTURE,
                    temperature=temp,
                    b_q=None if bq is None else q_b,
                    b_k=None if bk is None else bk[skv],
                    b_v=None if bv is None else bv[skv],
                    b_o=bo if (h == 0 and bo is not None) else None,
                    rotary=None if alibi is not None else self.rotary,
                    alibi=None if alibi is None else float(alibi[h]),
                )
            )
        return heads

    def _fold_alibi_scale(
        self, w_q: np.ndarray, b_q: np.ndarray, dh: int
    ) -> tuple[np.ndarray, np.ndarray, Temperature | None]:
        """1/√dh into W_Q and b_Q (the ALiBi term is not scaled): :func:`fold_scale`."""
        return fold_scale(w_q, b_q, dh, self.kind, self.score_scale)

    # ----- GPT-NeoX ---------------------------------------------------------------------------
    def _neox_layers(self) -> tuple[list[Layer], LayerNorm | None]:
        nh = int(self.field("num_attention_heads"))
        self.field("hidden_size")
        self.field("intermediate_size")
        self.field("layer_norm_eps")
        self.field("attention_bias")
        parallel = bool(self.field("use_parallel_residual", True))
        torch = self.torch
        layers = []
        for li, block in enumerate(self.core.layers):
            where = f"layers[{li}]"
            attn = block.attention
            dh = int(attn.head_size)
            if li == 0:
                self.rotary = self._rotary(dh)
            w, b = self.linear(attn.query_key_value, f"{where}.attention.query_key_value")
            wq, wk, wv = _split_fused(w, nh, dh)
            bq, bk, bv = (None, None, None) if b is None else _split_fused(b, nh, dh)
            wo, bo = self.linear(attn.dense, f"{where}.attention.dense")
            heads = self._heads(wq, bq, wk, bk, wv, bv, wo, bo, nh, nh, dh)
            ffn = self._plain_mlp(block.mlp, where)
            norm1 = layer_norm(block.input_layernorm, self.d, f"{where}.input_layernorm", torch)
            norm2 = layer_norm(
                block.post_attention_layernorm, self.d, f"{where}.post_attention_layernorm", torch
            )
            layers.append(
                Layer(tuple(heads), ffn, True, norm1, norm2, NormPosition.PRE, parallel=parallel)
            )
        self.notes["residual"] = (
            "parallel: y + attn(LN1 y) + mlp(LN2 y)"
            if parallel
            else "sequential: y + attn(LN1 y), then + mlp(LN2 ·)"
        )
        final = layer_norm(self.core.final_layer_norm, self.d, "final_layer_norm", torch)
        return layers, final

    def _plain_mlp(self, mlp: Any, where: str) -> FeedForward:
        w1, b1 = self.linear(mlp.dense_h_to_4h, f"{where}.mlp.dense_h_to_4h")
        w2, b2 = self.linear(mlp.dense_4h_to_h, f"{where}.mlp.dense_4h_to_h")
        return FeedForward(
            w1,
            np.zeros(w1.shape[0]) if b1 is None else b1,
            w2,
            np.zeros(w2.shape[0]) if b2 is None else b2,
            activation=self.activation,
        )

    # ----- Bloom -----------------------------------------------------------------------------
    def _bloom_layers(self) -> tuple[list[Layer], LayerNorm | None]:
        nh = int(self.field("n_head"))
        self.field("hidden_size")
        self.field("layer_norm_epsilon")
        post = bool(self.field("apply_residual_connection_post_layernorm", False))
        tp = self.field("pretraining_tp", 1)
        exact = self.field("slow_but_exact", False)
        if tp and tp > 1 and exact:
            self.notes["pretraining_tp"] = (
                f"pretraining_tp {tp} with slow_but_exact: the dense layers sum {tp} slices "
                "(a different rounding order of the same sums)"
            )
        torch = self.torch
        slopes = alibi_slopes(nh)
        self.notes["alibi"] = {
            "slopes": [float(s) for s in slopes],
            "note": "transformers' _get_alibi_slopes (bases rounded to float32, float32 powers); "
            "Bloom adds m·j to score(i, j), which softmax sees as attncert's −m·(i − j)",
        }
        emb_norm = layer_norm(
            self.core.word_embeddings_layernorm, self.d, "word_embeddings_layernorm", torch
        )
        layers = [norm_only_layer(emb_norm)]
        for li, block in enumerate(self.core.h):
            where = f"h[{li}]"
            attn = block.self_attention
            dh = int(attn.head_dim)
            w, b = self.linear(attn.query_key_value, f"{where}.self_attention.query_key_value")
            wq, wk, wv = _split_fused(w, nh, dh)
            bq, bk, bv = (None, None, None) if b is None else _split_fused(b, nh, dh)
            wo, bo = self.linear(attn.dense, f"{where}.self_attention.dense")
            heads = self._heads(wq, bq, wk, bk, wv, bv, wo, bo, nh, nh, dh, alibi=slopes)
            ffn = self._plain_mlp(block.mlp, where)
            norm1 = layer_norm(block.input_layernorm, self.d, f"{where}.input_layernorm", torch)
            norm2 = layer_norm(
                block.post_attention_layernorm, self.d, f"{where}.post_attention_layernorm", torch
            )
            if post:
                layers += [
                    norm_only_layer(norm1),
                    Layer(tuple(heads), None, True, None, None, NormPosition.PRE),
                    norm_only_layer(norm2),
                    Layer((), ffn, True, None, None, NormPosition.PRE),
                ]
            else:
                layers.append(Layer(tuple(heads), ffn, True, norm1, norm2, NormPosition.PRE))
        self.notes["layers"] = (
            "layers[0] = word_embeddings_layernorm (no heads, no MLP, post-norm: LN(y + 0)); "
            + (
                "apply_residual_connection_post_layernorm: each block h[i] is layers "
                "[1+4i … 4+4i]: LN1, u + attn(u), LN2, v + mlp(v)"
                if post
                else "block h[i] is layers[i + 1]"
            )
        )
        final = layer_norm(self.core.ln_f, self.d, "ln_f", torch)
        return layers, final

    # ----- readout ----------------------------------------------------------------------------
    def _readout(
        self,
        alphabet: tuple[str, ...],
        eos: str | None,
        lm_symbols: Sequence[str] | None,
        token_ids: Mapping[str, int],
    ) -> tuple[Readout, str]:
        d = self.d
        if self.role == "ForCausalLM":
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
            out = self.model.get_output_embeddings()
            rows = [int(token_ids[s]) for s in symbols]
            weight = to_numpy(out.weight)[rows]
            check_finite(weight, "lm_head.weight (rows of lm_symbols)")
            bias = (
                to_numpy(out.bias)[rows]
                if getattr(out, "bias", None) is not None
                else np.zeros(len(rows))
            )
            tied = out.weight is self.core.get_input_embeddings().weight
            self.fields["tie_word_embeddings"] = plain_config(
                getattr(self.config, "tie_word_embeddings", None)
            )
            self.notes["lm_head"] = "tied to the input embeddings" if tied else "untied"
            ro = Readout(
                weight=np.zeros(d),
                position="last",
                lm_weight=weight,
                lm_bias=bias,
                lm_symbols=symbols,
            )
            return ro, "lm_head logits of " + "".join(symbols) + " (no accept decision)"
        if self.role == "ForSequenceClassification":
            pad = self.field("pad_token_id")
            if pad is not None and pad in {int(t) for t in token_ids.values()}:
                raise UnsupportedError(
                    f"pad_token_id {pad} is one of the symbols' token ids: the classifier "
                    "would pool at the last non-pad token, not the last token",
                    where="config.pad_token_id",
                    expected="a pad token id outside token_ids, or None",
                )
            score = to_numpy(self.model.score.weight)
            bias = (
                to_numpy(self.model.score.bias)
                if getattr(self.model.score, "bias", None) is not None
                else None
            )
            w, b = linear_readout_weight(score, bias, "score (config.num_labels)")
            label = "score[1] - score[0] at the last token" if score.shape[0] == 2 else "score[0]"
            return Readout(weight=w, bias=b, position="last"), label
        label = "none (hidden states after the final norm)"
        return Readout(weight=np.zeros(d), position="last"), label


def _split_fused(w: np.ndarray, nh: int, dh: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A fused ``query_key_value`` weight (3·nh·dh, d) or bias (3·nh·dh,) laid out head by
    head as [q_h, k_h, v_h] (GPT-NeoX's view(…, nh, 3·dh).chunk(3), Bloom's
    view(…, nh, 3, dh)) → (W_Q, W_K, W_V), each (nh·dh, …) head by head."""
    blocks = w.reshape(nh, 3, dh, *w.shape[1:])
    return tuple(blocks[:, t].reshape(nh * dh, *w.shape[1:]) for t in range(3))  # type: ignore[return-value]
