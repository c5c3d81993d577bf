"""The one verdict module (issue 41, item 2): every verdict word from checked facts, with
its rules pinned — nothing checked is never CERTIFIED, a search that finds nothing is
UNDECIDED, a section's verdict follows its rows by the stated rule."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from attncert.kernel import verdict as V
from attncert.kernel.core.failure import Failure
from attncert.verdicts import Verdict

ACCEPT = SimpleNamespace(accepted=True, failures=())


def test_nothing_checked_is_never_certified():
    assert V.combine([]).verdict is Verdict.UNDECIDED
    assert V.NOT_CHECKED in V.combine([]).reasons
    assert V.section([])[0] is Verdict.UNDECIDED
    assert V.section([None, None])[0] is Verdict.UNDECIDED
    tree = SimpleNamespace(accepted=True, failures=(), total=0, right=0, wrong=0, undecided=0)
    assert V.verify(tree).verdict is Verdict.UNDECIDED
    report = SimpleNamespace(
        accepted=True, failures=(), first_refuted=None, proved=(), undecided=()
    )
    assert V.horizon(report).verdict is Verdict.UNDECIDED


def test_a_search_that_finds_nothing_is_undecided_not_refuted():
    a = V.not_found("layer 2: no satisfiable encoding")
    assert a.verdict is Verdict.UNDECIDED and "no certificate" in a.reasons[0]


@pytest.mark.parametrize(
    ("rows", "want"),
    [
        ([Verdict.CERTIFIED, Verdict.CERTIFIED], Verdict.CERTIFIED),
        ([Verdict.CERTIFIED, Verdict.CERTIFIED_TRIVIAL], Verdict.CERTIFIED_TRIVIAL),
        ([Verdict.CERTIFIED, Verdict.OUTSIDE_THEOREM, None], Verdict.OUTSIDE_THEOREM),
        ([Verdict.OUTSIDE_THEOREM, Verdict.UNDECIDED], Verdict.UNDECIDED),
        ([Verdict.UNDECIDED, Verdict.REFUTED, Verdict.CERTIFIED], Verdict.REFUTED),
    ],
)
def test_a_section_is_its_worst_row(rows, want):
    got, rule = V.section(rows)
    assert got is want and "worst row verdict" in rule


def test_verify_is_certified_only_when_proved_correct():
    def tree(right, wrong, undecided):
        return SimpleNamespace(
            accepted=True, failures=(), total=right + wrong + undecided,
            right=right, wrong=wrong, undecided=undecided,
        )  # fmt: skip

    assert V.verify(tree(8, 0, 0)).verdict is Verdict.CERTIFIED
    assert V.verify(tree(7, 1, 0)).verdict is Verdict.REFUTED
    assert V.verify(tree(7, 0, 1)).verdict is Verdict.UNDECIDED
    assert V.verify(tree(7, 1, 1)).verdict is Verdict.REFUTED  # proved wrong somewhere
    bad = SimpleNamespace(accepted=False, failures=(Failure("counts", "x", "y"),))
    assert V.verify(bad).verdict is Verdict.REFUTED
    arith = SimpleNamespace(accepted=False, failures=(Failure("arithmetic", "x", "y"),))
    assert V.verify(arith).verdict is Verdict.UNDECIDED


def test_soft_cap_only_is_trivial_and_a_real_bound_is_certified():
    from attncert.model import zoo_model

    model = zoo_model("soft_parity")  # inside Lemma 5's hypotheses
    widths = [(2.0, 3.0), (2.0, 2.0)]  # the change is never below the width: a cap
    a = V.soft(ACCEPT, model, widths=widths, restriction=False, free=0, pair=False)
    assert a.verdict is Verdict.CERTIFIED_TRIVIAL and "cap" in a.reasons[0]
    widths = [(2.0, 3.0), (2.0, 1.999)]
    a = V.soft(ACCEPT, model, widths=widths, restriction=False, free=0, pair=False)
    assert a.verdict is Verdict.CERTIFIED
    a = V.soft(ACCEPT, model, widths=(), restriction=False, free=0, pair=False)
    assert a.verdict is Verdict.UNDECIDED  # nothing claimed: nothing checked
    a = V.soft(ACCEPT, model, widths=widths, restriction=True, free=0, pair=True)
    assert a.verdict is Verdict.CERTIFIED_TRIVIAL
    a = V.soft(ACCEPT, model, widths=widths, restriction=False, free=0, pair=False,
               exceeded="above the bound")  # fmt: skip
    assert a.verdict is Verdict.REFUTED


def test_a_masked_model_is_outside_lemma_5_at_one_n_and_every_n():
    from attncert.model import zoo_model

    model = zoo_model("trained_nope_first_last")  # causal decoder
    assert V.lemma5_outside(model) and V.lemma5_outside(model, every_length=True)
    a = V.soft(ACCEPT, model, widths=[(2.0, 1.0)], restriction=False, free=0, pair=False)
    assert a.verdict is Verdict.OUTSIDE_THEOREM


def test_certify_that_finds_no_restriction_is_undecided_with_the_reason(tmp_path, capsys):
    """Issue 41: a random Llama-style classifier from transformers (RMSNorm, SwiGLU, two
    layers) at n = 64: the search finds no satisfiable encoding — UNDECIDED (exit 3) with
    the reason, not REFUTED (nothing was refuted)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from attncert.cli.main import main
    from attncert.model import model_from_hf, save_model

    config = transformers.LlamaConfig(
        vocab_size=8, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, attn_implementation="eager",
        bos_token_id=1, pad_token_id=0,
    )  # fmt: skip
    torch.manual_seed(0)
    llama = transformers.LlamaForSequenceClassification(config).double().eval()
    model = model_from_hf(llama, alphabet="01", bos="^", token_ids={"^": 1, "0": 3, "1": 4})
    path = save_model(model, tmp_path / "llama.json")
    code = main(["certify", str(path), "--n", "64", "--language", "parity", "--time-limit", "20"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "UNDECIDED: no certificate:" in err and "no satisfiable encoding" in err
    assert "REFUTED" not in err
