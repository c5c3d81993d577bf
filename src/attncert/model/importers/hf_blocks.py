"""The layers of a Hugging Face decoder, one function per family (the installed
``transformers/models/*/modeling_*.py`` are the reference):

* **Llama, Qwen2, Mistral** (:func:`llama_layers`): pre-norm RMSNorm
  (``input_layernorm``, ``post_attention_layernorm``, final ``norm``; ε = ``rms_norm_eps``),
  causal attention with grouped-query heads and q/k/v/o biases when present
  (``o_proj.bias`` → head 0's b_O), RoPE over the whole head, gated MLP
  W₂(act(W_g y) ⊙ W₁ y) with W_g = ``gate_proj``, W₁ = ``up_proj``, W₂ = ``down_proj``
  (``hidden_act`` silu → SwiGLU; gelu → GeGLU; gelu_new/gelu_pytorch_tanh → tanh-GeGLU);
* **GPT-NeoX** (:func:`neox_layers`): pre-norm LayerNorm, fused ``query_key_value``,
  partial rotary, ``use_parallel_residual`` → :attr:`Layer.parallel`, an ungated MLP;
* **Bloom** (:func:`bloom_layers`): ``word_embeddings_layernorm`` as a head-less post-norm
  layer 0 (LN(y + 0) = LN(y), exactly), ALiBi heads, pre-norm LayerNorm, Bloom's tanh-GELU
  (constant 0.79788456 for √(2/π), relative difference 1.0e-9, recorded in ``meta``) as
  gelu_tanh, and
  ``apply_residual_connection_post_layernorm=True`` as four layers per block (exact).

Each returns (layers, final norm) and records what it mapped in ``imp.notes``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncert.errors import UnsupportedError
from attncert.model.importers._common import layer_norm, norm_only_layer, to_numpy
from attncert.model.importers.hf_attention import alibi_slopes, heads, split_fused
from attncert.model.importers.hf_config import HFImport
from attncert.model.importers.hf_rotary import rotary
from attncert.model.spec import FeedForward, Layer, LayerNorm, NormKind, NormPosition


def llama_layers(imp: HFImport) -> tuple[list[Layer], LayerNorm | None]:
    """Llama, Qwen2 and Mistral blocks (module docstring)."""
    nh = int(imp.field("num_attention_heads"))
    nkv = int(imp.field("num_key_value_heads", None) or nh)
    imp.field("hidden_size")
    imp.field("intermediate_size")
    imp.field("rms_norm_eps")
    for f in ("attention_bias", "mlp_bias", "head_dim", "max_position_embeddings"):
        imp.field(f)
    if nh % nkv:
        imp.refuse(
            "num_key_value_heads",
            f"{nkv} key/value heads for {nh} query heads",
            "a divisor of num_attention_heads",
        )
    layers = []
    for li, block in enumerate(imp.core.layers):
        where = f"layers[{li}]"
        attn = block.self_attn
        head_dim = int(attn.head_dim)
        if li == 0:
            imp.rotary = rotary(imp, head_dim)
            if nkv != nh:
                imp.notes["gqa"] = (
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
        wq, bq = imp.linear(attn.q_proj, f"{where}.self_attn.q_proj")
        wk, bk = imp.linear(attn.k_proj, f"{where}.self_attn.k_proj")
        wv, bv = imp.linear(attn.v_proj, f"{where}.self_attn.v_proj")
        wo, bo = imp.linear(attn.o_proj, f"{where}.self_attn.o_proj")
        if wq.shape[0] != nh * head_dim or wk.shape[0] != nkv * head_dim:
            raise UnsupportedError(
                f"q_proj/k_proj shapes {wq.shape}/{wk.shape}",
                where=f"{where}.self_attn",
                expected=f"({nh}·{head_dim}, d) and ({nkv}·{head_dim}, d)",
            )
        hs = heads(imp, wq, bq, wk, bk, wv, bv, wo, bo, nh, nkv, head_dim)
        mlp = block.mlp
        wg, bg = imp.linear(mlp.gate_proj, f"{where}.mlp.gate_proj")
        w1, b1 = imp.linear(mlp.up_proj, f"{where}.mlp.up_proj")
        w2, b2 = imp.linear(mlp.down_proj, f"{where}.mlp.down_proj")
        ffn = FeedForward(
            w1,
            np.zeros(w1.shape[0]) if b1 is None else b1,
            w2,
            np.zeros(w2.shape[0]) if b2 is None else b2,
            activation=imp.activation,
            w_gate=wg,
            b_gate=bg,
        )
        norm1 = _rms(block.input_layernorm, f"{where}.input_layernorm")
        norm2 = _rms(block.post_attention_layernorm, f"{where}.post_attention_layernorm")
        layers.append(Layer(tuple(hs), ffn, True, norm1, norm2, NormPosition.PRE))
    imp.notes["rms_norm"] = (
        "transformers computes RMSNorm in float32 (hidden_states.to(torch.float32)) even "
        "for a float64 model; attncert's RMSNorm is γ ⊙ x/√(mean(x²)+ε) exactly"
    )
    return layers, _rms(imp.core.norm, "norm")


def _rms(module: Any, where: str) -> LayerNorm:
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


def neox_layers(imp: HFImport) -> tuple[list[Layer], LayerNorm | None]:
    """GPT-NeoX blocks (module docstring)."""
    nh = int(imp.field("num_attention_heads"))
    imp.field("hidden_size")
    imp.field("intermediate_size")
    imp.field("layer_norm_eps")
    imp.field("attention_bias")
    parallel = bool(imp.field("use_parallel_residual", True))
    torch, d = imp.torch, imp.d
    layers = []
    for li, block in enumerate(imp.core.layers):
        where = f"layers[{li}]"
        attn = block.attention
        dh = int(attn.head_size)
        if li == 0:
            imp.rotary = rotary(imp, dh)
        w, b = imp.linear(attn.query_key_value, f"{where}.attention.query_key_value")
        wq, wk, wv = split_fused(w, nh, dh)
        bq, bk, bv = (None, None, None) if b is None else split_fused(b, nh, dh)
        wo, bo = imp.linear(attn.dense, f"{where}.attention.dense")
        hs = heads(imp, wq, bq, wk, bk, wv, bv, wo, bo, nh, nh, dh)
        ffn = _plain_mlp(imp, block.mlp, where)
        norm1 = layer_norm(block.input_layernorm, d, f"{where}.input_layernorm", torch)
        norm2 = layer_norm(
            block.post_attention_layernorm, d, f"{where}.post_attention_layernorm", torch
        )
        layers.append(
            Layer(tuple(hs), ffn, True, norm1, norm2, NormPosition.PRE, parallel=parallel)
        )
    imp.notes["residual"] = (
        "parallel: y + attn(LN1 y) + mlp(LN2 y)"
        if parallel
        else "sequential: y + attn(LN1 y), then + mlp(LN2 ·)"
    )
    final = layer_norm(imp.core.final_layer_norm, d, "final_layer_norm", torch)
    return layers, final


def _plain_mlp(imp: HFImport, mlp: Any, where: str) -> FeedForward:
    w1, b1 = imp.linear(mlp.dense_h_to_4h, f"{where}.mlp.dense_h_to_4h")
    w2, b2 = imp.linear(mlp.dense_4h_to_h, f"{where}.mlp.dense_4h_to_h")
    return FeedForward(
        w1,
        np.zeros(w1.shape[0]) if b1 is None else b1,
        w2,
        np.zeros(w2.shape[0]) if b2 is None else b2,
        activation=imp.activation,
    )


def bloom_layers(imp: HFImport) -> tuple[list[Layer], LayerNorm | None]:
    """Bloom blocks (module docstring)."""
    nh = int(imp.field("n_head"))
    imp.field("hidden_size")
    imp.field("layer_norm_epsilon")
    post = bool(imp.field("apply_residual_connection_post_layernorm", False))
    tp = imp.field("pretraining_tp", 1)
    exact = imp.field("slow_but_exact", False)
    if tp and tp > 1 and exact:
        imp.notes["pretraining_tp"] = (
            f"pretraining_tp {tp} with slow_but_exact: the dense layers sum {tp} slices "
            "(a different rounding order of the same sums)"
        )
    torch, d = imp.torch, imp.d
    slopes = alibi_slopes(nh)
    imp.notes["alibi"] = {
        "slopes": [float(s) for s in slopes],
        "note": "transformers' _get_alibi_slopes (bases rounded to float32, float32 powers); "
        "Bloom adds m·j to score(i, j), which softmax sees as attncert's −m·(i − j)",
    }
    emb_norm = layer_norm(imp.core.word_embeddings_layernorm, d, "word_embeddings_layernorm", torch)
    layers = [norm_only_layer(emb_norm)]
    for li, block in enumerate(imp.core.h):
        where = f"h[{li}]"
        attn = block.self_attention
        dh = int(attn.head_dim)
        w, b = imp.linear(attn.query_key_value, f"{where}.self_attention.query_key_value")
        wq, wk, wv = split_fused(w, nh, dh)
        bq, bk, bv = (None, None, None) if b is None else split_fused(b, nh, dh)
        wo, bo = imp.linear(attn.dense, f"{where}.self_attention.dense")
        hs = heads(imp, wq, bq, wk, bk, wv, bv, wo, bo, nh, nh, dh, alibi=slopes)
        ffn = _plain_mlp(imp, block.mlp, where)
        norm1 = layer_norm(block.input_layernorm, d, f"{where}.input_layernorm", torch)
        norm2 = layer_norm(
            block.post_attention_layernorm, d, f"{where}.post_attention_layernorm", torch
        )
        if post:
            layers += [
                norm_only_layer(norm1),
                Layer(tuple(hs), None, True, None, None, NormPosition.PRE),
                norm_only_layer(norm2),
                Layer((), ffn, True, None, None, NormPosition.PRE),
            ]
        else:
            layers.append(Layer(tuple(hs), ffn, True, norm1, norm2, NormPosition.PRE))
    imp.notes["layers"] = (
        "layers[0] = word_embeddings_layernorm (no heads, no MLP, post-norm: LN(y + 0)); "
        + (
            "apply_residual_connection_post_layernorm: each block h[i] is layers "
            "[1+4i … 4+4i]: LN1, u + attn(u), LN2, v + mlp(v)"
            if post
            else "block h[i] is layers[i + 1]"
        )
    )
    final = layer_norm(imp.core.ln_f, d, "ln_f", torch)
    return layers, final
