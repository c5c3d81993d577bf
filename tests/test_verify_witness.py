"""Witnesses carved into the verify tree (attncert.soft.verify.witness, issue 22).

When the bound leaves cubes open and no leaf is wrong, verify samples the open cubes and
carves a string the float pass misclassifies into the tree. What must hold: the verdict
is "proved wrong" only with a witness the kernel re-derived; the witness really is
misclassified (an independent float forward pass and the language say so); the carved
leaf's counts are brute force over its cube; the certified interval still contains the
exact accuracy (brute force at small n); a model that is right everywhere gets no
witness; and a carve the node limit cannot hold is skipped with the reason.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from attncert.languages import language
from attncert.model import forward, zoo_model
from attncert.soft.verify import verify
from attncert.soft.verify.certificate import certificate_to_dict
from attncert.soft.verify.witness import carve_path, holds


def _free_of(nodes, n):
    free = [n]
    for k, nd in enumerate(nodes):
        if k:
            free.append(free[nd.parent] - 1)
    return free


def _cube(nodes, k, n):
    """The restriction of node k: the root's all-free string with every split on the path
    fixed to its child's symbol."""
    rho = ["*"] * n
    while nodes[k].parent is not None:
        parent = nodes[k].parent
        rho[nodes[parent].split - 1] = nodes[k].symbol
        k = parent
    return "".join(rho)


def _ancestors(nodes, k):
    while nodes[k].parent is not None:
        k = nodes[k].parent
        yield k


def test_helpers():
    assert holds("0*1*", "0011") and not holds("0*1*", "1011") and holds("0011", "0011")
    assert carve_path("0**1**") == [1, 2, 4, 5] and carve_path("0110") == []


@pytest.mark.slow
def test_trained_parity_is_proved_wrong_at_n_64_by_a_carved_witness():
    model, lang = zoo_model("trained_parity"), language("parity")
    out = verify(model, lang, 64, time_limit=2.0, progress=False)
    assert out.check.accepted, out.check.summary()
    assert out.verdict == "REFUTED" and out.proved == "wrong"
    w = out.witnesses()[0]
    z = forward(model, [w], keep_attention=False).logits[0]
    assert (z > 0) != lang.contains(w)  # independently misclassified
    assert out.stats.witness.confirmed and out.stats.witness.misclassified >= 1
    nodes = out.certificate.nodes
    free = _free_of(nodes, 64)
    (k,) = [i for i, nd in enumerate(nodes) if nd.leaf and nd.leaf.kind == "exhaustive"]
    # the carved leaf is the witness itself, on the path its splits spell out
    assert free[k] == 0 and _cube(nodes, k, 64) == w
    assert (nodes[k].leaf.wrong, nodes[k].leaf.right, nodes[k].leaf.witness) == (1, 0, w)
    path_len = sum(1 for _ in _ancestors(nodes, k))
    assert out.stats.split_rules["witness"] <= path_len <= 64
    assert out.check.wrong == 1 and 0 < out.upper < 1 and out.lower == 0
    assert "1 − " in out.summary()  # an upper bound below 1 does not print as 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "limits", [{"time_limit": 1e-6}, {"max_nodes": 100}], ids=["root-open", "node-limit"]
)
def test_the_interval_still_holds_the_exact_accuracy_after_a_carve(limits):
    """n = 12, the bound stopped at once (the carve starts at the root) or by a node limit
    (a bound leaf may already be wrong; then no sampling is needed): brute force inside."""
    model, lang = zoo_model("trained_hard_majority"), language("majority")
    out = verify(model, lang, 12, exhaustive=0, progress=False, **limits)
    assert out.check.accepted and out.proved == "wrong"
    strings = ["".join(s) for s in itertools.product("01", repeat=12)]
    z = forward(model, strings, keep_attention=False).logits
    right = sum((a > 0) == lang.contains(s) for a, s in zip(z, strings, strict=True))
    assert out.lower * 4096 <= right <= out.upper * 4096 and right < 4096
    if "time_limit" in limits:
        assert out.stats.witness.confirmed and out.check.wrong == 1 and out.check.right == 0


def test_a_carve_beyond_the_node_limit_is_skipped_with_the_reason():
    model, lang = zoo_model("trained_hard_majority"), language("majority")
    out = verify(model, lang, 12, max_nodes=5, exhaustive=0, progress=False)
    assert out.check.accepted and out.verdict == "UNDECIDED" and out.check.wrong == 0
    ws = out.stats.witness
    assert not ws.confirmed and ws.misclassified > 0 and "node limit" in ws.text()


@pytest.mark.slow
def test_a_right_model_left_undecided_reports_an_empty_sample():
    """trained_majority is right on every sampled string at n = 64: no witness, no verdict."""
    out = verify(zoo_model("trained_majority"), "majority", 64, time_limit=1.0, progress=False)
    assert out.verdict == "UNDECIDED" and out.check.wrong == 0
    ws = out.stats.witness
    assert ws.sampled > 0 and ws.misclassified == 0 and not ws.confirmed
    assert out.to_dict()["witness_search"] == ws.text()


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "attncert", "verify", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_cli_takes_the_language_the_model_records():
    got = _cli("zoo:trained_dyck1", "--n", "10", "--json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["language"] == "dyck1" and data["verdict"] == "CERTIFIED"


@pytest.mark.slow
@pytest.mark.parametrize("model", ["zoo:soft_parity", "zoo:random-L2-H2-d16"])
def test_cli_without_a_recorded_language_asks_for_one(model):
    got = _cli(model, "--n", "8")
    assert got.returncode == 2 and "Traceback" not in got.stderr
    assert (
        "--language" in got.stderr
        and "records no language" in got.stderr
        and "dfa:PATH" in got.stderr
    )


def test_language_samples_are_kept_only_inside_an_open_cube():
    from attncert.languages.dfa import DFA
    from attncert.soft.verify.witness import _from_language

    rng = np.random.default_rng(0)
    lang = language("dyck1")
    everything = np.array([list("*" * 16)])
    got = _from_language(lang, rng, 16, 12, everything, everything != "*")
    assert len(got) == 12 and any(lang.contains(s) for s in got)  # members, not just noise
    cubes = np.array([list(")" + "*" * 15), list("((" + "*" * 14)])
    got = _from_language(lang, rng, 16, 40, cubes, cubes != "*")
    assert got and all(s.startswith(")") or s.startswith("((") for s in got)
    assert len(got) < 40  # the sampler's strings that start with "()" were dropped
    dfa = DFA(
        states=("even", "odd"),
        alphabet=("0", "1"),
        delta=((0, 1), (1, 0)),
        start=0,
        accepting=frozenset({1}),
        name="odd_ones",
    )  # a language without a training sampler
    assert _from_language(dfa, rng, 16, 8, everything, everything != "*") == []
    # a DFA that happens to be called "parity" but is over another alphabet: the parity
    # sampler's strings are not candidates
    ab = DFA(
        states=("q",), alphabet=("a", "b"), delta=((0, 0),), start=0,
        accepting=frozenset({0}), name="parity",
    )  # fmt: skip
    assert _from_language(ab, rng, 16, 8, everything, everything != "*") == []


def test_a_tampered_carve_is_rejected():
    """The carved leaf is re-derived like any other: a count claiming the witness right,
    a witness dropped, a branch symbol on the carve path swapped — each rejected."""
    from attncert.certificates.verify import certificate_from_dict
    from attncert.kernel.verify.checker import check

    model = zoo_model("trained_parity")
    out = verify(model, "parity", 64, time_limit=0.5, progress=False)
    assert out.proved == "wrong"
    data = certificate_to_dict(out.certificate)
    k = next(i for i, nd in enumerate(data["nodes"]) if nd.get("leaf", {}).get("witness"))

    def rejects(edit, claim, match):
        d = json.loads(json.dumps(data))
        edit(d)
        rep = check(certificate_from_dict(d), model)
        assert not rep.accepted, "an edited certificate was accepted"
        assert claim in rep.summary() and match in rep.summary(), rep.summary()

    def right_after_all(d):
        leaf = d["nodes"][k]["leaf"]
        leaf["right"], leaf["wrong"], leaf["witness"] = "1", "0", None
        d["totals"]["right"], d["totals"]["wrong"] = "1", "0"

    def no_witness(d):
        d["nodes"][k]["leaf"]["witness"] = None

    def swapped(d):
        d["nodes"][k]["symbol"] = "1" if d["nodes"][k]["symbol"] == "0" else "0"

    rejects(right_after_all, "counts", "right/wrong are")
    rejects(no_witness, "witness", "needs a witness")
    rejects(swapped, "tree", "exactly once is needed for a partition")


def test_the_bound_memory_estimate_caps_the_search_and_covers_a_real_bound():
    """The search's memory guard (untrusted): at n = 4096 a bound with every position free
    of the two-layer trained_parity would take ≈ 40 GiB, so the search refuses it with the
    reason; at n ≤ 1024 nothing changes; and the estimate is above a measured peak."""
    import tracemalloc

    from attncert.kernel.soft.affine.bound import restriction_range
    from attncert.soft.verify.search import MEMORY_CAP, bound_memory, bound_reach

    model = zoo_model("trained_parity")
    assert bound_reach(model, 1024) == (1024, "")
    reach, why = bound_reach(model, 4096)
    assert 0 < reach < 4096 and "GiB" in why and "cap" in why
    assert bound_memory(model, 4096, reach) <= MEMORY_CAP < bound_memory(model, 4096, reach + 1)
    assert bound_reach(zoo_model("trained_hard_first_last"), 4096) == (4096, "")  # one layer
    n = 192
    base = "".join(np.random.default_rng(0).choice(["0", "1"], n))
    tracemalloc.start()
    restriction_range(model, "*" * n, base)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= bound_memory(model, n, n), (peak, bound_memory(model, n, n))


@pytest.mark.slow
def test_the_search_stops_before_a_bound_that_would_overrun_the_time_limit():
    """A bound is not interrupted, so the search predicts its time (estimated GiB × the
    slowest rate seen, or the prior) and stops before one that would overrun: with the
    prior, a bound with every position free of trained_parity at n = 512 (≈ 0.7 GiB,
    ≈ 5.6 s predicted) is not started under a 1 s limit; with a generous limit it is."""
    from attncert.soft.verify.search import (
        RATE_PRIOR,
        Budget,
        SearchStats,
        _bound_wait,
        _Cube,
        bound_memory,
    )

    model = zoo_model("trained_parity")
    stats = SearchStats(bound_free=512)
    cube = _Cube(0, "*" * 512, "0" * 512, None)
    wait = _bound_wait(model, cube, Budget(), stats)
    assert wait == pytest.approx(RATE_PRIOR * bound_memory(model, 512, 512) / 2**30) and wait > 1
    stats.bound_rate = 0.5
    assert _bound_wait(model, cube, Budget(), stats) == pytest.approx(wait / 16)
    # a cube evaluated string by string runs no bound (Budget.at(512)'s direct size is 1)
    assert _bound_wait(model, _Cube(0, "0" * 512, "0" * 512, None), Budget(), stats) == 0
    out = verify(model, "parity", 512, time_limit=1.0, progress=False)
    assert out.stats.bounds == 0 and "the next bound would take about" in out.stats.stopped
    assert out.search_seconds < 1.0 + 10.0  # the limit, the witness allowance and the carve
