"""The Hugging Face decoder importer (``model_from_hf``) against transformers' own forward
pass: Llama, Qwen2, Mistral, GPT-NeoX and Bloom, built from tiny configs with random
weights (nothing downloaded), in float64, eager attention, on strings of n = 1, 2, 7, 64
and 256 symbols after a BOS token.

Error measure: max |ours − theirs| / max |theirs| over the compared array (LM logits of
the kept symbols at every position, the classifier logit, or the hidden states after the
final norm), per batch of one length; the worst over lengths is reported.

transformers computes some steps in float32 even in a float64 model, while attncert's
semantics are the real-number formulas (the float evaluator rounds only in float64):

* the rotary inv_freq, angles and cos/sin (``…RotaryEmbedding.forward``: float32);
* the softmax (``softmax(…, dtype=torch.float32)`` in every eager attention);
* Llama-family RMSNorm (``hidden_states.to(torch.float32)``).

So each model is compared up to four times (measured worst over the 11 cases below, in
brackets; ``-s`` prints them per case):

(a) against the unmodified model, tolerance 1e-4: float32 angles t·ω are off by up to
    ~t·2⁻²⁴ rad (≈ 1.5e-5 at t = 255) and float32 softmax/RMSNorm by ~1e-7 relative
    [4.4e-6];
(b) rope models: against the same model whose rotary-embedding forward computes the same
    inv_freq formula (and the linear scale) in float64 — transformers' attention, MLP and
    norm code unchanged, hence still float32 softmax and RMSNorm, whose ~6e-8 relative
    roundings the random weights amplify over two layers — tolerance 5e-6 [1.4e-6; 1e-6
    is not reached: it is the float32 softmax/RMSNorm, as (c) shows];
(c) against the same model with, in addition, the softmax and RMSNorm evaluated in the
    input's dtype (float64) and, for Bloom, its GELU's constant 0.79788456 replaced by
    √(2/π) (the function attncert's gelu_tanh is): every remaining difference is float64
    rounding, tolerance 1e-12 [6.7e-15];
(g) Bloom only: as (c) but with Bloom's own GELU constant, which differs from √(2/π) by
    1.0e-9 relative (recorded in the imported model's meta): tolerance 1e-7 [5.1e-9].
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import types

import numpy as np
import pytest
from lazy_import import lazy_importorskip

from attncert.errors import InputError, SpecError, UnsupportedError
from attncert.model import forward, load_model, save_model
from attncert.model.importers import model_from_hf
from attncert.model.importers.hf_decoders import alibi_slopes

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = lazy_importorskip("torch")  # imported at first use
transformers = lazy_importorskip("transformers")  # imported at first use

TOKENS = {"0": 3, "1": 7, "^": 1, "$": 2}
PAD = 9  # pad_token_id of the classifiers: no symbol's token
LENGTHS = (1, 2, 7, 64, 256)
TOL = {"a": 1e-4, "b": 5e-6, "c": 1e-12, "g": 1e-7}


def _llama(**kw):
    base = dict(
        vocab_size=10,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        pad_token_id=PAD,
        bos_token_id=TOKENS["^"],  # the BOS the strings start with (GPT-NeoX's default is 0)
    )
    base.update(kw)
    return base


def _bloom(**kw):
    base = dict(vocab_size=10, hidden_size=24, n_layer=2, n_head=3, pad_token_id=PAD)
    base.update(kw)
    return base


# name: (class, config class, config kwargs, import kwargs)
CASES = {
    # GQA (2 kv heads for 4), q/k/v/o biases, MLP biases, tied embeddings, rope base 500
    "llama-gqa-bias-tied": (
        "LlamaForCausalLM",
        "LlamaConfig",
        _llama(
            num_key_value_heads=2,
            attention_bias=True,
            mlp_bias=True,
            tie_word_embeddings=True,
            rope_parameters={"rope_type": "default", "rope_theta": 500.0},
        ),
        {},
    ),
    # linear rope scaling, explicit head_dim (6 ≠ hidden/heads, not 4^k: a temperature)
    "llama-linear-headdim": (
        "LlamaModel",
        "LlamaConfig",
        _llama(
            hidden_size=24,
            num_attention_heads=2,
            head_dim=6,
            hidden_act="gelu",
            rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0},
        ),
        {},
    ),
    "llama-classifier": (
        "LlamaForSequenceClassification",
        "LlamaConfig",
        _llama(num_labels=2, hidden_act="gelu_pytorch_tanh"),
        {},
    ),
    # q/k/v biases (always in Qwen2), one kv head for 4 query heads
    "qwen2-mqa": (
        "Qwen2ForCausalLM",
        "Qwen2Config",
        _llama(num_key_value_heads=1, rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
        {},
    ),
    "mistral-linear": (
        "MistralModel",
        "MistralConfig",
        _llama(
            hidden_size=24,
            num_attention_heads=3,
            num_key_value_heads=1,
            sliding_window=None,
            rope_parameters={"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
        ),
        {},
    ),
    # a sliding window no input reaches: accepted with max_length ≤ window
    "mistral-window": (
        "MistralForCausalLM",
        "MistralConfig",
        _llama(sliding_window=300, num_key_value_heads=4),
        {"max_length": 257},
    ),
    # rotary_pct 0.5 (head 16 → rotary dim 8), parallel residual, untied LM head
    "neox-parallel": (
        "GPTNeoXForCausalLM",
        "GPTNeoXConfig",
        _llama(num_attention_heads=2, rotary_pct=0.5, use_parallel_residual=True),
        {},
    ),
    # sequential residual, rotary dim 2 of 8, base 1000, no attention biases, 1 label
    "neox-sequential": (
        "GPTNeoXForSequenceClassification",
        "GPTNeoXConfig",
        _llama(
            num_attention_heads=4,
            rotary_pct=0.25,
            rotary_emb_base=1000,
            use_parallel_residual=False,
            attention_bias=False,
            num_labels=1,
            hidden_act="gelu_new",
        ),
        {},
    ),
    # ALiBi with 3 heads (slopes 1/16, 1/256, 1/4), d_head 8: fl(1/√8) folded into W_Q
    "bloom-3-heads": ("BloomForCausalLM", "BloomConfig", _bloom(), {}),
    "bloom-4-heads": ("BloomModel", "BloomConfig", _bloom(hidden_size=32, n_head=4), {}),
    # residual from the normed input: four attncert layers per block; d_head 16 (exact)
    "bloom-post-ln-classifier": (
        "BloomForSequenceClassification",
        "BloomConfig",
        _bloom(
            hidden_size=32, n_head=2, apply_residual_connection_post_layernorm=True, num_labels=2
        ),
        {},
    ),
}


def _randomize(model, seed):
    """Weights well away from the tiny initializations, norm gains around 1."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
            if ("norm" in name or ".ln" in name) and name.endswith("weight"):
                p.copy_(1 + 0.3 * noise)
            else:
                p.copy_(0.4 * noise)


def _build(case, seed=0, **config_overrides):
    cls, config_cls, config_kw, _ = CASES[case]
    # a deep copy: transformers writes into the rope_parameters dict it is given
    config_kw = copy.deepcopy({**config_kw, **config_overrides})
    config = getattr(transformers, config_cls)(**config_kw)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    hf = getattr(transformers, cls)(config)
    _randomize(hf, seed)
    return hf.double().eval()


def _import(case, hf, **kw):
    return model_from_hf(hf, alphabet="01", bos="^", token_ids=TOKENS, **{**CASES[case][3], **kw})


def _rotary_in_float64(hf, rot):
    """Replace the rotary embedding's forward by the same formula in float64:
    angles (position/scale)·base^(−2k/dim), cos/sin duplicated as transformers does."""
    emb = hf.base_model.rotary_emb
    k = torch.arange(rot.dim // 2, dtype=torch.float64)
    inv = rot.base ** (-2.0 * k / rot.dim)

    def rope_forward(x, position_ids, layer_type=None):
        ang = (position_ids[..., None].double() / rot.scale) * inv
        both = torch.cat((ang, ang), dim=-1)
        return both.cos().to(x.dtype), both.sin().to(x.dtype)

    emb.forward = rope_forward


@contextlib.contextmanager
def _float64_softmax_and_rmsnorm(hf, exact_gelu=True):
    """softmax(…, dtype=float32) on a float64 input computes in float64; every RMSNorm
    computes in its input's dtype (transformers' formula otherwise); ``exact_gelu``:
    Bloom's GELU with √(2/π) for its constant 0.79788456."""
    from transformers.models.bloom import modeling_bloom

    real = torch.nn.functional.softmax
    real_gelu = modeling_bloom.bloom_gelu_forward
    c = math.sqrt(2 / math.pi)

    def gelu(x):
        return x * 0.5 * (1.0 + torch.tanh(c * x * (1 + 0.044715 * x * x)))

    def softmax(x, dim=None, _stacklevel=3, dtype=None):
        if dtype is not None and x.dtype == torch.float64:
            dtype = None
        return real(x, dim=dim, dtype=dtype)

    for mod in hf.modules():
        if type(mod).__name__.endswith("RMSNorm"):

            def rms(x, m=mod):
                var = x.pow(2).mean(-1, keepdim=True)
                return m.weight * (x * torch.rsqrt(var + m.variance_epsilon))

            mod.forward = rms
    torch.nn.functional.softmax = softmax
    if exact_gelu:
        modeling_bloom.bloom_gelu_forward = gelu
    try:
        yield
    finally:
        torch.nn.functional.softmax = real
        modeling_bloom.bloom_gelu_forward = real_gelu


def _hf_output(hf, model, tokens):
    with torch.no_grad():
        out = hf(torch.tensor(tokens))
    cls = type(hf).__name__
    if cls.endswith("ForCausalLM"):
        ids = [TOKENS[s] for s in model.readout.lm_symbols]
        return out.logits[..., ids].numpy()
    if cls.endswith("ForSequenceClassification"):
        logits = out.logits.numpy()
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits[:, 0]
    return out.last_hidden_state.numpy()


def _ours(model, hf, strings):
    trace = forward(model, strings)
    cls = type(hf).__name__
    if cls.endswith("ForCausalLM"):
        return trace.lm_logits
    if cls.endswith("ForSequenceClassification"):
        return trace.logits
    return trace.final


def _worst(hf, model, lengths=LENGTHS, seed=0, count=3):
    rng = np.random.default_rng(seed)
    worst = 0.0
    for n in lengths:
        strings = ["".join(rng.choice(["0", "1"], size=n)) for _ in range(count)]
        vocab = model.embedding.vocab
        tokens = [[TOKENS[vocab[t]] for t in model.encode(s)] for s in strings]
        want = _hf_output(hf, model, tokens)
        got = _ours(model, hf, strings)
        assert got.shape == want.shape
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    return worst


def _compare_all(case, lengths=LENGTHS):
    hf = _build(case)
    model = _import(case, hf)
    worst = {"a": _worst(hf, model, lengths)}
    rot = next((h.rotary for layer in model.layers for h in layer.heads if h.rotary), None)
    if rot is not None:
        _rotary_in_float64(hf, rot)
        worst["b"] = _worst(hf, model, lengths)
    with _float64_softmax_and_rmsnorm(hf):
        worst["c"] = _worst(hf, model, lengths)
    if model.meta["hf"]["model_type"] == "bloom":
        with _float64_softmax_and_rmsnorm(hf, exact_gelu=False):
            worst["g"] = _worst(hf, model, lengths)
    return model, worst


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_imported_decoder_agrees_with_transformers(case):
    model, worst = _compare_all(case)
    print(case, {k: f"{v:.2e}" for k, v in worst.items()})
    for ref, err in worst.items():
        assert err <= TOL[ref], (case, ref, worst)
    assert model.meta["hf"]["class"] == CASES[case][0]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_agreement_sweep_over_seeds(case, seed):
    """More weights and lengths (up to 300 tokens where no window limits them)."""
    hf = _build(case, seed=seed)
    model = _import(case, hf)
    lengths = (3, 100, 255) if "window" in case else (3, 100, 299)
    assert _worst(hf, model, lengths, seed=seed) <= TOL["a"]
    rot = next((h.rotary for layer in model.layers for h in layer.heads if h.rotary), None)
    if rot is not None:
        _rotary_in_float64(hf, rot)
    with _float64_softmax_and_rmsnorm(hf):
        assert _worst(hf, model, lengths, seed=seed) <= TOL["c"]


@pytest.mark.parametrize("case", ["llama-gqa-bias-tied", "bloom-3-heads", "neox-parallel"])
def test_blockwise_attention_and_hard_kinds(case):
    """keep_attention=False computes the same; a hard import keeps RoPE / ALiBi (for ALiBi
    the 1/√d_head factor stays folded in W_Q: dropping it would reweigh the ALiBi term)."""
    hf = _build(case)
    soft = _import(case, hf)
    strings = ["0110100111" * 7]
    a, b = forward(soft, strings), forward(soft, strings, keep_attention=False)
    assert np.array_equal(a.final, b.final)
    for kind in ("leftmost", "average"):
        hard = _import(case, hf, kind=kind)
        heads = [
            (s, h)
            for ls, lh in zip(soft.layers, hard.layers, strict=True)
            for s, h in zip(ls.heads, lh.heads, strict=True)
        ]
        assert all(h.kind.value == kind and h.temperature is None for _, h in heads)
        assert all(h.rotary == s.rotary and h.alibi == s.alibi for s, h in heads)
        if soft.positional_scheme == "alibi":
            assert all(np.array_equal(h.w_q, s.w_q) for s, h in heads)
        x, y = forward(hard, strings), forward(hard, strings, keep_attention=False)
        assert np.array_equal(x.final, y.final)


def test_the_comparison_can_fail():
    """A wrong rope base, a wrong slope, a dropped GQA expansion: each is seen."""
    hf = _build("llama-gqa-bias-tied")
    good = _import("llama-gqa-bias-tied", hf)
    assert _worst(hf, good, (7,)) <= TOL["a"]
    hf.config.rope_parameters["rope_theta"] = 10000.0
    hf.model.rotary_emb = type(hf.model.rotary_emb)(hf.config)
    assert _worst(hf, good, (7,)) > 1e-3
    bloom = _build("bloom-3-heads")
    model = _import("bloom-3-heads", bloom)
    assert _worst(bloom, model, (64,)) <= TOL["a"]
    with torch.no_grad():
        bloom.transformer.h[0].self_attention.query_key_value.weight[:8] *= 1.5
    assert _worst(bloom, model, (64,)) > 1e-3


def test_meta_records_the_import():
    hf = _build("llama-gqa-bias-tied")
    meta = _import("llama-gqa-bias-tied", hf).meta["hf"]
    assert meta["model_type"] == "llama" and meta["class"] == "LlamaForCausalLM"
    assert "h // 2" in meta["gqa"]
    assert meta["rope"]["base"] == 500.0 and meta["rope"]["dim"] == 8
    assert meta["lm_head"] == "tied to the input embeddings"
    assert "folded" in meta["score_scale"]["8"] or "temperature" in meta["score_scale"]["8"]
    assert meta["config"]["num_key_value_heads"] == 2
    assert meta["token_ids"] == {"0": 3, "1": 7, "^": 1}
    neox = _import("neox-parallel", _build("neox-parallel")).meta["hf"]
    assert neox["rope"]["dim"] == 8 and neox["lm_head"] == "untied"
    assert "folded into w_q (exact)" in neox["score_scale"]["16"]
    bloom = _import("bloom-3-heads", _build("bloom-3-heads")).meta["hf"]
    assert bloom["alibi"]["slopes"] == [1 / 16, 1 / 256, 1 / 4]
    assert "0.79788456" in bloom["activation"]
    assert "fl(1/sqrt(8))" in bloom["score_scale"]["8"]


def test_structure_of_imported_models():
    llama = _import("llama-gqa-bias-tied", _build("llama-gqa-bias-tied"))
    heads = llama.layers[0].heads
    assert len(heads) == 4 and all(h.mask.value == "future" for h in heads)
    assert np.array_equal(heads[0].w_k, heads[1].w_k)  # kv head 0 shared by query heads 0, 1
    assert not np.array_equal(heads[1].w_k, heads[2].w_k)
    assert heads[0].b_o is not None and heads[1].b_o is None
    assert llama.layers[0].ffn.gated and llama.final_norm.rms
    assert llama.positional_scheme == "rope"
    neox = _import("neox-parallel", _build("neox-parallel"))
    assert all(layer.parallel for layer in neox.layers)
    seq = _import("neox-sequential", _build("neox-sequential"))
    assert not any(layer.parallel for layer in seq.layers)
    assert seq.layers[0].heads[0].rotary.dim == 2 and seq.layers[0].heads[0].rotary.base == 1000
    bloom = _import("bloom-3-heads", _build("bloom-3-heads"))
    assert len(bloom.layers) == 3 and bloom.layers[0].heads == ()
    assert bloom.positional_scheme == "alibi"
    post = _import("bloom-post-ln-classifier", _build("bloom-post-ln-classifier"))
    assert len(post.layers) == 1 + 4 * 2
    window = _import("mistral-window", _build("mistral-window"))
    assert window.embedding.table.shape == (257, 32) and not window.embedding.table.any()


@pytest.mark.parametrize("heads", range(1, 65))
def test_alibi_slopes_are_transformers_slopes(heads):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = torch.ones(1, 3)
    alibi = build_alibi_tensor(mask, heads, torch.float64).reshape(heads, 3)
    assert np.array_equal(alibi[:, 1].numpy(), alibi_slopes(heads))
    if heads <= 8:  # every base a power of two: the real-number formula exactly
        p = 2 ** math.floor(math.log2(heads))
        exact = [2.0 ** (-8 * k / p) for k in range(1, p + 1)]
        exact += [2.0 ** (-4 * k / p) for k in range(1, 2 * (heads - p), 2)]
        assert alibi_slopes(heads).tolist() == exact


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_saved_and_loaded_models_hash_and_compute_the_same(case, tmp_path):
    model = _import(case, _build(case))
    path = save_model(model, tmp_path / "m.json")
    again = load_model(path)
    assert again.digest == model.digest
    strings = ["0110100", "1110001"]
    a, b = forward(model, strings), forward(again, strings)
    assert np.array_equal(a.final, b.final) and np.array_equal(a.logits, b.logits)


def test_gpt2_is_delegated():
    config = transformers.GPT2Config(
        vocab_size=10,
        n_positions=16,
        n_embd=16,
        n_layer=1,
        n_head=4,
        pad_token_id=PAD,
        bos_token_id=1,
        eos_token_id=2,
    )
    hf = transformers.GPT2LMHeadModel(config).double().eval()
    model = model_from_hf(hf, alphabet="01", bos="^", token_ids=TOKENS)
    assert "hf_gpt2" in model.meta and model.name == "gpt2-model"


# ----- refusals --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "overrides", "match"),
    [
        (
            "llama-linear-headdim",
            {"rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4}},
            r"config.rope_parameters\['rope_type'\]: rope type 'dynamic'",
        ),
        (
            "qwen2-mqa",
            {
                "rope_parameters": {
                    "rope_type": "yarn",
                    "factor": 2.0,
                    "rope_theta": 1e4,
                    "original_max_position_embeddings": 64,
                }
            },
            r"config.rope_parameters\['rope_type'\]: rope type 'yarn'",
        ),
        (
            "llama-gqa-bias-tied",
            {"hidden_act": "gelu_fast"},
            r"config.hidden_act: activation 'gelu_fast'",
        ),
        (
            "mistral-linear",
            {"sliding_window": 16},
            r"config.sliding_window: sliding window of 16 tokens",
        ),
        (
            "qwen2-mqa",
            {"use_sliding_window": True, "sliding_window": 16, "max_window_layers": 0},
            r"config.sliding_window: sliding window of 16 tokens",
        ),
        (
            "neox-parallel",
            {"rotary_pct": 0.3125},
            r"config.rope_parameters\['partial_rotary_factor'\]: rotary dimension 5",
        ),
        (
            "llama-gqa-bias-tied",
            {"partial_rotary_factor": 0.5},
            r"config.partial_rotary_factor: partial_rotary_factor 0.5",
        ),
    ],
)
def test_unsupported_configs_are_refused_naming_the_field(case, overrides, match):
    hf = _build(case, **overrides)
    with pytest.raises(UnsupportedError, match=match):
        _import(case, hf)


def test_sliding_window_needs_max_length_within_it():
    hf = _build("mistral-window")
    with pytest.raises(UnsupportedError, match=r"config.sliding_window: .*max_length 301 > 300"):
        _import("mistral-window", hf, max_length=301)
    with pytest.raises(UnsupportedError, match=r"config\.sliding_window"):
        model_from_hf(hf, alphabet="01", bos="^", token_ids=TOKENS)
    model = _import("mistral-window", hf, max_length=300)
    with pytest.raises(InputError, match="longer than the learned position table"):
        forward(model, ["0" * 300])


def test_qwen2_window_and_max_length_without_a_window():
    """Qwen2's window applies only with use_sliding_window (and to layers ≥
    max_window_layers); max_length on a model without a window only bounds the inputs."""
    hf = _build("qwen2-mqa", use_sliding_window=True, sliding_window=40, max_window_layers=1)
    model = _import("qwen2-mqa", hf, max_length=40)
    assert _worst(hf, model, (39,)) <= TOL["a"]
    assert "sliding window 40" in model.meta["hf"]["max_length"]
    off = _build("qwen2-mqa", use_sliding_window=False, sliding_window=16)
    assert _import("qwen2-mqa", off).embedding.table is None
    bounded = _import("llama-gqa-bias-tied", _build("llama-gqa-bias-tied"), max_length=10)
    assert bounded.embedding.table.shape == (10, 32)
    assert "no limit" in bounded.meta["hf"]["max_length"]
    forward(bounded, ["0" * 9])
    with pytest.raises(InputError, match="longer than the learned position table"):
        forward(bounded, ["0" * 10])
    with pytest.raises(SpecError, match="max_length 0"):
        _import("llama-gqa-bias-tied", _build("llama-gqa-bias-tied"), max_length=0)


def test_unknown_model_types_and_classes_are_refused():
    fake = types.SimpleNamespace(config=types.SimpleNamespace(model_type="t5"))
    with pytest.raises(UnsupportedError, match=r"config.model_type: model type 't5'.*llama"):
        model_from_hf(fake, alphabet="01", token_ids=TOKENS)
    opt = transformers.OPTModel(
        transformers.OPTConfig(
            vocab_size=10,
            hidden_size=8,
            num_hidden_layers=1,
            ffn_dim=8,
            num_attention_heads=2,
            word_embed_proj_dim=8,
        )
    )
    with pytest.raises(UnsupportedError, match=r"config.model_type: model type 'opt'"):
        model_from_hf(opt, alphabet="01", token_ids=TOKENS)
    config = transformers.LlamaConfig(**_llama())
    tagger = transformers.LlamaForTokenClassification(config).eval()
    with pytest.raises(UnsupportedError, match="model class LlamaForTokenClassification"):
        model_from_hf(tagger, alphabet="01", token_ids=TOKENS)


def test_bad_token_ids_are_refused():
    hf = _build("llama-gqa-bias-tied")
    with pytest.raises(SpecError, match=r"token_ids: no token id for symbol '\^'"):
        model_from_hf(hf, alphabet="01", bos="^", token_ids={"0": 3, "1": 7})
    with pytest.raises(SpecError, match=r"token_ids: token id 10 for '1'.*vocab_size"):
        model_from_hf(hf, alphabet="01", token_ids={"0": 3, "1": 10})
    with pytest.raises(SpecError, match="same token id"):
        model_from_hf(hf, alphabet="01", token_ids={"0": 3, "1": 3})
    with pytest.raises(SpecError, match="no token id for LM symbol '#'"):
        model_from_hf(hf, alphabet="01", token_ids=TOKENS, lm_symbols="01#")
    cls = _build("llama-classifier")
    with pytest.raises(UnsupportedError, match=r"config\.pad_token_id: pad_token_id 9"):
        model_from_hf(cls, alphabet="01", token_ids={"0": 3, "1": 9})


def test_non_finite_weights_are_refused_naming_the_parameter():
    hf = _build("llama-gqa-bias-tied")
    with torch.no_grad():
        hf.model.layers[1].self_attn.q_proj.weight[2, 3] = float("nan")
    with pytest.raises(SpecError, match=r"model.layers.1.self_attn.q_proj.weight: non-finite"):
        _import("llama-gqa-bias-tied", hf)
    hf = _build("bloom-3-heads")
    with torch.no_grad():
        hf.transformer.word_embeddings.weight[7, 0] = float("inf")
    with pytest.raises(SpecError, match=r"get_input_embeddings\(\).weight.*non-finite"):
        _import("bloom-3-heads", hf)
    with torch.no_grad():
        hf.transformer.word_embeddings.weight[7, 0] = 0.0
        hf.transformer.word_embeddings.weight[8, 0] = float("inf")  # not a symbol's row
    _import("bloom-3-heads", hf)


def test_training_mode_with_dropout_is_refused():
    hf = _build("llama-gqa-bias-tied", attention_dropout=0.1).train()
    with pytest.raises(
        UnsupportedError, match=r"config\.attention_dropout: the model is in training"
    ):
        _import("llama-gqa-bias-tied", hf)
    bloom = _build("bloom-3-heads", hidden_dropout=0.1).train()
    with pytest.raises(UnsupportedError, match=r"config\.hidden_dropout"):
        _import("bloom-3-heads", bloom)
    _import("llama-gqa-bias-tied", _build("llama-gqa-bias-tied").train())  # no dropout: fine
