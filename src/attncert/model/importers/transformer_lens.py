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

Needs ``torch`` and ``transformer_lens`` (``pip install 'attncert[tlens]'``); nothing is
downloaded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attncert.errors import SpecError, UnsupportedError
from attncert.model.importers._common import (
    accept_readout,
    attention_kind,
    check_finite,
    fold_scale,
    norm_only_layer,
    plain_config,
    require_torch,
    scale_query,
    to_numpy,
    token_table,
)
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
    return _Importer(model).run(
        alphabet=tuple(alphabet),
        token_ids=token_ids,
        bos=bos,
        eos=eos,
        lm_symbols=lm_symbols,
        readout=readout,
        position=position,
        max_length=max_length,
        kind=attention_kind(kind, "kind"),
        name=name,
        meta=meta,
    )


class _Importer:
    """One import: the model, its cfg and what has been recorded for ``meta``."""

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
        self.notes: dict[str, Any] = {}
        self.score_scale: dict[str, str] = {}
        self.fields: dict[str, Any] = {}

    # ----- small helpers --------------------------------------------------------------
    def field(self, name: str, default: Any = None) -> Any:
        """``cfg.<name>`` (recorded in meta as a cfg field used)."""
        value = getattr(self.cfg, name, default)
        self.fields[name] = plain_config(value)
        return value

    def refuse(self, field: str, message: str, expected: str) -> None:
        raise UnsupportedError(message, where=f"cfg.{field}", expected=expected)

    # ----- the import -------------------------------------------------------------------
    def run(
        self,
        *,
        alphabet: tuple[str, ...],
        token_ids: Mapping[str, int],
        bos: str | None,
        eos: str | None,
        lm_symbols: Sequence[str] | None,
        readout: Any,
        position: str | int,
        max_length: int | None,
        kind: AttentionKind,
        name: str | None,
        meta: dict[str, Any] | None,
    ) -> Model:
        self.kind = kind
        self._check_config()
        self._check_hooks()
        self._check_finite()
        model, cfg = self.model, self.cfg
        vocab, ids = token_table(alphabet, bos, eos, token_ids, cfg, "d_vocab")
        word = to_numpy(model.embed.W_E)
        self.d = word.shape[1]
        table = self._positions(max_length)
        rows = word[ids]
        check_finite(rows, "embed.W_E (rows of token_ids)")
        layers: list[Layer] = []
        if self.field("post_embedding_ln", False):
            norm = self._norm(model.embed.ln, "embed.ln", "LN")
            if table is None:
                layers.append(norm_only_layer(norm))
                self.notes["post_embedding_ln"] = (
                    "layers[0] = embed.ln (no heads, no MLP: LN(y + 0), exact)"
                )
            else:  # TransformerLens normalizes W_E[token] before adding W_pos
                rows = _layer_norm_rows(rows, norm)
                self.notes["post_embedding_ln"] = (
                    "embed.ln applied to the symbols' W_E rows before W_pos is added, as "
                    "TransformerLens does: the normalized rows are computed in float64 "
                    "(rounded) and imported as the word embedding"
                )
        emb = Embedding(vocab=vocab, word=rows, table=table)
        for li, block in enumerate(model.blocks):
            layers.append(self._block(li, block))
        final = None
        if self.norm_type is not None:
            final_type = self.norm_type
            if self.field("final_rms", False) and self.norm_type.startswith("LN"):
                final_type = "RMS" + self.norm_type[2:]
            final = self._norm(model.ln_final, "ln_final", final_type)
        ro, label = self._readout(alphabet, eos, lm_symbols, token_ids, readout, position)
        tl_meta = {
            "class": self.cls,
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
            readout=ro,
            bos=bos,
            eos=eos,
            name=name or f"tlens-{self.cfg.model_name}",
            meta={"transformer_lens": tl_meta, **(meta or {})},
            final_norm=final,
        )

    def _check_config(self) -> None:
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

    def _check_hooks(self) -> None:
        """Forward hooks (``add_hook``, ``hooks(...)``) change the forward pass."""
        for mod_name, mod in self.model.named_modules():
            if getattr(mod, "_forward_hooks", None) or getattr(mod, "_forward_pre_hooks", None):
                raise UnsupportedError(
                    "a forward hook is attached (it changes the forward pass)",
                    where=mod_name or "model",
                    expected="no hooks: model.reset_hooks()",
                )

    def _check_finite(self) -> None:
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

    # ----- positions ------------------------------------------------------------------
    def _positions(self, max_length: int | None) -> np.ndarray | None:
        if max_length is not None and (
            isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1
        ):
            raise SpecError(f"max_length {max_length!r}", where="max_length", expected="≥ 1")
        self.rotary = None
        self.slopes = None
        if self.pos_type == "standard":
            w_pos = to_numpy(self.model.pos_embed.W_pos)
            keep = w_pos.shape[0] if max_length is None else max_length
            if keep > w_pos.shape[0]:
                raise SpecError(
                    f"max_length {max_length}",
                    where="max_length",
                    expected=f"1..{w_pos.shape[0]} (n_ctx)",
                )
            self.notes["positions"] = f"pos_embed.W_pos[:{keep}] as the learned position table"
            return w_pos[:keep]
        if self.pos_type == "rotary":
            self.rotary = self._rotary()
        else:
            self.slopes = self._alibi_slopes()
        if max_length is None:
            return None
        self.notes["max_length"] = (
            f"inputs limited to {max_length} tokens by a zero position table (TransformerLens "
            f"itself allows n_ctx = {self.cfg.n_ctx})"
        )
        return np.zeros((max_length, self.d))

    def _rotary(self) -> Rotary:
        cfg = self.cfg
        dh = int(cfg.d_head)
        dim = int(self.field("rotary_dim") or dh)
        base = float(self.field("rotary_base", 10000))
        scale = float(self.field("rotary_scaling_factor", 1.0) or 1.0)
        if dim % 2 or not 2 <= dim <= dh:
            self.refuse(
                "rotary_dim",
                f"rotary dimension {dim} of head dimension {dh}",
                f"an even integer in 2..{dh}",
            )
        rot = Rotary(base=base, dim=dim, scale=scale)
        self._check_rotary_tables(rot)
        self.notes["rope"] = {
            "base": base,
            "dim": dim,
            "head_dim": dh,
            "scale": scale,
            "note": "attncert's angles are the exact t·base^(-2k/dim)/scale; TransformerLens "
            "computes t / (base^(2k/dim)·scale) in float64 for a float64 model (float32 else)",
        }
        return rot

    def _check_rotary_tables(self, rot: Rotary) -> None:
        """Each block's cached cos/sin must be the formula's (to float32 rounding)."""
        for li, block in enumerate(self.model.blocks):
            cos = getattr(block.attn, "rotary_cos", None)
            sin = getattr(block.attn, "rotary_sin", None)
            if cos is None or sin is None:
                continue
            rows = min(cos.shape[0], 64)
            ang = rot.angles(np.arange(rows))
            want_c = np.concatenate([np.cos(ang), np.cos(ang)], axis=1)
            want_s = np.concatenate([np.sin(ang), np.sin(ang)], axis=1)
            got_c, got_s = to_numpy(cos)[:rows], to_numpy(sin)[:rows]
            if (
                got_c.shape != want_c.shape
                or not np.allclose(got_c, want_c, rtol=0, atol=1e-5)
                or not np.allclose(got_s, want_s, rtol=0, atol=1e-5)
            ):
                raise UnsupportedError(
                    f"the rotary cos/sin tables are not those of base {rot.base}, dim {rot.dim}, "
                    f"scale {rot.scale} in the rotate-half layout",
                    where=f"blocks.{li}.attn.rotary_cos",
                    expected="TransformerLens's default rope of cfg.rotary_base / rotary_dim",
                )

    def _alibi_slopes(self) -> np.ndarray:
        nh = int(self.cfg.n_heads)
        attn_cls = type(self.model.blocks[0].attn)
        slopes = to_numpy(attn_cls.create_alibi_multipliers(nh, "cpu"))
        exact = all(math.frexp(s)[0] == 0.5 for s in slopes)
        self.notes["alibi"] = {
            "slopes": [float(s) for s in slopes],
            "note": "TransformerLens's create_alibi_multipliers (float32); it adds the float32 "
            "product m·(j − i) for keys j ≤ i, which softmax sees as attncert's −m·(i − j)"
            + (
                " (every slope a power of two: the products are exact)"
                if exact
                else " (the float32 products m·(j − i) are rounded: relative ~6e-8 of the term)"
            ),
        }
        return slopes

    # ----- blocks -------------------------------------------------------------------------
    def _norm(self, module: Any, where: str, norm_type: str | None) -> LayerNorm | None:
        d = self.d
        if norm_type is None:
            return None
        eps = float(getattr(module, "eps", self.cfg.eps))
        rms = norm_type.startswith("RMS")
        if norm_type.endswith("Pre"):
            weight, bias = np.ones(d), np.zeros(d)
        else:
            weight = to_numpy(module.w)
            b = getattr(module, "b", None)
            bias = np.zeros(d) if b is None or rms else to_numpy(b)
        expected = {"LN": "LayerNorm", "LNPre": "LayerNormPre", "RMS": "RMSNorm"}
        want = expected.get(norm_type, "RMSNormPre")
        if type(module).__name__ != want:
            raise UnsupportedError(
                f"{type(module).__name__} is not a {want}",
                where=where,
                expected=f"the {want} of cfg.normalization_type {self.norm_type!r}",
            )
        return LayerNorm(weight, bias, eps, NormKind.RMS if rms else NormKind.LAYER)

    def _block(self, li: int, block: Any) -> Layer:
        where = f"blocks.{li}"
        norm1 = self._norm(getattr(block, "ln1", None), f"{where}.ln1", self.norm_type)
        heads = self._heads(li, block.attn, where)
        ffn, norm2 = None, None
        if not self.attn_only:
            norm2 = self._norm(getattr(block, "ln2", None), f"{where}.ln2", self.norm_type)
            ffn = self._mlp(block.mlp, where)
        parallel = bool(self.cfg.parallel_attn_mlp) and not self.attn_only
        return Layer(tuple(heads), ffn, True, norm1, norm2, NormPosition.PRE, parallel=parallel)

    def _heads(self, li: int, attn: Any, where: str) -> list[Head]:
        nh = int(self.cfg.n_heads)
        wq, wk, wv, wo = (to_numpy(getattr(attn, n)) for n in ("W_Q", "W_K", "W_V", "W_O"))
        bq, bk, bv, bo = (to_numpy(getattr(attn, n)) for n in ("b_Q", "b_K", "b_V", "b_O"))
        if wk.shape[0] != nh or wv.shape[0] != nh:
            raise UnsupportedError(
                f"W_K/W_V with {wk.shape[0]}/{wv.shape[0]} heads for {nh} query heads",
                where=f"{where}.attn",
                expected=f"{nh} (grouped heads expanded by repeat_interleave)",
            )
        if li == 0 and self.cfg.n_key_value_heads is not None:
            rep = nh // int(self.cfg.n_key_value_heads)
            self.notes["gqa"] = (
                f"{self.cfg.n_key_value_heads} key/value heads shared by {nh} query heads: "
                f"query head h reads key/value head h // {rep} (repeat_interleave), expanded "
                f"into {nh} heads"
            )
        heads = []
        for h in range(nh):
            q_w, q_b, temp = self._scale(
                np.ascontiguousarray(wq[h].T), bq[h], float(attn.attn_scale), where
            )
            heads.append(
                Head(
                    q_w,
                    np.ascontiguousarray(wk[h].T),
                    np.ascontiguousarray(wv[h].T),
                    np.ascontiguousarray(wo[h].T),
                    kind=self.kind,
                    mask=self.mask,
                    temperature=temp,
                    b_q=q_b,
                    b_k=bk[h],
                    b_v=bv[h],
                    b_o=bo if h == 0 else None,
                    rotary=self.rotary,
                    alibi=None if self.slopes is None else float(self.slopes[h]),
                )
            )
        return heads

    def _scale(
        self, w_q: np.ndarray, b_q: np.ndarray, s: float, where: str
    ) -> tuple[np.ndarray, np.ndarray, Temperature | None]:
        """Scores q·k / s (``attn.attn_scale``) as W_Q, b_Q and a temperature."""
        if not (math.isfinite(s) and s > 0):
            raise UnsupportedError(
                f"attention scale {s!r}", where=f"{where}.attn.attn_scale", expected="a number > 0"
            )
        sq = round(s * s)
        if sq >= 1 and math.sqrt(sq) == s:
            if self.slopes is not None:
                return fold_scale(w_q, b_q, sq, self.kind, self.score_scale)
            return scale_query(w_q, b_q, sq, self.kind, self.score_scale)
        beta = 1.0 / s
        soft = self.kind is AttentionKind.SOFTMAX
        if self.slopes is not None:
            self.score_scale[repr(s)] = (
                f"fl(1/{s!r}) = {beta!r} folded into w_q and b_q (each product rounded)"
            )
            return w_q * beta, b_q * beta, (Temperature(1.0) if soft else None)
        if soft:
            self.score_scale[repr(s)] = f"softmax inverse temperature {beta!r} = fl(1/{s!r})"
            return w_q, b_q, Temperature(beta)
        self.score_scale[repr(s)] = f"positive factor 1/{s!r} dropped (argmax- and tie-invariant)"
        return w_q, b_q, None

    def _mlp(self, mlp: Any, where: str) -> FeedForward:
        w_in, b_in = to_numpy(mlp.W_in), to_numpy(mlp.b_in)
        w_out, b_out = to_numpy(mlp.W_out), to_numpy(mlp.b_out)
        if not self.cfg.gated_mlp:
            return FeedForward(w_in.T, b_in, w_out.T, b_out, activation=self.activation)
        if type(mlp).__name__ != "GatedMLP":
            raise UnsupportedError(
                f"{type(mlp).__name__} is not a GatedMLP", where=f"{where}.mlp", expected="GatedMLP"
            )
        w_gate = to_numpy(mlp.W_gate)
        self.notes["gated_mlp"] = (
            "TransformerLens's W_out(act(x W_gate) ⊙ (x W_in) + b_in) + b_out as attncert's "
            "W₂(act(W_g y) ⊙ (W₁ y)) + b₂ with b₂ = b_out + W_out·b_in (rounded in float64)"
        )
        b2 = b_out + w_out.T @ b_in
        return FeedForward(
            w_in.T,
            np.zeros(w_in.shape[1]),
            w_out.T,
            b2,
            activation=self.activation,
            w_gate=w_gate.T,
        )

    # ----- readout ------------------------------------------------------------------------
    def _readout(
        self,
        alphabet: tuple[str, ...],
        eos: str | None,
        lm_symbols: Sequence[str] | None,
        token_ids: Mapping[str, int],
        readout: Any,
        position: str | int,
    ) -> tuple[Readout, str]:
        if isinstance(readout, Readout):
            return readout, "the caller's Readout"
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
        n_out = int(self.cfg.d_vocab_out)
        rows = [int(token_ids[s]) for s in symbols]
        bad = [(s, t) for s, t in zip(symbols, rows, strict=True) if not 0 <= t < n_out]
        if bad:
            raise SpecError(
                f"token id {bad[0][1]} for LM symbol {bad[0][0]!r}",
                where="token_ids",
                expected=f"0..{n_out - 1} (d_vocab_out)",
            )
        w_u = to_numpy(self.model.unembed.W_U)[:, rows].T
        check_finite(w_u, "unembed.W_U (columns of lm_symbols)")
        b_u = to_numpy(self.model.unembed.b_U)[rows]
        label = "unembed logits of " + "".join(symbols)
        if readout is None:
            accept = Readout(weight=np.zeros(self.d), position=position)
            label += " (no accept decision)"
        else:
            accept = accept_readout(readout, self.d, position, self.torch.nn)
            label += f"; accept readout at {position!r}"
        ro = Readout(
            weight=accept.weight,
            bias=accept.bias,
            position=accept.position,
            lm_weight=w_u,
            lm_bias=b_u,
            lm_symbols=symbols,
        )
        return ro, label


def _layer_norm_rows(rows: np.ndarray, norm: LayerNorm) -> np.ndarray:
    """LN of each row in float64, in TransformerLens's order of operations."""
    x = rows - rows.mean(axis=-1, keepdims=True)
    scale = np.sqrt((x * x).mean(axis=-1, keepdims=True) + norm.eps)
    return (x / scale) * norm.weight + norm.bias
