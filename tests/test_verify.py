"""Certified accuracy over all |Σ|ⁿ strings (attncert verify, issue 22): exact cube counts
against enumeration, the batched rigorous logits against the float and arb passes, the
certified interval against brute force over every string, proofs of correctness at
n = 1024 for compiled models, and a kernel that rejects every edit of the tree."""

from __future__ import annotations

import dataclasses
import itertools
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from attncert.certificates.verify import certificate_from_dict
from attncert.compile import compile_formula
from attncert.errors import UnsupportedError
from attncert.kernel.soft import checker as K
from attncert.kernel.soft.batch import logit_bounds, tokens
from attncert.kernel.verify.checker import check
from attncert.languages import language
from attncert.languages.counting import completion, count_members
from attncert.languages.dfa import DFA
from attncert.logic.interpreter import holds
from attncert.logic.parser import parse
from attncert.model import forward, random_model, zoo_model
from attncert.soft.verify import verify
from attncert.soft.verify.certificate import certificate_to_dict, certificate_to_json

sys.path.insert(0, str(Path(__file__).parent))
from test_model_v2 import v2_model

__implements__ = ("Hahn Theorem 1", "Hahn Theorem 6")

# ----------------------------------------------------------------------------- fixtures


def prev_one() -> DFA:
    """The strings whose second-to-last symbol is 1 ("prev Q_1" at the last position)."""
    return DFA(
        states=("start", "0", "1", "00", "01", "10", "11"),
        alphabet=("0", "1"),
        delta=((1, 2), (3, 4), (5, 6), (3, 4), (5, 6), (3, 4), (5, 6)),
        start=0,
        accepting=frozenset({5, 6}),
        name="prev1",
    )


def last_one() -> DFA:
    return DFA(("0", "1"), ("0", "1"), ((0, 1), (0, 1)), 0, frozenset({1}), name="last1")


@pytest.fixture(scope="module")
def prev_model():
    return compile_formula("prev Q_1", "temperature", alphabet="01")


def _all(alphabet, n):
    return ["".join(t) for t in itertools.product(alphabet, repeat=n)]


def _brute_accuracy(model, lang, n) -> float:
    """Exact accuracy by the float forward pass over every string (no logit near 0)."""
    strings = _all(model.alphabet, n)
    z = forward(model, strings, keep_attention=False).logits
    assert np.abs(z).min() > 1e-6, "a logit too close to 0 for the float pass"
    member = np.array([lang.contains(s) for s in strings])
    return float(np.mean((z > 0) == member))


# ----------------------------------------------------------------------------- counting


@pytest.mark.parametrize(
    "name",
    [
        "parity",
        "parity-odd",
        "ones_star",
        "first_last",
        "majority",
        "dyck1",
        "dyck2",
        "dyck3",
        "anbn",
    ],
)
def test_cube_counts_and_completions_match_enumeration(name):
    lang = language(name)
    alpha = lang.alphabet
    rng = np.random.default_rng(7)
    for n in range(1, 9):
        for _ in range(12):
            rho = "".join(rng.choice([*alpha, "*", "*"]) for _ in range(n))
            comps = [
                "".join(t) for t in itertools.product(*[alpha if c == "*" else (c,) for c in rho])
            ]
            assert count_members(lang, rho) == sum(lang.contains(s) for s in comps), rho
            for want in (True, False):
                w = completion(lang, rho, want)
                exists = any(lang.contains(s) == want for s in comps)
                assert (w is not None) == exists, (rho, want)
                if w is not None:
                    assert w in comps and lang.contains(w) == want


def test_counts_are_exact_at_large_n():
    assert count_members(language("parity"), "1" + "*" * 1023) == 2**1022
    assert count_members(language("first_last"), "0" + "*" * 1022 + "0") == 2**1022
    # Dyck-1 of length 2k: the Catalan number
    from math import comb

    assert count_members(language("dyck1"), "*" * 40) == comb(40, 20) // 21
    assert count_members(language("majority"), "*" * 11) == 2**10
    assert count_members(prev_one(), "*" * 30) == 2**29


def test_dyck_k_counts_at_large_n_and_the_stack_budget(monkeypatch):
    """Dyck-k of length 2m with every position free: Catalan(m)·kᵐ (a shape and a type per
    pair); a fixed closer forces its wildcard opener's type. Beyond the stack budget the
    count is refused with the reason — by the kernel too, as a rejected count."""
    from math import comb

    from attncert.kernel.core.failure import _Reject
    from attncert.kernel.verify import checker as kverify
    from attncert.languages import counting

    def catalan(m):
        return comb(2 * m, m) // (m + 1)

    d2, d3 = language("dyck2"), language("dyck3")
    assert count_members(d2, "*" * 40) == catalan(20) * 2**20
    assert count_members(d3, "*" * 40) == catalan(20) * 3**20
    # a fixed first opener fixes its pair's type: Catalan(m)·2^(m−1)
    assert count_members(d2, "(" + "*" * 39) == catalan(20) * 2**19
    # "(" first and "]" last: they cannot be one pair (Catalan(m − 1) shapes pair them), in
    # the other shapes they fix two pairs' types: (Catalan(m) − Catalan(m − 1))·2^(m−2)
    assert count_members(d2, "(" + "*" * 38 + "]") == (catalan(20) - catalan(19)) * 2**18
    monkeypatch.setattr(counting, "DYCK_STATES", 3)
    rho = "(" + "*" * 6 + "[" + "*" * 6 + ")" + "*" * 6
    with pytest.raises(UnsupportedError, match="more than 3 bracket stacks"):
        count_members(language("dyck2"), rho)
    with pytest.raises(_Reject) as got:
        kverify._counts(language("dyck2"), rho, 4**18, True, 0, "nodes[3]")
    assert got.value.failure.claim == "counts" and "bracket stacks" in got.value.failure.reason


# ----------------------------------------------------------------------------- rigorous batch

BATCH_MODELS = {
    "trained_parity": lambda: zoo_model("trained_parity"),
    "trained_dyck1": lambda: zoo_model("trained_dyck1"),
    "v2 mean readout": lambda: v2_model(0),
    "v2 post-norm relu": lambda: v2_model(
        1, norm_position="post", activation="relu", readout="last"
    ),
    "random causal |Σ|=3": lambda: random_model(2, 1, 6, kind="softmax", seed=4, alphabet="abc"),
    "soft_parity": lambda: zoo_model("soft_parity"),
}


@pytest.mark.parametrize("name", list(BATCH_MODELS))
def test_batched_logits_enclose_the_float_and_arb_logits(name):
    model = BATCH_MODELS[name]()
    rng = np.random.default_rng(1)
    for n in (1, 6):
        strings = ["".join(rng.choice(list(model.alphabet), n)) for _ in range(24)]
        lo, hi = logit_bounds(model, tokens(model, strings))
        z = forward(model, strings).logits
        assert np.all(lo <= z + 1e-9) and np.all(z - 1e-9 <= hi)
        assert np.all(hi - lo < 1e-2)
        prec, ball = K.decide(model, strings[0])
        assert prec is not None and lo[0] <= float(ball.lower()) and float(ball.upper()) <= hi[0]


# ----------------------------------------------------------------------------- verify vs brute force

SMALL = {
    "trained_first_last": (lambda: zoo_model("trained_first_last"), "first_last", 8),
    "trained_majority": (lambda: zoo_model("trained_majority"), "majority", 7),
    "random L1-H2-d8": (lambda: random_model(1, 2, 8, kind="softmax", seed=5), "parity", 7),
    "v2 tanh-gelu first": (
        lambda: v2_model(2, activation="gelu_tanh", readout="first"),
        "parity",
        6,
    ),
    "random |Σ|=4 Dyck-2": (
        lambda: random_model(1, 2, 8, kind="softmax", seed=6, alphabet="()[]"),
        "dyck2",
        6,
    ),
    "Theorem 26 Dyck-2 simulation": (lambda: zoo_model("dyck2_program_soft"), "dyck2", 4),
}


def test_a_bound_leaf_on_dyck2_counts_its_members_exactly():
    """A Dyck-2 model that accepts every string (a large readout bias): the bound decides
    whole cubes, whose Dyck-2 members are counted by the wildcard-stack DP; the certified
    accuracy equals brute force over all 4⁸ strings and the witness is a non-member."""
    base = random_model(1, 1, 8, kind="softmax", seed=2, alphabet="()[]")
    model = dataclasses.replace(base, readout=dataclasses.replace(base.readout, bias=40.0))
    lang = language("dyck2")
    out = verify(model, lang, 8, time_limit=60, progress=False)
    assert out.check.accepted, out.check.summary()
    leaves = out.leaf_counts()
    assert leaves["bound"] >= 1 and leaves["open"] == 0
    assert out.verdict == "REFUTED" and out.witnesses()
    assert not any(lang.contains(w) for w in out.witnesses())
    assert float(out.lower) == pytest.approx(_brute_accuracy(model, lang, 8), abs=0)
    assert out.lower == Fraction(14 * 2**4, 4**8)  # Catalan(4)·2⁴ members of 4⁸ strings


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SMALL))
def test_certified_accuracy_equals_brute_force_at_small_n(name):
    make, lang_name, n = SMALL[name]
    model, lang = make(), language(lang_name)
    out = verify(model, lang, n, time_limit=60, progress=False)
    assert out.check.accepted, out.check.summary()
    exact = _brute_accuracy(model, lang, n)
    assert out.undecided == 0 and float(out.lower) == pytest.approx(exact, abs=0)
    assert out.proved == ("correct" if exact == 1.0 else "wrong")
    assert out.verdict == ("CERTIFIED" if exact == 1.0 else "REFUTED")


def test_bound_leaves_agree_with_brute_force(prev_model):
    """With string-by-string evaluation switched off every leaf is a bound: the interval
    still contains the brute-force accuracy, for the right and for a wrong language."""
    for lang in (prev_one(), last_one()):
        out = verify(prev_model, lang, 9, exhaustive=0, progress=False)
        assert out.check.accepted and out.leaf_counts()["exhaustive"] == 0
        exact = _brute_accuracy(prev_model, lang, 9)
        assert float(out.lower) <= exact <= float(out.upper)


@pytest.mark.slow
def test_a_compiled_model_is_proved_correct_on_every_string_at_n_1024(prev_model):
    # the DFA is the formula's language: checked against the logic interpreter
    f = parse("prev Q_1")
    for s in _all("01", 6):
        assert prev_one().contains(s) == holds(f, s)
    out = verify(prev_model, prev_one(), 1024, time_limit=60, progress=False)
    assert out.verdict == "CERTIFIED" and out.proved == "correct", out.summary()
    assert out.check.right == 2**1024 and out.leaf_counts()["open"] == 0
    assert "proved correct on every string of length 1024" in out.summary()


@pytest.mark.slow
def test_a_wrong_model_is_proved_wrong_with_witnesses_decided_in_arb(prev_model):
    out = verify(prev_model, last_one(), 256, time_limit=60, progress=False)
    assert out.proved == "wrong" and out.verdict == "REFUTED"
    assert float(out.lower) == 0.5 == float(out.upper)  # right exactly when the two agree
    for w in out.witnesses():
        prec, ball = K.decide(prev_model, w)
        assert prec is not None and bool(ball > 0) != last_one().contains(w)


@pytest.mark.slow
def test_trained_hard_models_bound_leaves_agree_with_brute_force():
    """The trained hard models (softmax at β = 64): bound leaves decide cubes with free
    positions, and the certified accuracy is the brute-force one."""
    for name, lang_name in (
        ("trained_hard_first_last", "first_last"),
        ("trained_hard_parity", "parity"),
    ):
        model, lang = zoo_model(name), language(lang_name)
        out = verify(model, lang, 13, exhaustive=0, progress=False)
        assert out.check.accepted and out.undecided == 0 and out.leaf_counts()["bound"] > 0
        assert float(out.lower) == _brute_accuracy(model, lang, 13)


@pytest.mark.slow
def test_theorem_1_6_row_a_trained_hard_parity_model_is_certified_at_chance():
    """On PARITY every decided cube with a free position has error exactly ½: at n = 24 the
    cubes cover almost all of Σⁿ, so the certified accuracy is ½ up to the rest."""
    out = verify(zoo_model("trained_hard_parity"), "parity", 24, time_limit=30, progress=False)
    assert out.check.accepted and out.proved == "wrong" and out.undecided == 0
    mu = out.free_cube_measure()
    assert mu > 0.99 and abs(out.lower - Fraction(1, 2)) <= (1 - mu) / 2
    assert "Theorem 1 / 6" in out.summary()


def test_exact_parity_models_never_get_a_bound_cube_with_a_free_position():
    """soft_parity / soft_parity_ln compute PARITY exactly: no cube with a free position
    has a constant decision, so no sound bound may claim one."""
    for name in ("soft_parity", "soft_parity_ln"):
        model = zoo_model(name)
        out = verify(model, "parity", 5, exhaustive=0, progress=False)
        assert out.check.accepted and out.proved == "correct"
        free = _free_counts(out.certificate)
        for k, nd in enumerate(out.certificate.nodes):
            if nd.leaf is not None and nd.leaf.kind == "bound":
                assert free[k] == 0, (name, k)


def test_an_exhausted_budget_is_undecided_never_proved():
    """trained_first_last is right on every string sampled at n = 64 (so no witness is
    carved; trained_parity, which used to stand here, is now proved wrong by one)."""
    model = zoo_model("trained_first_last")
    out = verify(model, "first_last", 64, time_limit=0.5, progress=False)
    assert out.check.accepted and out.verdict == "UNDECIDED" and out.proved is None
    assert out.stats.witness is not None and out.stats.witness.misclassified == 0
    assert out.undecided > 0 and float(out.upper) - float(out.lower) >= float(out.undecided)
    assert "undecided" in out.summary()


def _free_counts(cert) -> list[int]:
    free = [cert.n]
    for nd in cert.nodes[1:]:
        free.append(free[nd.parent] - 1)
    return free


# ----------------------------------------------------------------------------- tampering


@pytest.fixture(scope="module")
def wrong_tree(prev_model):
    """A certificate with bound leaves, wrong leaves and witnesses (prev model judged on
    the last-symbol language) and one with exhaustive leaves."""
    out = verify(prev_model, last_one(), 12, exhaustive=0, progress=False)
    assert out.check.accepted and out.check.wrong > 0
    return certificate_to_dict(out.certificate)


@pytest.fixture(scope="module")
def exhaustive_tree():
    out = verify(random_model(1, 2, 8, kind="softmax", seed=5), "parity", 6, progress=False)
    assert out.check.accepted and out.leaf_counts()["exhaustive"] >= 1 and out.check.wrong > 0
    return certificate_to_dict(out.certificate)


def _rejects(data, model, claim, match):
    rep = check(certificate_from_dict(json.loads(json.dumps(data))), model)
    assert not rep.accepted, "an edited certificate was accepted"
    text = rep.summary()
    assert claim in text and match in text, text


def _cube_of(data, k):
    """The restriction of node ``k`` of a certificate's dict (``*`` at free positions)."""
    nodes = data["nodes"]
    path = []
    while nodes[k]["parent"] is not None:
        path.append(k)
        k = nodes[k]["parent"]
    rho = ["*"] * data["n"]
    for j in reversed(path):
        rho[nodes[nodes[j]["parent"]]["split"] - 1] = nodes[j]["symbol"]
    return "".join(rho)


def _first(data, pred):
    return next(k for k, nd in enumerate(data["nodes"]) if pred(nd))


def test_the_untouched_certificates_are_accepted(wrong_tree, exhaustive_tree, prev_model):
    assert check(certificate_from_dict(wrong_tree), prev_model).accepted
    rnd = random_model(1, 2, 8, kind="softmax", seed=5)
    assert check(certificate_from_dict(exhaustive_tree), rnd).accepted


def test_a_dropped_leaf_is_rejected(wrong_tree, prev_model):
    data = json.loads(json.dumps(wrong_tree))
    k = _first(data, lambda nd: "leaf" in nd and nd["parent"] is not None)
    del data["nodes"][k]
    for nd in data["nodes"][k:]:  # keep the later parents pointing at the same nodes
        if nd["parent"] is not None and nd["parent"] > k:
            nd["parent"] -= 1
    _rejects(data, prev_model, "tree", "exactly once is needed for a partition")


def test_overlapping_leaves_are_rejected(wrong_tree, prev_model):
    data = json.loads(json.dumps(wrong_tree))
    k = _first(data, lambda nd: "leaf" in nd and nd["parent"] is not None)
    data["nodes"].append(json.loads(json.dumps(data["nodes"][k])))  # the same cube twice
    _rejects(data, prev_model, "tree", "exactly once is needed for a partition")


def test_a_changed_branch_symbol_is_rejected(wrong_tree, prev_model):
    data = json.loads(json.dumps(wrong_tree))
    k = _first(data, lambda nd: nd["parent"] is not None)
    data["nodes"][k]["symbol"] = "1" if data["nodes"][k]["symbol"] == "0" else "0"
    _rejects(data, prev_model, "tree", "exactly once is needed for a partition")
    data["nodes"][k]["symbol"] = "x"
    _rejects(data, prev_model, "tree", "is not a symbol of Σ")


def test_a_split_of_a_fixed_position_is_rejected(wrong_tree, prev_model):
    """A leaf turned into a split of the position its parent already fixed."""
    data = json.loads(json.dumps(wrong_tree))
    c = _first(data, lambda nd: "leaf" in nd and nd["parent"] is not None)
    leaf = data["nodes"][c].pop("leaf")
    data["nodes"][c]["split"] = data["nodes"][data["nodes"][c]["parent"]]["split"]
    for a in "01":
        data["nodes"].append({"parent": c, "symbol": a, "leaf": leaf})
    _rejects(data, prev_model, "tree", "is already fixed there")


@pytest.mark.parametrize("field", ["members", "right", "wrong"])
def test_an_edited_count_is_rejected(wrong_tree, prev_model, field):
    data = json.loads(json.dumps(wrong_tree))
    k = _first(data, lambda nd: "leaf" in nd)
    data["nodes"][k]["leaf"][field] = str(int(data["nodes"][k]["leaf"][field]) + 1)
    _rejects(data, prev_model, "counts", "")


def test_edited_totals_are_rejected(wrong_tree, prev_model):
    data = json.loads(json.dumps(wrong_tree))
    data["totals"]["right"] = str(int(data["totals"]["right"]) + 1)
    _rejects(data, prev_model, "totals", "the leaves give")


def test_an_unsound_or_stretched_range_is_rejected(wrong_tree, prev_model):
    k = _first(wrong_tree, lambda nd: nd.get("leaf", {}).get("kind") == "bound")
    lo, hi = wrong_tree["nodes"][k]["leaf"]["z_range"]
    for z, match in (([lo + 0.5 * abs(lo), hi], "not sound"), ([lo - 1.0, hi], "not what")):
        data = json.loads(json.dumps(wrong_tree))
        data["nodes"][k]["leaf"]["z_range"] = z
        _rejects(data, prev_model, "bound", match)


def test_a_flipped_decision_is_rejected(wrong_tree, prev_model):
    data = json.loads(json.dumps(wrong_tree))
    k = _first(data, lambda nd: nd.get("leaf", {}).get("kind") == "bound")
    data["nodes"][k]["leaf"]["decision"] = not data["nodes"][k]["leaf"]["decision"]
    _rejects(data, prev_model, "bound", "does not give decision")


def test_a_base_outside_the_cube_is_rejected(wrong_tree, prev_model):
    data = json.loads(json.dumps(wrong_tree))
    k = _first(
        data, lambda nd: nd.get("leaf", {}).get("kind") == "bound" and nd["parent"] is not None
    )
    parent = data["nodes"][data["nodes"][k]["parent"]]
    p = parent["split"] - 1
    base = data["nodes"][k]["leaf"]["base"]
    data["nodes"][k]["leaf"]["base"] = base[:p] + ("1" if base[p] == "0" else "0") + base[p + 1 :]
    _rejects(data, prev_model, "bound", "differs from ρ")


def test_missing_or_false_witnesses_are_rejected(wrong_tree, exhaustive_tree, prev_model):
    k = _first(wrong_tree, lambda nd: nd.get("leaf", {}).get("witness"))
    data = json.loads(json.dumps(wrong_tree))
    data["nodes"][k]["leaf"]["witness"] = None
    _rejects(data, prev_model, "witness", "needs a witness")
    # a completion of the same cube that the model gets right: on PARITY every bound leaf
    # of this model holds both, and one free symbol changed turns a witness into one
    mixed = verify(prev_model, "parity", 10, exhaustive=0, progress=False)
    assert mixed.check.accepted
    data = certificate_to_dict(mixed.certificate)
    k = _first(data, lambda nd: nd.get("leaf", {}).get("witness"))
    w, rho = data["nodes"][k]["leaf"]["witness"], _cube_of(data, k)
    p = rho.index("*")
    right = w[:p] + ("1" if w[p] == "0" else "0") + w[p + 1 :]
    assert bool(forward(prev_model, [right]).accept[0]) == language("parity").contains(right)
    data["nodes"][k]["leaf"]["witness"] = right
    _rejects(data, prev_model, "witness", "which is right for")
    rnd = random_model(1, 2, 8, kind="softmax", seed=5)
    j = _first(exhaustive_tree, lambda nd: nd.get("leaf", {}).get("witness"))
    data = json.loads(json.dumps(exhaustive_tree))
    data["nodes"][j]["leaf"]["witness"] = "0" * (len(data["nodes"][j]["leaf"]["witness"]) + 1)
    _rejects(data, rnd, "witness", "is not a completion")


def test_an_exhaustive_count_edit_and_another_model_are_rejected(exhaustive_tree):
    rnd = random_model(1, 2, 8, kind="softmax", seed=5)
    data = json.loads(json.dumps(exhaustive_tree))
    k = _first(data, lambda nd: nd.get("leaf", {}).get("kind") == "exhaustive")
    leaf = data["nodes"][k]["leaf"]
    leaf["right"], leaf["wrong"] = str(int(leaf["right"]) + 1), str(int(leaf["wrong"]) - 1)
    _rejects(data, rnd, "counts", "right/wrong are")
    _rejects(exhaustive_tree, random_model(1, 2, 8, kind="softmax", seed=6), "model", "hash")


def test_the_kernel_checker_imports_no_search_code():
    import ast

    src = (
        Path(__file__).resolve().parents[1]
        / "src"
        / "attncert"
        / "kernel"
        / "verify"
        / "checker.py"
    )
    names = {
        (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(ast.parse(src.read_text()))
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    assert not any(m.startswith(("attncert.soft", "attncert.hard", "z3", "pysat")) for m in names)


# ----------------------------------------------------------------------------- CLI


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "attncert", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.mark.slow
def test_cli_exit_codes_json_and_recheck(tmp_path, prev_model, capsys):
    from attncert.cli.main import main
    from attncert.model import save_model

    mpath = tmp_path / "prev.json"
    save_model(prev_model, mpath)
    dpath = tmp_path / "prev1.json"
    dpath.write_text(json.dumps(prev_one().to_dict()))
    cert = tmp_path / "tree.json"
    argv = ["verify", str(mpath), "--language", f"dfa:{dpath}", "--n", "40", "-o", str(cert)]
    assert main(argv) == 0
    assert "proved correct on every string of length 40" in capsys.readouterr().out
    assert main(["verify-check", str(cert), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accepted"]
    argv = ["verify", "zoo:trained_first_last", "--language", "parity", "--n", "6", "--json"]
    assert main(argv) == 1
    assert json.loads(capsys.readouterr().out)["proved"] == "wrong"
    argv = ["verify", "zoo:trained_first_last", "--language", "first_last", "--n", "64"]
    assert main([*argv, "--time-limit", "0.3", "--quiet"]) == 3
    assert "UNDECIDED" in capsys.readouterr().out
    argv = ["verify", "zoo:trained_parity", "--n", "64", "--time-limit", "0.3", "--quiet"]
    assert main(argv) == 1  # language from the recipe; a carved witness: proved wrong
    out = capsys.readouterr().out
    assert "REFUTED" in out and "proved wrong at n = 64" in out and "witness search" in out
    data = json.loads(cert.read_text())
    data["totals"]["wrong"] = "1"
    cert.write_text(json.dumps(data))
    assert main(["verify-check", str(cert)]) == 1
    assert "REJECTED" in capsys.readouterr().out
    # the real entry point: a bad input is one paragraph, no traceback
    r = _cli("verify", "zoo:trained_parity", "--language", "dyck2", "--n", "4")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "over" in r.stderr


@pytest.mark.parametrize(
    "args, match",
    [
        (["zoo:ones_star", "--language", "ones_star", "--n", "8"], "hard-attention head"),
        (["zoo:trained_dyck1", "--language", "dyck2", "--n", "8"], "over"),
        (["zoo:trained_parity", "--language", "dyck1", "--n", "8"], "over"),
        (["zoo:trained_parity", "--language", "parity", "--n", "0"], "length 0"),
        (
            ["zoo:trained_parity", "--language", "parity", "--n", "8", "--time-limit", "-1"],
            "time-limit",
        ),
    ],
)
def test_cli_refuses_what_it_cannot_verify(args, match, capsys):
    from attncert.cli.main import main

    assert main(["verify", *args]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err, err


# ----------------------------------------------------------------------------- slow: many models


def _many():
    out = []
    for seed in range(6):
        out.append(
            (f"random L1 s{seed}", random_model(1, 2, 8, kind="softmax", seed=seed), "parity")
        )
        out.append(
            (f"random L2 s{seed}", random_model(2, 1, 8, kind="softmax", seed=seed), "majority")
        )
    for seed in range(4):
        out.append((f"v2 s{seed}", v2_model(seed), "parity"))
        out.append(
            (
                f"v2 post s{seed}",
                v2_model(seed, norm_position="post", activation="relu", readout="last"),
                "first_last",
            )
        )
    for name, lang in (
        ("trained_parity", "parity"),
        ("trained_majority", "majority"),
        ("trained_first_last", "first_last"),
        ("trained_dyck1", "dyck1"),
        ("soft_parity", "parity"),
    ):
        out.append((name, zoo_model(name), lang))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("exhaustive", [4096, 0])
def test_brute_force_lands_inside_the_interval_on_many_models(exhaustive):
    for name, model, lang_name in _many():
        lang = language(lang_name)
        for n in (8, 12) if exhaustive else (6,):
            out = verify(model, lang, n, time_limit=120, exhaustive=exhaustive, progress=False)
            assert out.check.accepted, (name, out.check.summary())
            exact = _brute_accuracy(model, lang, n)
            assert float(out.lower) <= exact <= float(out.upper), (name, n)
            if out.undecided == 0:
                assert float(out.lower) == exact


def test_positive_exp_arguments_are_refused_not_wrapped():
    """e^x is tabulated for x ≤ 0: a positive argument (a key scoring above the query's top
    that the caller meant to discard) once indexed the table with a negative number."""
    from attncert.kernel.core import bounds as B

    for f in (B.exp_le0, B.exp_le0_fine):
        with pytest.raises(ValueError, match="x ≤ 0"):
            f(np.array([-1.0, 0.5]), np.array([0.0, 0.0]))
        lo, hi = f(np.array([-1.0]), np.array([-1.0]))
        assert lo[0] <= np.exp(-1.0) <= hi[0]


@pytest.mark.slow
def test_counts_beyond_python_s_decimal_limit_round_trip():
    """|Σ|ⁿ at n = 16384 has 4,933 decimal digits, beyond Python's int-to-str limit: the
    certificate writes it in hexadecimal, the kernel and the summary never convert it."""
    model = compile_formula("Q_1", "temperature", alphabet="01")
    out = verify(model, last_one(), 16384, time_limit=60, progress=False)
    assert out.proved == "correct" and out.check.right == 2**16384
    data = json.loads(certificate_to_json(out.certificate))
    assert data["totals"]["right"].startswith("0x")
    again = certificate_from_dict(data)
    assert again.right == 2**16384 and check(again, model).accepted
    assert "2^16384" in out.summary() and out.to_dict()["strings"] == hex(2**16384)


def test_printed_bounds_are_rounded_outward():
    """The printed accuracy bounds: sci rounds down, sci_up rounds up, each to 6
    significant digits, for tiny (2⁻¹⁰²⁴), round and random fractions."""
    from attncert.soft.verify.outcome import sci, sci_up

    rng = np.random.default_rng(3)
    xs = [Fraction(1, 2**1024), Fraction(1, 10), Fraction(100), Fraction(999999, 10**6)]
    xs += [Fraction(int(a), int(b)) for a, b in rng.integers(1, 10**9, size=(200, 2))]
    for x in xs:
        lo, hi = Fraction(sci(x)), Fraction(sci_up(x))
        assert lo <= x <= hi, x
        assert (lo == x) == (hi == x)
        assert hi - lo <= x * Fraction(1, 10**5), x  # one unit in the 6th digit at most
