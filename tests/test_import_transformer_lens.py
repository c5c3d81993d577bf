"""The TransformerLens importer (``model_from_transformer_lens``) against TransformerLens's
own forward pass: tiny ``HookedTransformer`` models (d_model 16, 2 layers) built from
configs with random weights (seeded; nothing downloaded), in float64, on strings of
n = 1, 2, 7 and 64 symbols after a BOS token.

Error measure: max |ours − theirs| / max |theirs| over the unembed logits of the kept
symbols at every position, per batch of one length; the worst over lengths is reported
(``-s`` prints it per case). TransformerLens computes everything in the model's dtype
(the rotary angles too, in float64 for a float64 model), so the only differences are
float64 roundings: tolerance 1e-9 (measured worst ~1e-15).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from lazy_import import lazy_importorskip

from attncert.errors import SpecError, UnsupportedError
from attncert.model import forward, load_model, save_model
from attncert.model.importers import model_from_transformer_lens

torch = lazy_importorskip("torch")  # imported at first use
transformer_lens = lazy_importorskip(  # imported at first use
    "transformer_lens",
    require=("HookedTransformer", "HookedTransformerConfig"),
    why=" (4.x removed HookedTransformer)",
)

TOKENS = {"0": 3, "1": 7, "^": 1, "$": 2}
LENGTHS = (1, 2, 7, 64)
TOL = 1e-9

BASE = dict(
    d_model=16,
    d_head=4,
    n_heads=4,
    n_layers=2,
    n_ctx=72,
    d_vocab=10,
    d_mlp=24,
    act_fn="gelu",
    device="cpu",
)  # and dtype=torch.float64, added by _build

CASES = {
    # learned positions, LayerNorm, erf-GELU
    "standard-ln-gelu": {},
    # rotary on 4 of 8 head coordinates, base 500, RMSNorm, SwiGLU, 2 kv heads for 4;
    # d_head 8: the score scale as the temperature fl(1/√8)
    "rotary-rms-gated-gqa": dict(
        positional_embedding_type="rotary",
        d_head=8,
        rotary_dim=4,
        rotary_base=500,
        normalization_type="RMS",
        gated_mlp=True,
        act_fn="silu",
        n_key_value_heads=2,
    ),
    # ALiBi, 4 heads: slopes 1/4, 1/16, 1/64, 1/256
    "alibi": dict(positional_embedding_type="alibi", act_fn="relu"),
    # GPT-J style parallel attention + MLP, tanh-GELU
    "parallel": dict(parallel_attn_mlp=True, act_fn="gelu_new"),
    "attn-only": dict(attn_only=True, d_mlp=None),
    # LayerNorm without weights; d_head 3 (score scale fl(1/√3) as a temperature),
    # bidirectional attention
    "lnpre-bidirectional": dict(
        normalization_type="LNPre", d_head=3, n_heads=2, attention_dir="bidirectional"
    ),
    # LN on the embeddings, final RMSNorm, scores also divided by layer + 1, more outputs
    "post-embedding-ln-final-rms": dict(
        post_embedding_ln=True,
        final_rms=True,
        scale_attn_by_inverse_layer_idx=True,
        d_vocab_out=12,
        act_fn="gelu_pytorch_tanh",
    ),
}


def _build(case="standard-ln-gelu", seed=0, **overrides):
    cfg = transformer_lens.HookedTransformerConfig(
        **{**BASE, "dtype": torch.float64, **CASES[case], **overrides, "seed": seed}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = transformer_lens.HookedTransformer(cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # weights well away from the initialisation, norm gains around 1
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
            p.copy_(1 + 0.3 * noise if name.endswith(".w") else 0.4 * noise)
    return model.eval()


def _import(model, **kw):
    return model_from_transformer_lens(model, alphabet="01", bos="^", token_ids=TOKENS, **kw)


def _tokens(model, strings):
    vocab = model.embedding.vocab
    return torch.tensor([[TOKENS[vocab[t]] for t in model.encode(s)] for s in strings])


def _worst(tl, model, lengths=LENGTHS, seed=0, count=3):
    rng = np.random.default_rng(seed)
    ids = [TOKENS[s] for s in model.readout.lm_symbols]
    worst = 0.0
    for n in lengths:
        strings = ["".join(rng.choice(["0", "1"], size=n)) for _ in range(count)]
        with torch.no_grad():
            want = tl(_tokens(model, strings))[..., ids].numpy()
        got = forward(model, strings).lm_logits
        assert got.shape == want.shape
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    return worst


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_imported_model_agrees_with_transformer_lens(case):
    tl = _build(case)
    model = _import(tl)
    worst = _worst(tl, model)
    print(case, f"{worst:.2e}")
    assert worst <= TOL, (case, worst)


@pytest.mark.parametrize("case", ["standard-ln-gelu", "rotary-rms-gated-gqa", "alibi"])
def test_rigorous_evaluator_encloses_transformer_lens(case):
    """The kernel's arb forward pass (an accept readout = the unembed row of '1') encloses
    TransformerLens's logit of '1' at the last position, up to its float64 rounding."""
    tl = _build(case)
    from attncert.kernel.core.trace import forward_rigorous

    head = torch.nn.Linear(16, 1, dtype=torch.float64)
    with torch.no_grad():
        head.weight.copy_(tl.unembed.W_U[:, TOKENS["1"]][None])
        head.bias.copy_(tl.unembed.b_U[TOKENS["1"]])
    model = _import(tl, readout=head)
    for s in ("0", "0110"):
        with torch.no_grad():
            theirs = float(tl(_tokens(model, [s]))[0, -1, TOKENS["1"]])
        lo, hi = (float(v) for v in forward_rigorous(model, s).logit_interval())
        slack = 1e-12 * (1 + abs(theirs))
        assert lo - slack <= theirs <= hi + slack, (s, lo, theirs, hi)
        assert hi - lo <= 1e-4 * (1 + abs(theirs))
        assert abs(forward(model, [s]).logits[0] - theirs) <= slack


def test_hook_paths_compute_the_same():
    """Options that only add hook points or split the computation are accepted."""
    tl = _build(
        "rotary-rms-gated-gqa",
        use_attn_result=True,
        use_split_qkv_input=True,
        use_hook_mlp_in=True,
        use_hook_tokens=True,
        ungroup_grouped_query_attention=True,
    )
    assert _worst(tl, _import(tl), (1, 7)) <= TOL


def test_hard_kinds_and_length_bounds():
    """A hard import keeps RoPE / ALiBi (ALiBi's 1/√d_head stays folded in W_Q);
    max_length bounds a rotary model's inputs by a zero position table."""
    for case in ("rotary-rms-gated-gqa", "alibi"):
        tl = _build(case)
        soft, hard = _import(tl), _import(tl, kind="average")
        for s, h in zip(soft.layers[0].heads, hard.layers[0].heads, strict=True):
            assert h.kind.value == "average" and h.temperature is None
            assert h.rotary == s.rotary and h.alibi == s.alibi
            if case == "alibi":
                assert np.array_equal(h.w_q, s.w_q)
        forward(hard, ["0110"])
    bounded = _import(_build("rotary-rms-gated-gqa"), max_length=9)
    assert bounded.embedding.table.shape == (9, 16) and not bounded.embedding.table.any()
    with pytest.raises(SpecError, match=r"max_length 73.*n_ctx"):
        _import(_build(), max_length=73)


def test_the_comparison_can_fail():
    """A changed rope base, a changed weight: each is seen."""
    tl = _build("rotary-rms-gated-gqa")
    model = _import(tl)
    assert _worst(tl, model, (7,)) <= TOL
    other = _import(_build("rotary-rms-gated-gqa", rotary_base=10000))
    assert _worst(tl, other, (7,)) > 1e-6
    with torch.no_grad():
        tl.blocks[1].attn.W_Q[0] *= 1.5
    assert _worst(tl, model, (7,)) > 1e-3


def test_structure_and_meta_of_imported_models():
    rot = _import(_build("rotary-rms-gated-gqa"))
    heads = rot.layers[0].heads
    assert len(heads) == 4 and all(h.mask.value == "future" for h in heads)
    assert np.array_equal(heads[0].w_k, heads[1].w_k)  # kv head 0 for query heads 0, 1
    assert not np.array_equal(heads[1].w_k, heads[2].w_k)
    assert heads[0].b_o is not None and heads[1].b_o is None
    assert heads[0].rotary.dim == 4 and heads[0].rotary.base == 500
    assert rot.layers[0].ffn.gated and not rot.layers[0].ffn.b1.any()
    assert rot.final_norm.rms and rot.positional_scheme == "rope"
    meta = rot.meta["transformer_lens"]
    assert "h // 2" in meta["gqa"] and "b_out + W_out·b_in" in meta["gated_mlp"]
    assert meta["token_ids"] == {"0": 3, "1": 7, "^": 1}
    assert "temperature" in meta["score_scale"]["8"] and "rotary_dim" in meta["config"]
    assert (
        "folded into w_q (exact)" in _import(_build()).meta["transformer_lens"]["score_scale"]["4"]
    )
    alibi = _import(_build("alibi"))
    assert [h.alibi for h in alibi.layers[0].heads] == [1 / 4, 1 / 16, 1 / 64, 1 / 256]
    assert alibi.positional_scheme == "alibi"
    assert "exact" in alibi.meta["transformer_lens"]["alibi"]["note"]
    assert all(layer.parallel for layer in _import(_build("parallel")).layers)
    assert all(layer.ffn is None for layer in _import(_build("attn-only")).layers)
    pre = _import(_build("lnpre-bidirectional"))
    assert np.array_equal(pre.layers[0].norm1.weight, np.ones(16))
    assert all(h.mask.value == "none" for h in pre.layers[0].heads)
    assert pre.layers[0].heads[0].temperature.coef == 1 / np.sqrt(3)
    std = _import(_build(), max_length=20)
    assert std.embedding.table.shape == (20, 16) and std.positional_scheme == "learned"
    post = _import(_build("post-embedding-ln-final-rms"))  # LN(W_E) rows, then W_pos
    assert len(post.layers) == 2 and post.final_norm.rms
    assert "before W_pos" in post.meta["transformer_lens"]["post_embedding_ln"]
    tl = _build("rotary-rms-gated-gqa", post_embedding_ln=True)  # a head-less norm layer
    rope = _import(tl)
    assert len(rope.layers) == 3 and rope.layers[0].heads == () and rope.layers[0].ffn is None
    assert _worst(tl, rope, (7,)) <= TOL


def test_accept_readout_and_lm_symbols():
    """readout nn.Linear(d, 2): the accept logit is (row 1 − row 0) at the last position
    after ln_final; the next-symbol head keeps lm_symbols' logits in their order."""
    tl = _build()
    head = torch.nn.Linear(16, 2, dtype=torch.float64)
    model = _import(tl, readout=head, lm_symbols="10")
    assert model.readout.lm_symbols == ("1", "0")
    strings = ["0110", "1001"]
    tokens = _tokens(model, strings)
    with torch.no_grad():
        logits, cache = tl.run_with_cache(tokens)
        final = tl.ln_final(cache["blocks.1.hook_resid_post"])[:, -1]
        out = head(final).numpy()
    ours = forward(model, strings)
    ids = [TOKENS["1"], TOKENS["0"]]
    assert np.allclose(ours.lm_logits, logits[..., ids].numpy(), rtol=1e-12, atol=0)
    assert np.allclose(ours.logits, out[:, 1] - out[:, 0], rtol=1e-12, atol=1e-14)
    plain = _import(tl)
    assert not plain.readout.weight.any() and plain.readout.lm_symbols == ("0", "1")


def test_saved_and_loaded_models_hash_and_compute_the_same(tmp_path):
    model = _import(_build("rotary-rms-gated-gqa"))
    again = load_model(save_model(model, tmp_path / "m.json"))
    assert again.digest == model.digest
    a, b = forward(model, ["0110100"]), forward(again, ["0110100"])
    assert np.array_equal(a.lm_logits, b.lm_logits)


# ----- refusals --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (
            {"positional_embedding_type": "shortformer"},
            r"cfg\.positional_embedding_type: shortformer positions.*'standard', 'rotary'",
        ),
        (
            {"positional_embedding_type": "rotary", "rotary_adjacent_pairs": True},
            r"cfg\.rotary_adjacent_pairs: rotary_adjacent_pairs=True.*rotate-half",
        ),
        ({"act_fn": "solu_ln"}, r"cfg\.act_fn: activation 'solu_ln'.*relu, gelu"),
        ({"act_fn": "gelu_fast"}, r"cfg\.act_fn: activation 'gelu_fast'"),
        ({"attn_scores_soft_cap": 30.0}, r"cfg\.attn_scores_soft_cap: a soft cap"),
        ({"output_logits_soft_cap": 30.0}, r"cfg\.output_logits_soft_cap: a soft cap"),
        (
            {"normalization_type": "RMS", "use_normalization_before_and_after": True},
            r"cfg\.use_normalization_before_and_after: norms after",
        ),
        (
            {"use_local_attn": True, "window_size": 4, "attn_types": ["local", "global"]},
            r"cfg\.use_local_attn: local attention windows",
        ),
        ({"use_qk_norm": True}, r"cfg\.use_qk_norm: RMSNorm of queries and keys"),
        ({"clip_qkv": 5.0}, r"cfg\.clip_qkv: queries, keys and values clamped"),
        (
            {"positional_embedding_type": "rotary", "use_yarn_rope": True},
            r"cfg\.use_yarn_rope: YaRN",
        ),
        ({"use_attention_sinks": True}, r"cfg\.use_attention_sinks: a learned sink"),
        (
            {"positional_embedding_type": "alibi", "attention_dir": "bidirectional"},
            r"cfg\.attention_dir: ALiBi with bidirectional attention",
        ),
    ],
)
def test_unsupported_configs_are_refused_naming_the_field(overrides, match):
    tl = _build(**overrides)
    with pytest.raises(UnsupportedError, match=match):
        _import(tl)


def test_hooks_and_other_classes_are_refused():
    tl = _build()
    tl.add_hook("blocks.0.hook_resid_mid", lambda x, hook: 2 * x)
    with pytest.raises(UnsupportedError, match=r"blocks\.0\.hook_resid_mid: a forward hook"):
        _import(tl)
    tl.reset_hooks()
    _import(tl)
    with pytest.raises(UnsupportedError, match=r"model: model class Linear.*HookedTransformer"):
        _import(torch.nn.Linear(2, 2))


def test_bad_token_ids_are_refused():
    tl = _build("post-embedding-ln-final-rms")  # d_vocab 10, d_vocab_out 12
    with pytest.raises(SpecError, match=r"token_ids: no token id for symbol '\^'"):
        model_from_transformer_lens(tl, alphabet="01", bos="^", token_ids={"0": 3, "1": 7})
    with pytest.raises(SpecError, match=r"token_ids: token id 10 for '1'.*\(d_vocab\)"):
        model_from_transformer_lens(tl, alphabet="01", token_ids={"0": 3, "1": 10})
    with pytest.raises(SpecError, match="same token id"):
        model_from_transformer_lens(tl, alphabet="01", token_ids={"0": 3, "1": 3})
    with pytest.raises(SpecError, match="no token id for LM symbol '#'"):
        _import(tl, lm_symbols="01#")
    with pytest.raises(SpecError, match=r"token id 12 for LM symbol '#'.*d_vocab_out"):
        model_from_transformer_lens(
            tl, alphabet="01", token_ids={**TOKENS, "#": 12}, lm_symbols="01#"
        )
    _import(tl, lm_symbols="01")


def test_non_finite_weights_are_refused_naming_the_parameter():
    tl = _build()
    with torch.no_grad():
        tl.blocks[1].attn.W_K[2, 3, 0] = float("nan")
    with pytest.raises(SpecError, match=r"blocks\.1\.attn\.W_K: non-finite value nan"):
        _import(tl)
    tl = _build()
    with torch.no_grad():
        tl.embed.W_E[7, 0] = float("inf")
    with pytest.raises(SpecError, match=r"embed\.W_E \(rows of token_ids\).*non-finite"):
        _import(tl)
    with torch.no_grad():
        tl.embed.W_E[7, 0] = 0.0
        tl.embed.W_E[8, 0] = float("inf")  # not a symbol's row
        tl.unembed.W_U[0, 9] = float("nan")  # not an LM symbol's column
    _import(tl)
    with torch.no_grad():
        tl.unembed.W_U[0, 3] = float("nan")
    with pytest.raises(SpecError, match=r"unembed\.W_U \(columns of lm_symbols\)"):
        _import(tl)
