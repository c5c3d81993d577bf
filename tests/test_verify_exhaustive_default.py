"""``verify`` decides small lengths exactly by itself (issue 42 item 7) and prints an
exact count as the fraction it is (item 4).

With default flags and |Σ|ⁿ ≤ 2¹⁶, every string the bound leaves is evaluated (batched
rigorous enclosures, arb for the rest), so the verdict is CERTIFIED or REFUTED and the
count is brute force's — float forward pass, arb where the float margin is tiny. The
slow test does it at n = 16 on every trained zoo decoder (a file of .ci/run's slow
step)."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from attncert.cli.main import main
from attncert.kernel.soft.checker import decide
from attncert.languages import language
from attncert.model import forward, zoo_model
from attncert.model.kinds import Mask
from attncert.model.zoo import zoo_names
from attncert.restriction import Restriction
from attncert.soft.verify import search as S
from attncert.soft.verify import verify
from attncert.soft.verify.outcome import exact_accuracy, exact_decimal
from attncert.soft.verify.pipeline import ALL_STRINGS, EXHAUSTIVE, default_exhaustive


def brute_force_right(model, lang, n: int) -> int:
    """Strings of length n the model classifies right: the float forward pass, and arb
    wherever the float logit is within 10⁻⁶ (relative) of 0."""
    strings = list(Restriction.parse(model.alphabet, "*" * n).completions())
    z = np.concatenate(
        [
            forward(model, strings[i : i + 4096], keep_attention=False).logits
            for i in range(0, len(strings), 4096)
        ]
    )
    accept = z > 0
    for i in np.flatnonzero(np.abs(z) < 1e-6 * (1 + np.abs(z).max())):
        prec, ball = decide(model, strings[i])
        assert prec is not None
        accept[i] = bool(ball > 0)
    member = np.array([lang.contains(s) for s in strings])
    return int((accept == member).sum())


def test_the_default_evaluates_every_string_up_to_2_to_the_16():
    assert ALL_STRINGS == 1 << 16
    assert default_exhaustive(2, 16) == 65536 and default_exhaustive(2, 17) == EXHAUSTIVE
    assert default_exhaustive(3, 10) == 3**10 and default_exhaustive(3, 11) == EXHAUSTIVE
    assert default_exhaustive(4, 2000) == EXHAUSTIVE  # no huge integer trouble


@pytest.mark.parametrize(
    ("name", "lang", "n"),
    [
        ("trained_rope_dyck1", "dyck1", 8),
        ("trained_alibi_majority", "majority", 9),
        ("trained_hard_parity", "parity", 8),
    ],
)
def test_default_flags_decide_small_lengths_exactly(name, lang, n):
    """CERTIFIED or REFUTED, never UNDECIDED, and brute force's count."""
    model, L = zoo_model(name), language(lang)
    out = verify(model, L, n, progress=False)
    assert out.check.accepted and out.check.undecided == 0
    assert out.verdict in ("CERTIFIED", "REFUTED")
    assert out.leaf_counts()["open"] == 0
    assert out.check.right == brute_force_right(model, L, n)
    assert out.verdict == ("CERTIFIED" if out.check.right == 2**n else "REFUTED")
    assert out.exact_text() == exact_accuracy(out.check.right, 2**n, 2, n)


def test_an_explicit_exhaustive_keeps_the_cube_search():
    """--exhaustive given: cubes above it are split, not evaluated whole."""
    out = verify(zoo_model("trained_rope_dyck1"), "dyck1", 8, exhaustive=16, progress=False)
    assert len(out.certificate.nodes) > 1
    assert out.check.accepted


def test_an_exhaustive_cube_whose_arb_decisions_run_late_stays_open(monkeypatch):
    """A model whose enclosures leave strings to arb past the time limit: the cube is an
    open leaf saying so — not a claim the kernel would have to refute."""
    model = zoo_model("trained_rope_dyck1")
    monkeypatch.setattr(
        S, "logit_bounds", lambda m, t: (np.full(len(t), -np.inf), np.full(len(t), np.inf))
    )
    stats = S.SearchStats()
    leaf = S._exhaustive(model, language("dyck1"), "()" + "*" * 4, stats, deadline=0.0)
    assert leaf.kind == "open"
    assert leaf.reason == (
        "the float enclosures left 16 of 16 completions to arb; 0 were decided before the "
        "time limit"
    )
    assert "time limit" in stats.stopped


# ----------------------------------------------------------------------------- exact counts


def test_exact_counts_are_written_as_fractions():
    assert exact_decimal(Fraction(251, 256)) == "0.98046875"
    assert exact_decimal(Fraction(7, 10)) == "0.7" and exact_decimal(Fraction(5)) == "5"
    assert exact_decimal(Fraction(1, 3)) is None
    assert exact_decimal(Fraction(1, 2**60)) is None  # 42 significant digits
    assert exact_accuracy(251, 256, 2, 8) == "251/256 = 0.98046875"
    assert exact_accuracy(65536, 65536, 2, 16) == "65536/65536 = 1"
    assert exact_accuracy(20, 27, 3, 3) == "≈ 0.74074 (20/27)"
    assert exact_accuracy(2**60 - 3, 2**60, 2, 60) == "≈ 1 − 2.60208e-18 (≈1.15292e+18 of 2^60)"


def test_the_cli_prints_an_exact_accuracy_and_its_json_fields(capsys):
    argv = ["verify", "zoo:trained_hard_parity", "--language", "parity", "--n", "8", "--quiet"]
    code = main(argv)
    text = capsys.readouterr().out
    assert code == 1  # REFUTED: the model is wrong on some string of length 8
    line = next(ln for ln in text.splitlines() if ln.startswith("certified accuracy"))
    right = int(line.split(": ")[1].split("/")[0])
    want = exact_accuracy(right, 256, 2, 8)
    assert line == (
        f"certified accuracy over all 2^8 strings (uniform), exact (no string undecided): {want}"
    )
    assert "[0." not in line  # no interval that looks uncertain
    assert main([*argv, "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    acc = d["accuracy"]
    assert acc["exact"] is True and acc["text"] == want
    assert (acc["numerator"], acc["denominator"]) == (str(right), "256") == (d["right"], "256")
    assert Fraction(acc["lower"]) == Fraction(right, 256) == Fraction(acc["upper"])


def test_an_undecided_count_keeps_its_interval(capsys):
    """Budget too small to decide everything: the interval, and accuracy.exact false."""
    argv = ["verify", "zoo:trained_parity", "--language", "parity", "--n", "24"]
    assert main([*argv, "--time-limit", "0.5", "--max-nodes", "3", "--quiet", "--json"]) == 3
    d = json.loads(capsys.readouterr().out)
    assert d["accuracy"]["exact"] is False and "numerator" not in d["accuracy"]
    assert {"lower", "upper"} <= set(d["accuracy"])


# ----------------------------------------------------------------------------- every decoder

# the zoo's causal decoders (every head under a future mask), by name: collecting the
# tests should not load every zoo model; the slow test checks each one is causal
DECODERS = [
    "trained_alibi_dyck1",
    "trained_alibi_first_last",
    "trained_alibi_majority",
    "trained_dyck1",
    "trained_hard_alibi_first_last",
    "trained_hard_nope_first_last",
    "trained_hard_rope_first_last",
    "trained_nope_dyck1",
    "trained_nope_first_last",
    "trained_nope_majority",
    "trained_rope_dyck1",
    "trained_rope_first_last",
    "trained_rope_majority",
]


@pytest.mark.slow
def test_the_decoder_list_is_every_causal_trained_model():
    causal = [
        z
        for z in zoo_names()
        if z.startswith("trained_")
        and all(h.mask is Mask.FUTURE for ly in zoo_model(z).layers for h in ly.heads)
    ]
    assert causal == DECODERS


@pytest.mark.slow
@pytest.mark.parametrize("name", DECODERS)
def test_every_trained_decoder_is_decided_at_16_with_default_flags(name):
    """The issue's acceptance test: at n = 16 with default flags, CERTIFIED or REFUTED,
    with brute force's count, on every causal decoder of the zoo."""
    model = zoo_model(name)
    out = verify(model, model.meta["training"]["recipe"]["language"], 16, progress=False)
    assert out.verdict in ("CERTIFIED", "REFUTED"), out.summary()
    assert out.check.undecided == 0
    assert out.check.right == brute_force_right(model, language(out.language), 16)
