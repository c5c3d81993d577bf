"""transformers' own forward pass as the oracle for the decoders (issue 32): at n ≤ 10 the
exact accuracy over every string, computed by transformers, lies inside ``verify``'s
certified interval; the kernel's arb pass encloses attncert's float pass, and
transformers' logits lie within its float32 noise of the enclosure.

transformers computes rotary angles, softmax and RMSNorm in float32 even in a float64
model (``tests/test_import_hf_decoders.py`` measures it: ≤ 4.4e-6 relative), so a
string whose transformers logit is within 1e-4 of 0 could be decided differently by the
exact model: every such string is counted, and the models here have none (asserted, so a
change that makes the oracle inconclusive is seen, not hidden)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from lazy_import import lazy_importorskip

torch = lazy_importorskip("torch")  # imported at first use
transformers = lazy_importorskip("transformers")  # imported at first use

from attncert.kernel.core.trace import forward_rigorous  # noqa: E402
from attncert.languages import language  # noqa: E402
from attncert.model.forward import forward  # noqa: E402
from attncert.model.importers import model_from_hf  # noqa: E402
from attncert.soft.verify import verify  # noqa: E402

TOKENS = {"0": 3, "1": 5, "^": 1}
PAD = 7
COMMON = dict(vocab_size=8, num_labels=2, pad_token_id=PAD, bos_token_id=TOKENS["^"])

# (config class, classifier class, config kwargs): one per model type and scheme
MODELS = {
    "llama-rope-gqa": (
        "LlamaConfig",
        "LlamaForSequenceClassification",
        dict(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
        ),
    ),
    "qwen2-rope-bias": (
        "Qwen2Config",
        "Qwen2ForSequenceClassification",
        dict(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
        ),
    ),
    "mistral-rope": (
        "MistralConfig",
        "MistralForSequenceClassification",
        dict(
            hidden_size=16,
            intermediate_size=24,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            sliding_window=None,
        ),
    ),
    "neox-partial-parallel": (
        "GPTNeoXConfig",
        "GPTNeoXForSequenceClassification",
        dict(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            rotary_pct=0.5,
            use_parallel_residual=True,
        ),
    ),
    "bloom-alibi": (
        "BloomConfig",
        "BloomForSequenceClassification",
        dict(hidden_size=16, n_layer=2, n_head=4),
    ),
    "gpt2-learned": (
        "GPT2Config",
        "GPT2ForSequenceClassification",
        dict(n_embd=16, n_layer=2, n_head=2, n_positions=64),
    ),
}
DEFAULT = ("llama-rope-gqa", "neox-partial-parallel", "bloom-alibi")


def build(name: str, seed: int):
    cfg_cls, cls, kw = MODELS[name]
    config = getattr(transformers, cfg_cls)(**COMMON, **kw)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    hf = getattr(transformers, cls)(config).double().eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # weights well away from the tiny initialisation
        for pname, p in hf.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            gain = ("norm" in pname or "ln" in pname) and pname.endswith("weight")
            p.copy_(1 + 0.3 * noise if gain else 0.5 * noise)
    return hf, model_from_hf(hf, alphabet="01", token_ids=TOKENS, bos="^", name=name)


def hf_logits(hf, model, strings: list[str]) -> np.ndarray:
    """score[1] − score[0] at the last token, by transformers."""
    vocab = model.embedding.vocab
    toks = torch.tensor([[TOKENS[vocab[t]] for t in model.encode(s)] for s in strings])
    with torch.no_grad():
        out = hf(toks).logits.numpy()
    return out[:, 1] - out[:, 0]


def check_model(name: str, seed: int, n: int, lang_name: str) -> None:
    hf, model = build(name, seed)
    lang = language(lang_name)
    strings = ["".join(p) for p in itertools.product("01", repeat=n)]
    z = hf_logits(hf, model, strings)
    close = int(np.sum(np.abs(z) < 1e-4))
    assert close == 0, f"{close} strings within transformers' float32 noise of 0"
    truth = np.array([lang.contains(s) for s in strings])
    right = int(np.sum((z > 0) == truth))
    out = verify(model, lang, n, time_limit=60)
    assert out.check.accepted, out.check.summary()
    lo, hi = out.check.right, out.check.right + out.check.undecided
    assert lo <= right <= hi, (name, lo, right, hi)
    # the kernel's arb pass encloses attncert's float pass; transformers is within its noise
    ours = forward(model, strings[:4]).logits
    for s, mine, theirs in zip(strings[:4], ours, z[:4], strict=True):
        a, b = (float(v) for v in forward_rigorous(model, s).logit_interval())
        assert a <= mine <= b
        assert a - 1e-4 * (1 + abs(theirs)) <= theirs <= b + 1e-4 * (1 + abs(theirs))


@pytest.mark.parametrize("name", DEFAULT)
def test_verify_contains_transformers_accuracy(name):
    check_model(name, seed=0, n=7, lang_name="majority")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize(("seed", "n", "lang"), [(1, 8, "parity"), (2, 10, "first_last")])
def test_verify_contains_transformers_accuracy_everywhere(name, seed, n, lang):
    check_model(name, seed=seed, n=n, lang_name=lang)


TRAINED = (
    ("trained_rope_first_last", "first_last"),
    ("trained_alibi_majority", "majority"),
    ("trained_nope_dyck1", "dyck1"),
)


@pytest.mark.parametrize(("name", "lang_name"), TRAINED)
def test_verify_on_trained_decoders_is_their_exact_accuracy(name, lang_name):
    """At n = 10 verify's interval on a trained decoder is its exact accuracy, computed
    here over every string with the float pass (these models hold no transformers
    object: the torch network they were exported from agrees with the float pass to
    1e-9, ``tests/test_train_decoders.py``)."""
    from attncert.model import zoo_model

    m, lang, n = zoo_model(name), language(lang_name), 10
    strings = ["".join(p) for p in itertools.product(m.alphabet, repeat=n)]
    out = verify(m, lang, n, time_limit=60)
    right = int(np.sum(forward(m, strings).accept == np.array([lang.contains(s) for s in strings])))
    assert out.check.accepted and out.check.undecided == 0 and out.check.right == right


@pytest.mark.parametrize(
    "edit",
    [
        (
            "rope",
            lambda h, ln: (
                h.__class__(**{**h.__dict__, "rotary": type(h.rotary)(500.0, h.rotary.dim)}),
                ln,
            ),
        ),
        ("alibi", lambda h, ln: (h.__class__(**{**h.__dict__, "alibi": h.alibi * 2}), ln)),
        ("rms", lambda h, ln: (h, ln.__class__(ln.weight, ln.bias, ln.eps * 100, ln.kind))),
    ],
    ids=lambda e: e[0],
)
def test_the_verify_kernel_rejects_an_edited_rotary_base_slope_or_rmsnorm_eps(edit):
    """A verify certificate checked against the model with one positional or norm
    parameter edited: rejected, the hash named; with the hash forced, the kernel
    re-derives every leaf from the edited model — what it accepts is then the edited
    model's exact accuracy (brute force), never the old model's claim."""
    from attncert.kernel.verify.checker import check
    from attncert.model.decoders import random_decoder

    pos, fn = edit
    m = random_decoder(2, 2, 8, positions="alibi" if pos == "alibi" else "rope", seed=9)
    lang, n = language("majority"), 8
    cert = verify(m, lang, n, time_limit=30).certificate
    layers = []
    for layer in m.layers:
        heads, norm1 = [], layer.norm1
        for h in layer.heads:
            h2, norm1 = fn(h, layer.norm1)
            heads.append(h2)
        layers.append(replace(layer, heads=tuple(heads), norm1=norm1))
    other = replace(m, layers=tuple(layers))
    report = check(cert, other)
    assert not report.accepted and "hash" in report.failures[0].reason
    forged = replace(cert, model_sha256=other.digest)
    report = check(forged, other)
    strings = ["".join(p) for p in itertools.product("01", repeat=n)]
    truth = np.array([lang.contains(s) for s in strings])
    before = int(np.sum(forward(m, strings).accept == truth))
    after = int(np.sum(forward(other, strings).accept == truth))
    if report.accepted:
        assert report.right == after
    else:
        assert report.failures[0].claim in ("counts", "exhaustive", "witness", "bound")
    assert before != after or report.accepted  # an edit that changes nothing is accepted
