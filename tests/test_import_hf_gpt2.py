"""The Hugging Face GPT-2 importer against transformers' own forward pass (issue 14 item 3).

Small ``GPT2Config`` models with random weights (nothing downloaded): ``GPT2Model``
(hidden states after ln_f), ``GPT2LMHeadModel`` (the LM logits of the kept symbols at
every position) and ``GPT2ForSequenceClassification`` (the 2-label logit difference),
float32 and float64, d_head a power of 4 (scale folded) or not (a temperature), on 100
random strings of lengths 1..64: max |difference| ≤ 1e-5. Then the refusals, each
naming the config field or module.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from lazy_import import lazy_importorskip

from attncert.errors import SpecError, UnsupportedError
from attncert.model import forward
from attncert.model.importers import model_from_hf_gpt2

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = lazy_importorskip("torch")  # imported at first use
transformers = lazy_importorskip("transformers")  # imported at first use

TOL = 1e-5
TOKENS = {"0": 3, "1": 7, "^": 0, "$": 9}
PAD = 11  # GPT2Config.pad_token_id below; not a symbol's token


def _config(**kw):
    base = dict(
        vocab_size=12,
        n_positions=72,
        n_embd=16,
        n_layer=2,
        n_head=4,
        n_inner=24,
        resid_pdrop=0.1,
        embd_pdrop=0.1,
        attn_pdrop=0.1,
        pad_token_id=11,
        bos_token_id=0,
        eos_token_id=9,
    )
    base.update(kw)
    return transformers.GPT2Config(**base)


def _randomize(model, seed):
    """Random weights well away from GPT-2's tiny initialization, LayerNorms included."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
            if ".ln_" in name and name.endswith("weight"):
                p.copy_(1 + 0.3 * noise)
            else:
                p.copy_(0.4 * noise)


def _build(cls_name, seed=0, dtype="float32", **config):
    """``dtype`` by name ("float64"): torch is imported at first use, not at collection."""
    dtype = getattr(torch, dtype)
    torch.manual_seed(seed)
    model = getattr(transformers, cls_name)(_config(**config))
    _randomize(model, seed)
    return model.to(dtype).eval()


def _strings(rng, count=100, max_len=64):
    lengths = rng.integers(1, max_len + 1, size=count)
    return ["".join(rng.choice(["0", "1"], size=k)) for k in lengths]


def _hf_tokens(model, strings):
    """GPT-2 token ids of ``strings`` (BOS/EOS added as the model does)."""
    vocab = model.embedding.vocab
    return torch.tensor([[TOKENS[vocab[t]] for t in model.encode(s)] for s in strings])


def _padded(model, strings):
    """One right-padded batch of GPT-2 token ids and its attention mask. With causal
    attention, padding after a string changes nothing at the string's own positions, so
    one call of the library checks all 100 strings."""
    rows = [_hf_tokens(model, [s])[0].tolist() for s in strings]
    width = max(map(len, rows))
    tokens = torch.tensor([r + [PAD] * (width - len(r)) for r in rows])
    return tokens, (tokens != PAD).long(), [len(r) for r in rows]


def _ours(model, strings):
    """attncert's trace per string (forward groups strings by length)."""
    by_len: dict[int, list[str]] = {}
    for s in strings:
        by_len.setdefault(len(s), []).append(s)
    traces = {n: forward(model, group) for n, group in by_len.items()}
    seen = dict.fromkeys(by_len, 0)
    out = []
    for s in strings:
        k = seen[len(s)]
        seen[len(s)] += 1
        out.append((traces[len(s)], k))
    return out


@pytest.mark.parametrize(
    ("dtype", "n_head", "activation"),
    [
        ("float32", 4, "gelu_new"),
        ("float64", 2, "gelu_new"),
        ("float64", 4, "gelu"),
        ("float32", 1, "relu"),
    ],
)
def test_gpt2_lm_head_logits_agree_at_every_position(dtype, n_head, activation):
    hf = _build(
        "GPT2LMHeadModel", seed=n_head, dtype=dtype, n_head=n_head, activation_function=activation
    )
    assert hf.lm_head.weight.data_ptr() == hf.transformer.wte.weight.data_ptr()  # tied
    model = model_from_hf_gpt2(hf, alphabet="01", bos="^", eos="$", token_ids=TOKENS)
    dh = 16 // n_head
    note = model.meta["hf_gpt2"]["score_scale"][str(dh)]
    assert ("folded" in note) is (dh in (4, 16)), note
    assert model.readout.lm_symbols == ("0", "1", "$")
    assert all(h.mask.value == "future" for layer in model.layers for h in layer.heads)
    ids = [TOKENS[s] for s in model.readout.lm_symbols]
    strings = _strings(np.random.default_rng(n_head))
    tokens, attention, lengths = _padded(model, strings)
    with torch.no_grad():
        out = hf(tokens, attention_mask=attention, output_hidden_states=True)
    logits = out.logits[..., ids].double().numpy()
    hidden = out.hidden_states[-1].double().numpy()
    worst = worst_hidden = 0.0
    for row, ((tr, k), n) in enumerate(zip(_ours(model, strings), lengths, strict=True)):
        worst = max(worst, np.abs(tr.lm_logits[k] - logits[row, :n]).max())
        worst_hidden = max(worst_hidden, np.abs(tr.final[k] - hidden[row, :n]).max())
    assert worst <= TOL, worst
    assert worst_hidden <= TOL, worst_hidden


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpt2_model_hidden_states_agree(dtype):
    hf = _build("GPT2Model", seed=11, dtype=dtype, n_head=2, n_embd=8, n_inner=None)
    model = model_from_hf_gpt2(hf, alphabet="01", token_ids=TOKENS, max_length=64)
    assert model.embedding.table.shape == (64, 8) and model.final_norm is not None
    assert model.layers[0].ffn.w1.shape == (32, 8)  # n_inner None → 4·n_embd
    strings = _strings(np.random.default_rng(11))
    tokens, attention, lengths = _padded(model, strings)
    with torch.no_grad():
        want = hf(tokens, attention_mask=attention).last_hidden_state.double().numpy()
    worst = 0.0
    for row, ((tr, k), n) in enumerate(zip(_ours(model, strings), lengths, strict=True)):
        worst = max(worst, np.abs(tr.final[k] - want[row, :n]).max())
    assert worst <= TOL, worst


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpt2_sequence_classifier_logit_agrees(dtype):
    hf = _build("GPT2ForSequenceClassification", seed=5, dtype=dtype, num_labels=2)
    model = model_from_hf_gpt2(hf, alphabet="01", bos="^", token_ids=TOKENS)
    assert model.readout.position == "last"
    strings = _strings(np.random.default_rng(5))
    tokens, attention, _ = _padded(model, strings)
    with torch.no_grad():  # pooled at the last non-pad token: each string's last token
        logits = hf(tokens, attention_mask=attention).logits.double().numpy()
    ours = np.array([tr.logits[k] for tr, k in _ours(model, strings)])
    assert np.abs(ours - (logits[:, 1] - logits[:, 0])).max() <= TOL
    assert np.array_equal(ours > 0, logits.argmax(-1) == 1)
    assert 0 < (ours > 0).sum() < len(strings)  # both decisions occur


def test_gpt2_comparison_can_fail():
    """The causal mask dropped, or ln_f dropped, or W_Q and W_K swapped: far off."""
    from dataclasses import replace

    hf = _build("GPT2Model", seed=2, dtype="float64")
    good = model_from_hf_gpt2(hf, alphabet="01", token_ids=TOKENS)

    def heads(fn):
        return replace(
            good,
            layers=tuple(
                replace(lay, heads=tuple(fn(h) for h in lay.heads)) for lay in good.layers
            ),
        )

    unmasked = heads(lambda h: replace(h, mask="none"))
    swapped = heads(lambda h: replace(h, w_q=h.w_k, w_k=h.w_q, b_q=h.b_k, b_k=h.b_q))
    no_final = replace(good, final_norm=None)
    tokens = _hf_tokens(good, ["0110100"])
    with torch.no_grad():
        want = hf(tokens).last_hidden_state.double().numpy()
    assert np.abs(forward(good, ["0110100"]).final - want).max() <= TOL
    for bad in (unmasked, swapped, no_final):
        assert np.abs(forward(bad, ["0110100"]).final - want).max() > 1e-2


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"scale_attn_by_inverse_layer_idx": True}, "config.scale_attn_by_inverse_layer_idx"),
        ({"add_cross_attention": True}, "config.add_cross_attention"),
        ({"activation_function": "silu"}, "config.activation_function"),
        ({"activation_function": "gelu_fast"}, "config.activation_function"),
        ({"rotary_dim": 4}, "config.rotary_dim"),
        ({"position_embedding_type": "alibi"}, "config.position_embedding_type"),
    ],
)
def test_unsupported_configs_are_refused_naming_the_field(config, field):
    hf = _build("GPT2Model", **config)
    with pytest.raises(UnsupportedError) as err:
        model_from_hf_gpt2(hf, alphabet="01", token_ids=TOKENS)
    assert err.value.where == field, str(err.value)


def test_other_gpt2_refusals():
    lm = _build("GPT2LMHeadModel")
    with pytest.raises(UnsupportedError, match=r"config.attn_pdrop|config.embd_pdrop"):
        model_from_hf_gpt2(lm.train(), alphabet="01", token_ids=TOKENS)
    lm.eval()
    with pytest.raises(SpecError, match="no token id for symbol '\\^'"):
        model_from_hf_gpt2(lm, alphabet="01", bos="^", token_ids={"0": 1, "1": 2})
    with pytest.raises(SpecError, match="token id 12 for '1'"):
        model_from_hf_gpt2(lm, alphabet="01", token_ids={"0": 1, "1": 12})
    with pytest.raises(SpecError, match="same token id"):
        model_from_hf_gpt2(lm, alphabet="01", token_ids={"0": 1, "1": 1})
    with pytest.raises(SpecError, match="no token id for LM symbol '#'"):
        model_from_hf_gpt2(lm, alphabet="01", token_ids=TOKENS, lm_symbols="01#")
    with pytest.raises(SpecError, match="max_length 100"):
        model_from_hf_gpt2(lm, alphabet="01", token_ids=TOKENS, max_length=100)
    clf3 = _build("GPT2ForSequenceClassification", num_labels=3)
    with pytest.raises(UnsupportedError, match="a classifier with 3 outputs"):
        model_from_hf_gpt2(clf3, alphabet="01", token_ids=TOKENS)
    clf = _build("GPT2ForSequenceClassification", num_labels=2, pad_token_id=7)
    with pytest.raises(UnsupportedError) as err:
        model_from_hf_gpt2(clf, alphabet="01", token_ids=TOKENS)
    assert err.value.where == "config.pad_token_id"
    double = transformers.GPT2DoubleHeadsModel(_config())
    with pytest.raises(UnsupportedError, match="model class GPT2DoubleHeadsModel"):
        model_from_hf_gpt2(double, alphabet="01", token_ids=TOKENS)


def test_learned_positions_limit_the_length():
    hf = _build("GPT2Model")
    model = model_from_hf_gpt2(hf, alphabet="01", token_ids=TOKENS, max_length=8)
    forward(model, ["0" * 8])
    from attncert.errors import InputError

    with pytest.raises(InputError, match="longer than the learned position table"):
        forward(model, ["0" * 9])


def test_hardening_report_counts_every_decision():
    """Agreement of the imported soft GPT-2 and its hardened version, recounted by hand:
    accept decisions per string, next-symbol predictions per position."""
    from attncert.model import harden
    from attncert.model.importers import hardening_report

    lm = _build("GPT2LMHeadModel", seed=3, dtype="float64")
    soft = model_from_hf_gpt2(lm, alphabet="01", bos="^", eos="$", token_ids=TOKENS)
    strings = _strings(np.random.default_rng(3), count=40, max_len=12)
    report = hardening_report(soft, strings)
    hard = harden(soft)
    same = total = 0
    for s in strings:
        a, b = forward(soft, [s]), forward(hard, [s])
        same += int((a.lm_logits.argmax(-1) == b.lm_logits.argmax(-1)).sum())
        total += a.lm_logits.shape[1]
    assert report.next_symbol.strings == total and report.next_symbol.agree == same
    assert report.accept.strings == 40 and report.accept.rate == 1.0  # zero readout: all reject
    assert report.outputs is None and report.hard.is_hard
    assert 0 < report.next_symbol.rate < 1  # softmax and argmax differ somewhere here
    # a model imported as hard attention agrees with itself
    hard_import = model_from_hf_gpt2(lm, alphabet="01", token_ids=TOKENS, kind="leftmost")
    assert hardening_report(hard_import, strings).next_symbol.rate == 1.0
