"""Dyck-k via the Appendix-E program (Yang et al. §6, Appendix E): the program itself, its
uniform–tieless average-hard transformer and the Theorem-26 softmax simulation."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest

from attncert.cli.main import main as cli
from attncert.compile import explain
from attncert.compile.dyck import (
    BOS,
    analytic_report,
    appendix_e_program,
    certify_lengths,
    dyck_program_model,
    dyck_soft_model,
    program_model,
)
from attncert.compile.tieless import check_uniform_tieless, soft_simulation
from attncert.compile.variants import with_temperature
from attncert.errors import InputError, ParameterError
from attncert.languages import Dyck
from attncert.model import forward, forward_exact, load_model, save_model, zoo_model, zoo_names
from attncert.model.spec import Head, Layer, Model, Temperature

__implements__ = ("Yang Theorem 26",)

ALPHABET = "()[]"


def _strings(alphabet: str, n: int) -> list[str]:
    return ["".join(p) for p in itertools.product(alphabet, repeat=n)]


@pytest.fixture(scope="module")
def hard() -> Model:
    return dyck_program_model(2)


@pytest.fixture(scope="module")
def soft() -> Model:
    return dyck_soft_model(2, max_len=4).model


def _stack_partners(w: str, pairs: tuple[str, ...]) -> dict[int, int]:
    """Independent definition: right bracket position → its matching left (1-based)."""
    opening = {p[0] for p in pairs}
    stack, out = [], {}
    for i, a in enumerate(w, start=1):
        if a in opening:
            stack.append(i)
        else:
            out[i] = stack.pop()
    return out


# ----- the program ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "max_len"), [(1, 10), (2, 7), pytest.param(2, 8, marks=pytest.mark.slow), (3, 5)]
)
def test_program_decides_dyck_and_its_prefixes(k, max_len):
    """outᵢ = prefix ∈ Dyck-k and okᵢ = prefix extends to a member (the languages module's
    stack-based definitions), at every position of every string up to the length."""
    lang = Dyck(k)
    alphabet = "".join(lang.pairs)
    for n in range(1, max_len + 1):
        for w in _strings(alphabet, n):
            tr = appendix_e_program(w, k)
            for i in range(1, n + 1):
                assert tr.out[i - 1] == lang.contains(w[:i]), (w, i)
                assert tr.ok[i - 1] == lang.is_prefix(w[:i]), (w, i)


def test_program_nearest_same_depth_is_the_matching_bracket():
    lang = Dyck(2)
    members = [w for n in (2, 4, 6, 8) for w in _strings(ALPHABET, n) if lang.contains(w)]
    assert len(members) == 2 + 8 + 40 + 224
    for w in members:
        tr = appendix_e_program(w, 2)
        for i, j in _stack_partners(w, lang.pairs).items():
            assert tr.nearest[i - 1] == j
            assert tr.depth[i - 1] == tr.depth[j - 1]


def test_program_values_on_a_worked_example():
    tr = appendix_e_program("([)]", 2)
    assert tr.left == (1, 2, 2, 2) and tr.right == (0, 0, 1, 2)
    assert tr.depth == (1, 2, 2, 1) and tr.nearest == (None, None, 2, 1)
    assert tr.err2 == (False, False, True, True) and tr.ok == (True, True, False, False)
    assert appendix_e_program(")", 2).err1 == (True,)


def test_program_rejects_unknown_symbols():
    with pytest.raises(InputError, match=r"unknown symbol 'x' at position 2"):
        appendix_e_program("(x", 2)


# ----- the average-hard transformer ---------------------------------------------------------


def _check_outputs(model: Model, words: list[str], k: int = 2) -> None:
    lang = Dyck(k)
    tr = forward(model, words)
    for b, w in enumerate(words):
        prog = appendix_e_program(w, k)
        out = tr.outputs[b, 1:, 0] > 0.5  # token 1 is BOS
        ok = tr.outputs[b, 1:, 1] > 0.5
        assert list(out) == list(prog.out), w
        assert list(ok) == list(prog.ok), w
        assert bool(tr.accept[b]) == lang.contains(w), w


@pytest.mark.slow
def test_exact_evaluator_decides_dyck2_and_matches_the_program(hard):
    """Exact rational forward pass: the decision and every position's (out, ok)."""
    lang = Dyck(2)
    assert hard.bos == BOS and hard.alphabet == tuple(ALPHABET)
    c_out, c_ok = hard.readout.output_coords
    for n in range(0, 5):
        for w in _strings(ALPHABET, n):
            tr = forward_exact(hard, w)
            assert (tr.logit > 0) == lang.contains(w), w
            y = tr.layers[-1].output
            prog = appendix_e_program(w, 2) if w else None
            for i in range(1, n + 1):  # row 0 is BOS; the outputs are exact Booleans
                assert y[i, c_out] == int(prog.out[i - 1]), (w, i)
                assert y[i, c_ok] == int(prog.ok[i - 1]), (w, i)


@pytest.mark.parametrize("max_len", [6, pytest.param(9, marks=pytest.mark.slow)])
def test_average_hard_model_agrees_with_the_program_on_all_short_strings(hard, max_len):
    for n in range(1, max_len + 1):
        _check_outputs(hard, _strings(ALPHABET, n))


@pytest.mark.slow
@pytest.mark.parametrize(("k", "max_len"), [(1, 10), (3, 5)])
def test_other_k(k, max_len):
    model = dyck_program_model(k)
    alphabet = "".join(Dyck(k).pairs)
    for n in range(1, max_len + 1):
        _check_outputs(model, _strings(alphabet, n), k)


@pytest.mark.slow
def test_program_model_is_uniform_tieless_with_gap_one(hard):
    """The hypothesis of Theorem 26, checked exactly on every input of length ≤ 5: each
    head uniform or with a unique maximum; the smallest gap is 1 (the integer scores)."""
    rep = check_uniform_tieless(hard, 5)
    assert rep.uniform_tieless and len(rep.lengths) == 5
    assert sorted(rep.uniform_heads) == [(0, 0), (0, 1), (0, 2)]
    for r in rep.lengths:
        assert r.min_gap == 1
        assert r.activation_bound == (r.n + 1) ** 3  # N·d² with d ≤ N−1
        assert r.margin == pytest.approx(0.5)


def test_analytic_facts_match_the_exact_reports(hard):
    """The facts Theorem 26 uses beyond the enumerated lengths (gap ≥ 1 per head, activation
    bound N³, margin ½) are implied by the exact reports wherever both exist."""
    uniform = {(0, 0), (0, 1), (0, 2)}
    for r in check_uniform_tieless(hard, 5).lengths:
        a = analytic_report(hard, r.n)
        assert a.activation_bound == r.activation_bound and a.margin == r.margin
        for key, gap in r.gaps.items():
            if key in uniform:
                assert gap is None and a.gaps[key] is None
            else:  # None: never two visible keys at this length (no error at all)
                assert a.gaps[key] == 1 and (gap is None or gap >= 1)


def test_a_constant_temperature_is_certified_only_up_to_a_length(hard):
    """The length-by-length certification is not vacuous: a constant β = 30 is certified
    for n ≤ 11 and refused at n = 12 (the gap stays 1 but the activation bound N³ and the
    N−1 competitors grow), while Theorem 26's fitted β(N) ≈ 20.6·log N covers n ≤ 4096."""
    assert certify_lengths(hard, Temperature(30.0), range(1, 12)) < 0.5
    with pytest.raises(ParameterError, match=r"β\(N\) = 30.0 does not certify length 12 "):
        certify_lengths(hard, Temperature(30.0), range(1, 4097))
    fitted = Temperature(20.59375, log_power=1.0)
    assert certify_lengths(hard, fitted, range(5, 4097)) < 1e-6


def _replace_head(model: Model, layer: int, head: int, **changes) -> Model:
    layers = list(model.layers)
    heads = list(layers[layer].heads)
    heads[head] = dataclasses.replace(heads[head], **changes)
    layers[layer] = Layer(tuple(heads), layers[layer].ffn, layers[layer].residual)
    return dataclasses.replace(model, layers=tuple(layers))


def test_dropping_the_tie_break_makes_the_program_tie(hard):
    """Without the +j term the nearest-same-depth head ties between equal depths; the
    tieless check names the tie and Theorem 26 refuses the model."""
    h: Head = hard.layers[3].heads[0]
    w_k = h.w_k.copy()
    pos = hard.meta["coordinates"].index("pe:1*[i]")
    assert w_k[1, pos] == 1.0
    w_k[1, pos] = 0.0
    broken = _replace_head(hard, 3, 0, w_k=w_k)
    tie = check_uniform_tieless(broken, 3).first_tie
    assert tie is not None and tie.layer == 3 and len(tie.keys) >= 2
    with pytest.raises(ParameterError, match="not uniform–tieless: layer 3 head 0"):
        soft_simulation(broken, 3)


def test_swapped_bracket_types_are_caught(hard):
    """A one-weight-row mutation (the nearest head reads '[' where it should read '(')
    makes the model accept "(]"; the exhaustive comparison finds it."""
    h = hard.layers[3].heads[0]
    broken = _replace_head(hard, 3, 0, w_v=h.w_v[::-1].copy())
    acc = forward(broken, ["(]", "()"]).accept
    assert bool(acc[0]) and not bool(acc[1])


@pytest.mark.slow
def test_short_inputs_decide_each_input_once_and_as_brute_force_does(hard, soft):
    """``short_inputs`` (the all-length proof's check below N₀) takes the decisions the
    tieless enumeration recorded: on the program, a bracket-swapped one and one whose tie
    stops the enumeration early (the rest decided anew), its wrong inputs are exactly brute
    force's."""
    from attncert.languages import language
    from attncert.model import accepts_exact
    from attncert.proofcheck.kinds.tieless_simulation import short_inputs

    lang = language("dyck2")
    h = hard.layers[3].heads[0]
    w_k = h.w_k.copy()
    w_k[1, hard.meta["coordinates"].index("pe:1*[i]")] = 0.0
    swapped = _replace_head(hard, 3, 0, w_v=h.w_v[::-1].copy())
    tied = _replace_head(hard, 3, 0, w_k=w_k)
    for model, tie in ((hard, False), (swapped, False), (tied, True)):
        fails, wrong = short_inputs(model, soft, lang, 3)
        brute = [
            w
            for n in range(1, 4)
            for w in _strings(ALPHABET, n)
            if accepts_exact(model, w) != lang.contains(w)
        ]
        assert wrong == brute and bool(fails) == tie
    # the tie stops the enumeration 5 inputs into length 2: lengths 2 and 3 decided anew
    stopped = check_uniform_tieless(tied, 3).lengths
    assert [(r.n, r.strings) for r in stopped] == [(1, 4), (2, 5)]
    assert "(]" in short_inputs(swapped, soft, lang, 3)[1]
    assert short_inputs(hard, soft, lang, 3) == ([], [])


# ----- Theorem 26: the softmax simulation -----------------------------------------------------


def test_soft_model_temperature_and_records(soft):
    tl = soft.meta["tieless"]
    assert tl["valid_for"].startswith("input lengths 1..1024: 1..4 checked exactly")
    assert tl["analytic"]["lengths"] == [5, 1024] and tl["analytic"]["max_error_bound"] < 1e-6
    assert all(h.temperature is not None for layer in soft.layers for h in layer.heads)
    per_n = tl["per_n"]
    assert [p["n"] for p in per_n] == [1, 2, 3, 4]
    assert all(p["min_gap"] == "1" and p["error_bound"] < 0.5 for p in per_n)
    t = soft.layers[0].heads[0].temperature
    assert t.n_power == 0 and t.log_power == 1  # β(N) ∝ log N: the gap does not shrink
    # the certified β covers every checked length
    for p in per_n:
        assert t(p["N"]) >= p["beta_needed"]


@pytest.mark.parametrize("max_len", [6, pytest.param(9, marks=pytest.mark.slow)])
def test_soft_model_agrees_with_the_program_on_all_short_strings(soft, max_len):
    for n in range(1, max_len + 1):
        _check_outputs(soft, _strings(ALPHABET, n))


def _sample_members(rng: np.random.Generator, n: int) -> str:
    stack: list[str] = []
    w: list[str] = []
    while len(w) < n:
        if stack and (len(w) + len(stack) >= n or rng.random() < 0.5):
            w.append(stack.pop())
        else:
            t = int(rng.integers(2))
            w.append("(["[t])
            stack.append(")]"[t])
    return "".join(w)


@pytest.mark.slow
def test_soft_model_on_sampled_strings_up_to_200(soft):
    """Members of Dyck-2 and their one-symbol mutations (almost all non-members, many
    with only a type mismatch deep inside), lengths 20…200."""
    rng = np.random.default_rng(0)
    lang = Dyck(2)
    for n in (20, 64, 128, 200):
        words = [_sample_members(rng, n) for _ in range(24)]
        for w in list(words):
            i = int(rng.integers(n))
            words.append(w[:i] + ALPHABET[(ALPHABET.index(w[i]) + 2) % 4] + w[i + 1 :])
            j = int(rng.integers(n))
            words.append(w[:j] + ALPHABET[int(rng.integers(4))] + w[j + 1 :])
        truth = [lang.contains(w) for w in words]
        assert 24 <= sum(truth) < len(words)
        tr = forward(soft, words)
        assert [bool(a) for a in tr.accept] == truth
        assert np.all(np.abs(tr.logits - np.where(truth, 0.5, -0.5)) < 0.25)


@pytest.mark.slow
def test_too_low_temperature_fails_first_at_length_4(soft):
    """β = 1 instead of Theorem 26's ≈ 20.6·log N: the error of the count lookups reaches the
    depth comparisons, and the first misjudged strings have length 4 (all strings of
    length ≤ 3 are still right). β = 2 already survives every string of length ≤ 7, so
    the certified temperature is safe but conservative (by about a factor 10·log N)."""
    lang = Dyck(2)

    def wrong(model: Model, n: int) -> list[str]:
        words = _strings(ALPHABET, n)
        acc = forward(model, words).accept
        return [w for w, a in zip(words, acc, strict=True) if bool(a) != lang.contains(w)]

    cold = with_temperature(soft, Temperature(1.0))
    assert all(not wrong(cold, n) for n in (1, 2, 3))
    assert sorted(wrong(cold, 4)) == ["()[)", "([]]", "[())", "[](]"]
    warm = with_temperature(soft, Temperature(2.0))
    assert all(not wrong(warm, n) for n in range(1, 8))


# ----- API, zoo and CLI ------------------------------------------------------------------------


def test_zoo_and_serialization(tmp_path, hard):
    assert {"dyck2_program", "dyck2_program_soft"} <= set(zoo_names())
    assert zoo_model("dyck2_program").digest == dyck_program_model(2, name="dyck2_program").digest
    p = tmp_path / "d.json"
    save_model(hard, p)
    back = load_model(p)
    assert back.digest == hard.digest and back.bos == BOS


def test_reserved_bos_symbol():
    with pytest.raises(InputError, match="reserved for BOS"):
        dyck_program_model(pairs=("()", "^v"))


def test_explain_and_cli(tmp_path, capsys):
    text = explain(program_model("dyck2", soft=False))
    assert "nearest same depth" in text and "average-hard" in text
    out = tmp_path / "d2.json"
    assert cli(["compile", "dyck2", "--library", "-o", str(out), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["program"].startswith("Appendix E program for Dyck-2")
    assert rec["tieless"]["theorem"].startswith("Yang et al. Theorem 26")
    assert load_model(out).digest == rec["digest"]
    assert cli(["compile", "dyck2", "--library", "--regime", "future-masked"]) == 2
    assert "unbounded encodings" in capsys.readouterr().err
    assert cli(["compile", "dyck7", "--library"]) == 2
    assert "dyck2, dyck3, dyck4" in capsys.readouterr().err
