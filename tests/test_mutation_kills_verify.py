"""The verify checker (:mod:`attncert.kernel.verify.checker`): signs that the float
enclosures leave open are decided in arb, and every refusal names its claim, place and exact
reason (issue 34: mutation score)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attncert.certificates.verify import certificate_from_dict
from attncert.kernel.core.failure import Failure
from attncert.kernel.soft import checker as K
from attncert.kernel.soft.batch import logit_bounds, tokens
from attncert.kernel.soft.propagate import propagate
from attncert.kernel.verify.checker import check, exhaustive_decisions
from attncert.languages import language
from attncert.model import random_model
from attncert.model.decoders import random_decoder

BASE = random_model(1, 1, 8, kind="softmax", seed=5)


def _with_bias(model, bias: float):
    return dataclasses.replace(model, readout=dataclasses.replace(model.readout, bias=bias))


@pytest.fixture(scope="module")
def near_zero():
    """The model with its readout bias set so that the logit of 0110 is a positive number
    below 10⁻¹⁵: float enclosures cannot tell its sign, arb can."""
    s0 = "0110"
    zc = K.decide(_with_bias(BASE, 0.0), s0)[1]
    model = _with_bias(BASE, -float(zc.mid()))
    prec, ball = K.decide(model, s0)
    if not ball > 0:  # one float step up: 0 < z ≤ one ulp of the bias
        model = _with_bias(BASE, float(np.nextafter(model.readout.bias, 1.0)))
        prec, ball = K.decide(model, s0)
    assert prec is not None and ball > 0 and ball < 1e-15
    return model, s0


def test_signs_the_float_enclosure_leaves_open_are_decided_in_arb(near_zero):
    model, s0 = near_zero
    lo, hi = logit_bounds(model, tokens(model, [s0]))
    assert lo[0] <= 0.0 < hi[0]  # the float enclosure straddles 0
    strings = ["0000", s0, "1011", "1111"]
    got = exhaustive_decisions(model, strings)
    want = [bool(K.decide(model, s)[1] > 0) for s in strings]
    assert got.tolist() == want and got[strings.index(s0)]


def _exhaustive_root(n: int) -> dict:
    """A certificate whose root is one exhaustive leaf over {0, 1}ⁿ (counts unchecked)."""
    return {
        "format": "attncert-verify-certificate",
        "version": 1,
        "model": {"name": BASE.name, "sha256": BASE.digest},
        "language": "parity",
        "n": n,
        "alphabet": "01",
        "tolerance": 1e-6,
        "nodes": [
            {
                "parent": None,
                "symbol": None,
                "leaf": {"kind": "exhaustive", "members": "0", "right": "0", "wrong": "0"},
            }
        ],
        "totals": {"right": "0", "wrong": "0", "undecided": "0"},
    }


def test_an_exhaustive_leaf_beyond_the_enumeration_limit_is_refused():
    rep = check(certificate_from_dict(_exhaustive_root(21)), BASE)
    assert not rep.accepted
    assert rep.failures == (
        Failure(
            "exhaustive",
            "nodes[0].leaf",
            "2097152 completions: more than the checker enumerates (1048576)",
        ),
    )


def test_an_exhaustive_leaf_with_a_wrong_member_count_is_refused():
    data = _exhaustive_root(3)
    data["nodes"][0]["leaf"]["members"] = "5"  # parity has 4 members in {0, 1}³
    rep = check(certificate_from_dict(data), BASE)
    assert rep.failures == (
        Failure("counts", "nodes[0].leaf.members", "the cube has 4 members of parity"),
    )


def _v3_bound_root(model, method: str) -> dict:
    data = _exhaustive_root(3)
    data["model"] = {"name": model.name, "sha256": model.digest}
    data["nodes"][0]["leaf"] = {
        "kind": "bound",
        "method": method,
        "base": "000",
        "decision": True,
        "z_range": [1.0, 2.0],
        "members": "4",
        "right": "4",
        "wrong": "4",
    }
    return data


@pytest.mark.parametrize("method", ["box", "affine"])
def test_a_bound_leaf_on_a_version_3_model_is_re_derived(method):
    """The box and affine passes know RMSNorm, SwiGLU (and RoPE): a claimed range is
    compared with the re-derived one, not refused by kind."""
    model = random_decoder(1, 1, 8, positions="none", norm="rms", mlp="swiglu", seed=1)
    rep = check(certificate_from_dict(_v3_bound_root(model, method)), model)
    f = rep.failures[0]
    # the decision is taken from the re-derived range first, then the claim's fidelity
    assert (f.claim, f.where) in (
        ("bound", "nodes[0].leaf.z_range"),
        ("bound", "nodes[0].leaf.decision"),
    )
    assert f.reason.startswith(
        ("claimed [1.0, 2.0] is not sound: re-derived [", "the re-derived range [")
    )


def test_an_affine_leaf_beyond_the_method_s_budget_is_refused_naming_why():
    """A bound leaf over all of {0, 1}¹⁰²⁴ on a three-layer decoder: the affine method
    refuses for cost, and the kernel names the leaf's method and the refusal."""
    model = random_decoder(3, 2, 8, positions="rope", seed=0)
    data = _v3_bound_root(model, "affine")
    data["n"] = 1024
    data["nodes"][0]["leaf"]["base"] = "0" * 1024
    rep = check(certificate_from_dict(data), model)
    assert rep.failures == (
        Failure(
            "bound",
            "nodes[0].leaf.method",
            "layer 2 would need every row as a query (2049 × 2049 rows × 1056 columns): "
            "beyond the affine method's budget",
        ),
    )


def test_a_box_leaf_on_an_alibi_model_is_refused_naming_the_kind():
    model = random_decoder(1, 1, 8, positions="alibi", seed=1)
    rep = check(certificate_from_dict(_v3_bound_root(model, "box")), model)
    f = rep.failures[0]
    assert (f.claim, f.where) == ("bound", "nodes[0].leaf.method")
    assert "does not support models with ALiBi" in f.reason


# a model that accepts every string (readout bias 40): one box leaf decides the whole cube
ACCEPTS = _with_bias(random_model(1, 1, 8, kind="softmax", seed=2), 40.0)


def _box_root(**leaf) -> tuple[dict, float, float]:
    """A certificate with one bound leaf (box method) over {0, 1}³ for PARITY, its range the
    kernel's own propagation; fields of ``leaf`` replace the honest ones."""
    z_lo, z_hi = propagate(ACCEPTS, "***", False)[:2]
    assert z_lo > 0
    data = _exhaustive_root(3)
    data["model"] = {"name": ACCEPTS.name, "sha256": ACCEPTS.digest}
    parity = language("parity")
    witness = next(s for s in ("000", "011", "001", "111") if not parity.contains(s))
    data["nodes"][0]["leaf"] = {
        "kind": "bound",
        "method": "box",
        "decision": True,
        "z_range": [z_lo, z_hi],
        "members": "4",
        "right": "4",
        "wrong": "4",
        "witness": witness,
        **leaf,
    }
    data["totals"] = {"right": "4", "wrong": "4", "undecided": "0"}
    return data, z_lo, z_hi


def _failures(data):
    return check(certificate_from_dict(data), ACCEPTS).failures


def test_a_zero_tolerance_accepts_exactly_the_re_derived_range():
    """The tolerance only catches edited files: with tolerance 0 a claim equal to the
    re-derived range is accepted, and one a float above it is not."""
    data, z_lo, z_hi = _box_root()
    data["tolerance"] = 0.0
    assert _failures(data) == ()
    data["nodes"][0]["leaf"]["z_range"] = [z_lo, float(np.nextafter(z_hi, np.inf))]
    f = _failures(data)[0]
    assert (f.claim, f.where) == ("bound", "nodes[0].leaf.z_range")
    assert "is not what the propagation gives" in f.reason and "tolerance 0.0" in f.reason


def test_a_box_leaf_is_re_derived_and_its_counts_follow():
    data, _, _ = _box_root()
    rep = check(certificate_from_dict(data), ACCEPTS)
    assert rep.accepted, rep.summary()
    assert (rep.total, rep.right, rep.wrong, rep.undecided) == (8, 4, 4, 0)
    assert rep.facts == (
        f"model {ACCEPTS.name} ({ACCEPTS.digest[:12]}…), parity, n = 3",
        "1 nodes partition Σ^3: 1 bound, 0 exhaustive, 0 open leaves",
        "right 4, wrong 4, undecided 0 of 2^3 strings",
    )


def test_a_box_leaf_s_range_must_be_sound_and_tight_and_decide():
    data, z_lo, z_hi = _box_root()
    up = z_lo + 0.25 * (z_hi - z_lo)
    data["nodes"][0]["leaf"]["z_range"] = [up, z_hi]
    assert _failures(data) == (
        Failure(
            "bound",
            "nodes[0].leaf.z_range",
            f"claimed [{up!r}, {z_hi!r}] is not sound: re-derived [{z_lo!r}, {z_hi!r}]",
        ),
    )
    wide = z_hi + 1.0
    data["nodes"][0]["leaf"]["z_range"] = [z_lo, wide]
    assert _failures(data) == (
        Failure(
            "bound",
            "nodes[0].leaf.z_range",
            f"claimed {wide!r} is not what the propagation gives ({z_hi!r}, tolerance 1e-06)",
        ),
    )
    data, z_lo, z_hi = _box_root(decision=False)
    assert _failures(data) == (
        Failure(
            "bound",
            "nodes[0].leaf.decision",
            f"the re-derived range [{z_lo!r}, {z_hi!r}] does not give decision False on every "
            "completion",
        ),
    )


def test_a_bound_leaf_s_method_is_checked():
    data, _, _ = _box_root(method="lp")
    assert _failures(data) == (
        Failure("bound", "nodes[0].leaf.method", "'lp': expected 'affine' or 'box'"),
    )
    data, _, _ = _box_root(method="affine")
    assert _failures(data) == (
        Failure("bound", "nodes[0].leaf.base", "the affine method needs its base completion"),
    )


def test_every_false_witness_is_refused_with_its_reason():
    data, _, _ = _box_root(witness=None)
    assert _failures(data) == (
        Failure("witness", "nodes[0].leaf.witness", "a leaf with wrong > 0 needs a witness string"),
    )
    data, _, _ = _box_root(witness="0000")
    assert _failures(data) == (
        Failure("witness", "nodes[0].leaf.witness", "0000… is not a completion of the cube"),
    )
    data, _, _ = _box_root(witness="0x0")
    assert _failures(data) == (Failure("witness", "nodes[0].leaf.witness", "a symbol outside Σ"),)
    member = next(s for s in ("000", "011", "001", "111") if language("parity").contains(s))
    data, _, _ = _box_root(witness=member)  # the model accepts it, rightly
    assert _failures(data) == (
        Failure(
            "witness",
            "nodes[0].leaf.witness",
            f"the model decides True on {member}…, which is right for parity",
        ),
    )


def test_a_witness_contradicting_its_bound_leaf_is_refused(monkeypatch):
    """Defence in depth: were the propagation unsound (here replaced by one claiming every
    logit is in [1, 2] for a model that rejects every string), a witness decided in arb
    against the leaf's decision is still refused."""
    from attncert.kernel.verify import checker as kverify

    rejects = _with_bias(ACCEPTS, -40.0)
    monkeypatch.setattr(kverify, "propagate", lambda *a, **k: (1.0, 2.0, 0.0, None, []))
    member = next(s for s in ("000", "011", "001", "111") if language("parity").contains(s))
    data, _, _ = _box_root(z_range=[1.0, 2.0], witness=member)
    data["model"] = {"name": rejects.name, "sha256": rejects.digest}
    rep = check(certificate_from_dict(data), rejects)
    assert rep.failures == (
        Failure("witness", "nodes[0].leaf.witness", "arb gives decision False, the leaf True"),
    )


def test_an_overflowing_bound_is_a_rejection_naming_the_propagation(monkeypatch):
    from attncert.kernel.core import bounds as B
    from attncert.kernel.verify import checker as kverify

    def overflow(*args, **kwargs):
        raise B.Undecided("a bound overflowed float64")

    monkeypatch.setattr(kverify, "propagate", overflow)
    data, _, _ = _box_root()
    rep = check(certificate_from_dict(data), ACCEPTS)
    assert rep.failures == (
        Failure("arithmetic", "propagation", "undecided: a bound overflowed float64"),
    )
    assert rep.facts == (f"model {ACCEPTS.name} ({ACCEPTS.digest[:12]}…), parity, n = 3",)


def test_counts_beyond_10_to_the_15_are_printed_by_their_leading_digits():
    from attncert.kernel.verify.checker import _short

    assert _short(10**15 - 1) == "999999999999999"
    assert _short(10**15) == "≈1.0000e15"
    assert _short(2**100) == "≈1.2677e30"
    assert _short(3 * 10**400) == "≈3.0000e400"


def _tree(split=1, kids=(("0", 0), ("1", 0))) -> dict:
    """A root split at ``split`` with leaf children (symbol, parent) over {0, 1}³."""
    data = _exhaustive_root(3)
    leaf = data["nodes"][0]["leaf"]
    data["nodes"] = [{"parent": None, "symbol": None, "split": split}] + [
        {"parent": p, "symbol": s, "leaf": dict(leaf)} for s, p in kids
    ]
    return data


def _edited(**fields) -> dict:
    data = _exhaustive_root(3)
    data.update(fields)
    return data


HARD = random_model(1, 1, 8, seed=5)

IDENTITY_AND_TREE = [
    (
        _edited(model={"name": "x", "sha256": "ab" * 32}),
        BASE,
        ("model", "model.sha256", "certificate is for model abababababab…, this model's hash is "),
    ),
    (
        _edited(model={"name": HARD.name, "sha256": HARD.digest}),
        HARD,
        (
            "model",
            "model",
            "layers[0].heads[0] is a leftmost hard-attention head (the soft verifier bounds "
            "softmax heads)",
        ),
    ),
    (_edited(alphabet="ab"), BASE, ("alphabet", "alphabet", "the model's alphabet is '01'")),
    (_edited(language="nosuch"), BASE, ("language", "language", "unknown language 'nosuch'")),
    (
        _edited(language="dyck1"),
        BASE,
        ("language", "language", "dyck1 is over '()', the model over '01'"),
    ),
    (_edited(tolerance=0.01), BASE, ("tolerance", "tolerance", "0.01 is outside [0, 1e-3]")),
    (_edited(nodes=[]), BASE, ("tree", "nodes", "no root")),
    (_tree(split=4), BASE, ("tree", "nodes[0].split", "position 4 is outside 1…3")),
    (
        _tree(kids=(("0", 0), ("1", 2))),
        BASE,
        ("tree", "nodes[2].parent", "2: expected an earlier node"),
    ),
    (_tree(kids=(("0", 0), ("1", 1))), BASE, ("tree", "nodes[2].parent", "node 1 is a leaf")),
    (
        _tree(kids=(("0", 0), ("x", 0))),
        BASE,
        ("tree", "nodes[2].symbol", "'x' is not a symbol of Σ"),
    ),
    (
        _tree(kids=(("0", 0), ("0", 0))),
        BASE,
        (
            "tree",
            "nodes[0]",
            "its children carry the symbols ['0', '0']: each of ['0', '1'] exactly once is "
            "needed for a partition",
        ),
    ),
]


@pytest.mark.parametrize(("data", "model", "want"), IDENTITY_AND_TREE)
def test_identity_and_tree_refusals_are_exact(data, model, want):
    rep = check(certificate_from_dict(data), model)
    assert len(rep.failures) == 1 and not rep.accepted
    f = rep.failures[0]
    assert (f.claim, f.where) == want[:2]
    if want[0] == "model" and want[1] == "model.sha256":  # the model's own hash follows
        assert f.reason == want[2] + f"{model.digest[:12]}…"
    else:
        assert f.reason == want[2]


def test_a_root_with_a_symbol_or_both_split_and_leaf_is_refused():
    data = _exhaustive_root(3)
    data["nodes"][0]["symbol"] = "0"
    assert _failures_of(data) == (
        Failure("tree", "nodes[0]", "the root has no parent and no symbol"),
    )
    data = _exhaustive_root(3)
    data["nodes"][0]["split"] = 1
    assert _failures_of(data) == (
        Failure("tree", "nodes[0]", "a node is either split (internal) or a leaf"),
    )


def _failures_of(data):
    return check(certificate_from_dict(data), BASE).failures
