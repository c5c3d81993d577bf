"""``model_from_hf`` takes the tokenizer's own token strings and checks them against the
config (issue 42 item 9; :mod:`attncert.model.importers.hf_tokens`): ``bos="<s>"`` becomes
a one-character symbol and computes what transformers computes; an omitted ``bos`` is read
from ``config.bos_token_id`` or refused naming it; a contradiction with the config is
refused naming the field; a classifier's pad token that would move transformers' reading
position is refused, explaining it. Tiny random Llama/GPT-2 models in float64, every
string up to length 6 (126 strings) compared with transformers' own forward pass."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from lazy_import import lazy_importorskip

from attncert.errors import SpecError, UnsupportedError
from attncert.model import forward, load_model, save_model
from attncert.model.importers import model_from_hf

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = lazy_importorskip("torch")  # imported at first use
transformers = lazy_importorskip("transformers")  # imported at first use

IDS = {"<s>": 1, "</s>": 2, "0": 3, "1": 7}
PAD = 9
STRINGS = ["".join(p) for n in range(1, 7) for p in itertools.product("01", repeat=n)]


def _llama(cls="LlamaForSequenceClassification", seed=0, **config):
    base = dict(
        vocab_size=10,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_labels=2,
        pad_token_id=PAD,
        bos_token_id=1,
        eos_token_id=2,
    )
    base.update(config)
    cfg = transformers.LlamaConfig(**base)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    hf = getattr(transformers, cls)(cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # weights well away from the tiny initialisation
        for name, p in hf.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
            gain = "norm" in name and name.endswith("weight")
            p.copy_(1 + 0.3 * noise if gain else 0.5 * noise)
    return hf.double().eval()


def _token_rows(strings, first=(), last=()):
    return [[*first, *(IDS[c] for c in s), *last] for s in strings]


def _hf_decision_logits(hf, rows):
    """score[1] − score[0] at the last token, by transformers, one length per batch."""
    out = np.empty(len(rows))
    by_len: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        by_len.setdefault(len(r), []).append(i)
    with torch.no_grad():
        for idx in by_len.values():
            logits = hf(torch.tensor([rows[i] for i in idx])).logits.numpy()
            out[idx] = logits[:, 1] - logits[:, 0]
    return out


def _ours(model, strings):
    out = np.empty(len(strings))
    by_len: dict[int, list[int]] = {}
    for i, s in enumerate(strings):
        by_len.setdefault(len(s), []).append(i)
    for idx in by_len.values():
        out[idx] = forward(model, [strings[i] for i in idx]).logits
    return out


def _assert_agrees(got, want):
    """Within transformers' float32 rope/softmax/RMSNorm noise (1e-4 relative: tests/
    test_import_hf_decoders.py), and — no string's logit being within that noise of 0 —
    the same decision on every string."""
    tol = 1e-4 * np.abs(want).max()
    assert np.abs(got - want).max() <= tol
    assert np.abs(want).min() > tol  # every decision is determined: none is left out
    assert np.array_equal(got > 0, want > 0)


# ----- token strings ------------------------------------------------------------------


def test_bos_token_string_is_imported_and_agrees_with_transformers(tmp_path):
    hf = _llama()
    model = model_from_hf(hf, alphabet="01", bos="<s>", token_ids=IDS)
    assert model.bos == "^" and model.embedding.vocab == ("0", "1", "^")
    assert model.meta["hf"]["tokens"]["bos"] == {
        "token": "<s>",
        "symbol": "^",
        "token_id": 1,
        "from": "bos argument",
    }
    assert model.meta["hf"]["token_ids"] == {"0": 3, "1": 7, "^": 1}
    got = _ours(model, STRINGS)
    _assert_agrees(got, _hf_decision_logits(hf, _token_rows(STRINGS, first=[1])))
    # the same model as with the one-character BOS "^" of before
    same = model_from_hf(hf, alphabet="01", bos="^", token_ids={"^": 1, "0": 3, "1": 7})
    assert np.array_equal(_ours(same, STRINGS), got)
    again = load_model(save_model(model, tmp_path / "m.json"))
    assert again.bos == "^" and again.meta["hf"]["tokens"]["bos"]["token"] == "<s>"


def test_eos_token_string_and_lm_symbols_by_token_string():
    """A causal LM with BOS and EOS token strings: the kept next-token logits (named by
    token strings in lm_symbols) agree with transformers' at every position."""
    hf = _llama("LlamaForCausalLM")
    model = model_from_hf(
        hf, alphabet="01", bos="<s>", eos="</s>", token_ids=IDS, lm_symbols=["0", "1", "</s>"]
    )
    assert (model.bos, model.eos) == ("^", "$")
    assert model.readout.lm_symbols == ("0", "1", "$")
    strings = STRINGS[:30]
    for n in sorted({len(s) for s in strings}):
        group = [s for s in strings if len(s) == n]
        with torch.no_grad():
            want = hf(torch.tensor(_token_rows(group, [1], [2]))).logits[..., [3, 7, 2]].numpy()
        got = forward(model, group).lm_logits
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_fresh_symbols_avoid_the_alphabet_and_token_ids():
    """ "^" and "$" are taken by the alphabet and by token_ids: the next candidates."""
    hf = _llama("LlamaModel", bos_token_id=1, eos_token_id=2)
    ids = {"<s>": 1, "</s>": 2, "^": 3, "$": 7, "⊢": 5}
    model = model_from_hf(hf, alphabet="^$", bos="<s>", eos="</s>", token_ids=ids)
    assert model.alphabet == ("^", "$")
    assert model.bos == "\ue000" and model.eos == "⊣"
    assert model.meta["hf"]["token_ids"] == {"^": 3, "$": 7, "\ue000": 1, "⊣": 2}


def test_multi_character_alphabet_symbols_are_refused_saying_why():
    hf = _llama()
    with pytest.raises(SpecError, match=r"alphabet: alphabet symbol '▁a' is not one char") as e:
        model_from_hf(hf, alphabet=["▁a", "1"], bos="<s>", token_ids={"▁a": 3, **IDS})
    assert "token_ids" in str(e.value)  # says where a token string goes instead


# ----- BOS read from the config --------------------------------------------------------


def test_omitted_bos_is_read_from_the_config():
    hf = _llama()
    model = model_from_hf(hf, alphabet="01", token_ids=IDS)
    assert model.bos == "^"
    assert model.meta["hf"]["tokens"]["bos"]["from"].startswith("config.bos_token_id")
    explicit = model_from_hf(hf, alphabet="01", bos="<s>", token_ids=IDS)
    assert np.array_equal(_ours(model, STRINGS), _ours(explicit, STRINGS))


def test_omitted_bos_without_its_token_is_refused_and_would_compute_something_else():
    """The refusal guards a real difference: the model imported without BOS (bos=None,
    the explicit choice) decides other strings than transformers on BOS-prefixed inputs."""
    hf = _llama()
    ids = {"0": 3, "1": 7}
    with pytest.raises(SpecError) as e:
        model_from_hf(hf, alphabet="01", token_ids=ids)
    assert e.value.where == "config.bos_token_id"
    assert "config.bos_token_id is 1 and bos was not given" in e.value.message
    assert "bos=None" in e.value.expected and "bos='<s>'" in e.value.expected
    without = model_from_hf(hf, alphabet="01", bos=None, token_ids=ids)
    assert without.bos is None
    assert any("bos=None" in n for n in without.meta["hf"]["tokens"]["notes"])
    want = _hf_decision_logits(hf, _token_rows(STRINGS, first=[1]))
    got = _ours(without, STRINGS)
    assert np.abs(got - want).max() > 0.1 * np.abs(want).max()
    _assert_agrees(got, _hf_decision_logits(hf, _token_rows(STRINGS)))  # what it does compute


@pytest.mark.parametrize(
    ("bos_token_id", "note"),
    [(None, None), (50, "no token of the vocabulary")],
)
def test_no_usable_bos_in_the_config_imports_without_bos(bos_token_id, note):
    model = model_from_hf(_llama(bos_token_id=bos_token_id), alphabet="01", token_ids=IDS)
    assert model.bos is None and model.meta["hf"]["tokens"]["bos"] is None
    notes = " ".join(model.meta["hf"]["tokens"]["notes"])
    assert note is None or note in notes


def test_config_bos_that_is_a_symbols_token_is_refused():
    with pytest.raises(SpecError, match=r"config\.bos_token_id: .*token id of alphabet symbol '1'"):
        model_from_hf(_llama(bos_token_id=7), alphabet="01", token_ids=IDS)


# ----- contradictions with the config ---------------------------------------------------


def test_bos_contradicting_the_config_is_refused_naming_the_field():
    hf = _llama()
    with pytest.raises(SpecError) as e:
        model_from_hf(hf, alphabet="01", bos="<s>", token_ids={**IDS, "<s>": 5})
    assert e.value.where == "config.bos_token_id"
    assert "maps BOS '<s>' to 5, but config.bos_token_id is 1" in e.value.message
    assert "token_ids['<s>'] = 1" in e.value.expected
    hf.config.bos_token_id = 5  # the caller says which one the model was trained with
    assert model_from_hf(hf, alphabet="01", bos="<s>", token_ids={**IDS, "<s>": 5}).bos == "^"


def test_eos_contradicting_the_config_is_refused_naming_the_field():
    hf = _llama("LlamaModel")
    with pytest.raises(SpecError) as e:
        model_from_hf(hf, alphabet="01", bos="<s>", eos="</s>", token_ids={**IDS, "</s>": 5})
    assert e.value.where == "config.eos_token_id"
    assert "maps EOS '</s>' to 5, but config.eos_token_id is 2" in e.value.message
    several = _llama("LlamaModel", eos_token_id=[2, 5])  # Llama 3 lists several
    model = model_from_hf(several, alphabet="01", eos="</s>", token_ids={**IDS, "</s>": 5})
    assert model.eos == "$"


# ----- the pad token of a sequence classifier --------------------------------------------


def test_pad_token_among_the_symbols_is_refused_explaining_why():
    hf = _llama(pad_token_id=7)
    with pytest.raises(UnsupportedError) as e:
        model_from_hf(hf, alphabet="01", token_ids=IDS)
    assert e.value.where == "config.pad_token_id"
    assert "token id of alphabet symbol '1'" in e.value.message
    assert "last token that is not config.pad_token_id" in e.value.message
    assert "None" in e.value.expected
    # why: transformers reads an earlier position on a string ending in "1"
    rows = _token_rows(["0101", "0111"], first=[1])
    with torch.no_grad():
        hidden = hf.model(torch.tensor(rows)).last_hidden_state
        scores = hf.score(hidden)
        got = hf(torch.tensor(rows)).logits
    assert torch.equal(got[0], scores[0, -2]) and not torch.equal(got[0], scores[0, -1])
    with pytest.raises(UnsupportedError, match=r"config\.pad_token_id: .*token id of EOS"):
        model_from_hf(_llama(pad_token_id=2), alphabet="01", eos="</s>", token_ids=IDS)
    gpt2 = transformers.GPT2ForSequenceClassification(
        transformers.GPT2Config(vocab_size=10, n_embd=8, n_layer=1, n_head=2, pad_token_id=3)
    ).eval()
    with pytest.raises(UnsupportedError, match=r"last token that is not config\.pad_token_id"):
        model_from_hf(gpt2, alphabet="01", bos=None, token_ids=IDS)


@pytest.mark.parametrize("pad", [None, 1])
def test_pad_token_none_or_bos_reads_the_last_token_as_transformers_does(pad):
    """Without a pad token transformers reads the last token (one string per call); a pad
    token equal to BOS's id is never an input's last token: both accepted, and equal."""
    hf = _llama(pad_token_id=pad)
    model = model_from_hf(hf, alphabet="01", bos="<s>", token_ids=IDS)
    notes = " ".join(model.meta["hf"]["tokens"]["notes"])
    assert ("is None" in notes) if pad is None else ("no alphabet symbol's or EOS's" in notes)
    strings = STRINGS[:62]  # lengths 1..5
    rows = _token_rows(strings, first=[1])
    if pad is None:  # transformers refuses batches of more than one string
        want = np.concatenate([_hf_decision_logits(hf, [r]) for r in rows])
    else:
        want = _hf_decision_logits(hf, rows)
    _assert_agrees(_ours(model, strings), want)


def test_gpt2_through_model_from_hf_takes_token_strings():
    config = transformers.GPT2Config(
        vocab_size=10, n_positions=16, n_embd=16, n_layer=1, n_head=4, bos_token_id=1
    )
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(config).double().eval()
    model = model_from_hf(
        hf, alphabet="01", bos="<|endoftext|>", token_ids={"<|endoftext|>": 1, **IDS}
    )
    assert model.bos == "^"
    assert model.meta["hf_gpt2"]["tokens"]["bos"]["token"] == "<|endoftext|>"
    with torch.no_grad():
        want = hf(torch.tensor([[1, 3, 7, 7]])).logits[0, :, [3, 7]].numpy()
    got = forward(model, ["011"]).lm_logits[0]
    assert np.abs(got - want).max() <= 1e-9 * np.abs(want).max()
