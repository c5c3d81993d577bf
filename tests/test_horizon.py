"""The length horizon (issue 40): ``verify --lengths A:B`` — exact failure lengths of models
whose horizon is known in closed form, models right at every length proved for 1:∞, the
answer at every length of [1, 14] against brute force (the float pass and torch's own
forward pass), and a kernel that refuses every forged certificate naming the place."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from attncert.certificates.horizon import certificate_from_dict
from attncert.cli.main import main
from attncert.kernel.horizon.checker import check
from attncert.languages import language
from attncert.model import forward, save_model
from attncert.model.testbeds import first_failure, first_symbol_model
from attncert.soft.horizon import verify_lengths

FIRST_LAST = language("first_last")


@pytest.mark.parametrize(
    ("delta", "gamma"),
    [
        (math.log(6.5), 0.0),
        (3.0, 0.0),
        pytest.param(7.25, 0.0, marks=pytest.mark.slow),
        (20.0, 0.0),
        (2.0, 0.7),
        pytest.param(2.0, -1.3, marks=pytest.mark.slow),
        pytest.param(
            4.0,
            1.5,
            marks=[
                pytest.mark.slow,
                # a known gap, not a wrong answer: first_refuted = 25 is found exactly and
                # the certificate is accepted, but lengths 17 … 24 stay UNDECIDED within
                # 240 s (the pattern bound for the γ·i/n score term is too loose just
                # below n* = 25, and single-length leaves stop at 2¹⁶ strings); strict, so
                # that fixing it is noticed
                pytest.mark.xfail(
                    reason="lengths 17-24 undecided for (Δ, γ) = (4, 1.5): issue 40, open",
                    strict=True,
                ),
            ],
        ),
    ],
)
def test_the_first_failure_is_found_exactly(delta, gamma):
    """proved_up_to = n* − 1 and first_refuted = n*, n* from the closed form (mpmath),
    over 1:10¹² — the witness is 0·1ⁿ*⁻¹ (run-length encoded when long)."""
    n_star = first_failure(delta, gamma)
    out = verify_lengths(first_symbol_model(delta, gamma), "first_last", 1, 10**12, time_limit=240)
    r = out.report
    assert r.accepted, r.failures
    assert (r.proved_up_to, r.first_refuted) == (n_star - 1, n_star)
    assert out.verdict == "REFUTED"
    assert r.witness in ((("0", 1), ("1", n_star - 1)), (("1", 1), ("0", n_star - 1)))
    assert r.proved[0] == (1, n_star - 1)


@pytest.mark.slow
def test_an_infinite_interval_refutes_from_the_first_failure_on():
    out = verify_lengths(first_symbol_model(3.0), "first_last", 1, None, time_limit=120)
    r = out.report
    assert r.accepted and (r.proved_up_to, r.first_refuted) == (21, 22)
    assert r.refuted[-1][1] is None  # every length from 22 on has a misclassified string


@pytest.mark.slow
@pytest.mark.parametrize(
    "model",
    [first_symbol_model(2.0, temperature="log"), first_symbol_model(1.0, kind="leftmost")],
    ids=["beta-log-n", "leftmost-hard"],
)
def test_models_right_at_every_length_are_proved_for_every_length(model):
    out = verify_lengths(model, "first_last", 1, None, time_limit=120)
    r = out.report
    assert r.accepted, r.failures
    assert out.verdict == "CERTIFIED" and r.proved_up_to == "inf" and r.first_refuted is None
    assert r.proved == ((1, None),) and not r.undecided and not r.refuted


def _brute(model, n: int) -> bool:
    """Right on every string of length n (float forward pass; these models' margins are
    far above float error at n ≤ 14)."""
    strings = ["".join(t) for t in itertools.product(model.alphabet, repeat=n)]
    acc = forward(model, strings).accept
    return all(bool(a) == FIRST_LAST.contains(s) for s, a in zip(strings, acc, strict=True))


def _status(report, n: int) -> str:
    for name, runs in (("proved", report.proved), ("refuted", report.refuted)):
        if any(a <= n and (b is None or n <= b) for a, b in runs):
            return name
    return "undecided"


@pytest.mark.slow
@pytest.mark.parametrize(
    "model",
    [
        first_symbol_model(math.log(6.5)),
        first_symbol_model(2.0, 0.7),
        first_symbol_model(2.5, -2.0),
    ],
    ids=["delta-ln6.5", "gamma+0.7", "gamma-2"],
)
def test_every_length_up_to_14_agrees_with_brute_force(model):
    out = verify_lengths(model, "first_last", 1, 14, time_limit=120)
    r = out.report
    assert r.accepted and not r.undecided
    for n in range(1, 15):
        assert _status(r, n) == ("proved" if _brute(model, n) else "refuted"), n


@pytest.mark.slow
def test_an_imported_torch_model_agrees_with_torch_on_every_length_up_to_14():
    """A tiny PyTorch encoder (one softmax head that reads position 1 through a [i = 1]
    key, as the test bed): the horizon at every n ≤ 14 against torch's own forward pass."""
    torch = pytest.importorskip("torch")
    from torch import nn

    from attncert.model.importers import model_from_torch

    m = first_symbol_model(math.log(6.5))
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 1, 16, activation="relu", batch_first=True)
    enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False).eval()
    emb, head = nn.Embedding(2, 8), nn.Linear(8, 1)
    imported = model_from_torch(enc, alphabet="01", embedding=emb, readout=head, position="last")
    out = verify_lengths(imported, "first_last", 1, 14, time_limit=120)
    r = out.report
    assert r.accepted
    for n in range(1, 15):
        strings = ["".join(t) for t in itertools.product("01", repeat=n)]
        toks = torch.tensor([imported.encode(s) for s in strings])
        with torch.no_grad():
            z = head(enc(emb(toks))[:, -1])[:, 0].numpy()
        right = all(bool(v > 0) == FIRST_LAST.contains(s) for s, v in zip(strings, z, strict=True))
        margin = float(np.min(np.abs(z)))
        if margin > 1e-6:  # torch is float32: only compare where its sign is certain
            assert _status(r, n) == ("proved" if right else "refuted"), n
        else:
            assert _status(r, n) != ("refuted" if right else "proved"), n
    assert m.name  # (the test bed above is only the idea; the torch model is random)


# ----- the kernel refuses forgeries, naming the place ------------------------------------------


@pytest.fixture(scope="module")
def honest():
    model = first_symbol_model(3.0)  # n* = 22
    out = verify_lengths(model, "first_last", 1, 40, time_limit=120)
    assert out.report.accepted and out.report.first_refuted == 22
    return model, out.certificate


def _forge(cert, edit):
    data = json.loads(json.dumps(cert))
    edit(data)
    return data


def _leaf(data, kind, claim=None):
    return next(
        nd for nd in data["nodes"]
        if nd.get("leaf", {}).get("kind") == kind
        and (claim is None or nd["leaf"].get("claim") == claim)
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "edit", "claim", "where"),
    [
        (
            "decision flipped",
            lambda d: _leaf(d, "bound", "right")["leaf"].update(
                decision=not _leaf(d, "bound", "right")["leaf"]["decision"]
            ),
            "bound",
            "decision",
        ),
        (
            "right claimed wrong",
            lambda d: _leaf(d, "bound", "right")["leaf"].update(claim="wrong"),
            "bound",
            "claim",
        ),
        (
            "wrong claimed right",
            lambda d: _leaf(d, "bound", "wrong")["leaf"].update(claim="right"),
            "bound",
            "claim",
        ),
        (
            "a wrong leaf made open",
            lambda d: _leaf(d, "bound", "wrong").update(leaf={"kind": "open"}),
            "summary",
            "summary",
        ),
        ("proved_up_to", lambda d: d["summary"].update(proved_up_to=8), "summary", "proved_up_to"),
        (
            "first_refuted",
            lambda d: d["summary"].update(first_refuted=9),
            "summary",
            "first_refuted",
        ),
        ("model", lambda d: d["model"].update(sha256="0" * 64), "model", "model.sha256"),
        ("language", lambda d: d.update(language="dyck1"), "language", "language"),
    ],
)
def test_a_forged_certificate_is_refused_naming_the_place(honest, name, edit, claim, where):
    model, cert = honest
    rep = check(certificate_from_dict(_forge(cert, edit)), model)
    assert not rep.accepted, name
    f = rep.failures[0]
    assert f.claim == claim and where in f.where, f


def test_a_broken_partition_is_refused(honest):
    model, cert = honest
    split = next(
        k for k, nd in enumerate(cert["nodes"]) if nd.get("split", {}).get("kind") == "head"
    )
    kid = next(k for k, nd in enumerate(cert["nodes"]) if nd.get("parent") == split)

    def drop_child(d):  # a head split that loses a symbol's child
        d["nodes"][kid + 0]["branch"] = d["nodes"][kid + 1]["branch"]

    rep = check(certificate_from_dict(_forge(cert, drop_child)), model)
    assert not rep.accepted and rep.failures[0].claim == "tree"
    assert "exactly once" in rep.failures[0].reason


def test_length_and_count_splits_at_their_edges(honest):
    """A length split at k needs lo ≤ k < hi (k = lo is a split, k = hi is not); a count
    split at c needs a < c ≤ b."""
    model, _ = honest

    def tree(lo, hi, split, leaves):
        nodes = [{"parent": None, "split": split}]
        nodes += [{"parent": 0, "branch": b, "leaf": {"kind": "open"}} for b in leaves]
        return {
            "format": "attncert-horizon-certificate", "version": 1,
            "model": {"sha256": model.digest, "name": model.name}, "language": "first_last",
            "lengths": [lo, hi], "nodes": nodes,
            "summary": {"proved": [], "undecided": [[lo, hi]], "refuted_intervals": [],
                        "proved_up_to": None, "first_refuted": None},
        }  # fmt: skip

    ok = check(certificate_from_dict(tree(9, 20, {"kind": "length", "at": 9}, [0, 1])), model)
    assert ok.accepted, ok.failures
    bad = check(certificate_from_dict(tree(9, 20, {"kind": "length", "at": 20}, [0, 1])), model)
    assert not bad.accepted and "must lie in [9, 20)" in bad.failures[0].reason
    cnt = {"kind": "count", "symbol": "0", "at": 1}
    assert check(certificate_from_dict(tree(9, 20, cnt, [0, 1])), model).accepted
    zero = {"kind": "count", "symbol": "0", "at": 0}
    with pytest.raises(Exception, match="integer ≥ 1"):
        certificate_from_dict(tree(9, 20, zero, [0, 1]))


def test_bad_input_is_refused_before_any_work(tmp_path, capsys):
    path = tmp_path / "m.json"
    save_model(first_symbol_model(3.0), path)
    for argv, expect in (
        (["--lengths", "5:2"], "expected A:B"),
        (["--lengths", "1:2.5"], "expected A:B"),
        (["--lengths=-1:4"], "expected A:B"),
        (["--lengths", "1:10", "--language", "dyck1"], "pins membership down"),
        (["--lengths", "1:10", "--language", "anbn"], "pins membership down"),
    ):
        assert main(["verify", str(path), *argv]) == 2, argv
        assert expect in capsys.readouterr().err, argv


@pytest.mark.slow
def test_the_cli_prints_the_horizon_and_a_run_length_witness(tmp_path, capsys):
    path = tmp_path / "m.json"
    save_model(first_symbol_model(5.0), path)  # n* = ⌊e⁵⌋ + 2 = 150
    out = tmp_path / "h.json"
    code = main(["verify", str(path), "--language", "first_last", "--lengths", "1:1000000",
                 "--json", "-o", str(out)])  # fmt: skip
    rec = json.loads(capsys.readouterr().out)
    assert code == 1 and rec["verdict"] == "REFUTED"
    assert (rec["proved_up_to"], rec["first_refuted"]) == (149, 150)
    assert rec["refuted"][0]["witness"] == [["0", 1], ["1", 149]]  # > 64 symbols: RLE
    assert json.loads(out.read_text())["format"] == "attncert-horizon-certificate"
    # the witness as attncert run takes it back
    assert main(["run", str(path), json.dumps(rec["refuted"][0]["witness"]), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["results"][0]
    assert got["accept"] is True and not FIRST_LAST.contains("0" + "1" * 149)
