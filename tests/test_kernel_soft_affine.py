"""Affine-form restriction bounds (attncert.kernel.soft.affine.forms, attncert.kernel.soft.affine.bound):
the certified range contains the logit of every completion — brute force over all
completions on trained, random and version-2 models (LayerNorm pre/post, GELU, tanh-GELU,
ReLU, causal masks, BOS/EOS, first/last/mean readouts, |Σ| = 3, one to three layers),
and the rigorous forward pass at the extremes —; restrictions found with it are accepted
by the kernel, and every edit of an affine restriction claim is rejected with a reason."""

from __future__ import annotations

import copy
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from flint import ctx

from attncert.arith.field import field_for
from attncert.kernel.core import trace
from attncert.kernel.soft import checker as K
from attncert.kernel.soft.affine import forms as A
from attncert.kernel.soft.affine.bound import Unsupported, applicable, restriction_range
from attncert.model import forward, random_model, zoo_model
from attncert.model.spec import Mask
from attncert.soft.certified.certify import certify_soft
from attncert.soft.certified.restriction import search_restriction

sys.path.insert(0, str(Path(__file__).parent))
from test_model_v2 import v2_model

__implements__ = ("Hahn Theorem 6",)


def _completions(model, rho, base, limit=1024, seed=0):
    free = [i for i, c in enumerate(rho) if c == "*"]
    out = []
    if len(model.alphabet) ** len(free) <= limit:
        for syms in itertools.product(model.alphabet, repeat=len(free)):
            s = list(base)
            for i, c in zip(free, syms, strict=True):
                s[i] = c
            out.append("".join(s))
        return out, True
    rng = np.random.default_rng(seed)
    for _ in range(limit):
        s = list(base)
        for i in free:
            s[i] = rng.choice(list(model.alphabet))
        out.append("".join(s))
    return out, False


def _precise_logit(model, s, prec=256):
    """The logit's enclosure by the kernel's rigorous pass at ``prec`` bits."""
    with ctx.workprec(prec):
        tr = trace._forward(model, model.encode(s), field_for(False, prec))
    return tr.logit_interval()


def _check_sound(model, n, n_free, seed):
    rng = np.random.default_rng(seed)
    base = "".join(rng.choice(list(model.alphabet), n))
    free = rng.permutation(n)[:n_free]
    rho = "".join("*" if i in set(free.tolist()) else c for i, c in enumerate(base))
    got = restriction_range(model, rho, base)
    strings, exhaustive = _completions(model, rho, base)
    z = np.concatenate(
        [
            forward(model, strings[k : k + 256], keep_attention=False).logits
            for k in range(0, len(strings), 256)
        ]
    )
    assert got.z_lo - 1e-9 <= z.min() and z.max() <= got.z_hi + 1e-9, (
        model.name,
        rho,
        got,
        z.min(),
        z.max(),
    )
    # exactly: the rigorous pass (arb at 256 bits) at the float extremes lies inside
    for s in (strings[int(np.argmin(z))], strings[int(np.argmax(z))]):
        lo, hi = _precise_logit(model, s)
        assert got.z_lo <= lo and hi <= got.z_hi, (float(lo), float(hi), got)
    return got, z, exhaustive


MODELS = {
    "trained_parity": lambda: zoo_model("trained_parity"),
    "trained_majority": lambda: zoo_model("trained_majority"),
    "trained_dyck1": lambda: zoo_model("trained_dyck1"),
    "trained_first_last": lambda: zoo_model("trained_first_last"),
    "soft_parity_lm": lambda: zoo_model("soft_parity_lm"),
    "v2 pre-norm gelu, mean readout": lambda: v2_model(0),
    "v2 post-norm relu, last": lambda: v2_model(
        1, norm_position="post", activation="relu", readout="last"
    ),
    "v2 tanh-gelu, first": lambda: v2_model(2, activation="gelu_tanh", readout="first"),
    "1 layer, bos": lambda: random_model(1, 2, 8, kind="softmax", seed=5, bos="B"),
    "3 layers, causal, |Σ|=3": lambda: random_model(
        3, 1, 6, kind="softmax", seed=4, alphabet="abc", mask=Mask.FUTURE
    ),
    "2 layers, eos, strict mask": lambda: random_model(
        2, 2, 6, kind="softmax", seed=7, eos="E", mask=Mask.FUTURE_STRICT
    ),
}


def _free_count(model, wanted: int) -> int:
    """At most ``wanted`` free positions with ≤ 1024 completions (exhaustive)."""
    k = len(model.alphabet)
    return min(wanted, int(np.floor(np.log(1024) / np.log(k) + 1e-9)))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_the_affine_range_contains_every_completion(name):
    model = MODELS[name]()
    _, _, exhaustive = _check_sound(model, 40, _free_count(model, 8), seed=1)
    assert exhaustive


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_the_affine_range_contains_every_completion_sweep(name):
    model = MODELS[name]()
    for seed in range(4):
        for n, n_free in ((12, 3), (40, 6), (64, 10), (128, 10)):
            _, _, exhaustive = _check_sound(model, n, _free_count(model, n_free), seed)
            assert exhaustive


@pytest.mark.slow
def test_the_range_is_tight_where_the_model_is_near_constant():
    m = zoo_model("trained_parity")
    base = "1" * 200
    rho = "".join("*" if i % 10 == 3 else c for i, c in enumerate(base))  # 20 free
    got = restriction_range(m, rho, base)
    strings, _ = _completions(m, rho, base, limit=300)
    z = forward(m, strings, keep_attention=False).logits
    assert got.decision is True and got.boxed == 0
    # within a factor 4 of the sampled spread (brute force is 2^20 strings)
    assert got.z_hi - got.z_lo < 4 * (z.max() - z.min()) + 0.05


def test_a_binary_choice_is_centred():
    g = np.array([[[[2.0], [-4.0]]]])  # one row, one coordinate, two free positions
    assert A.gdev(g)[0, 0] >= 3.0 and A.gdev(g)[0, 0] < 3.0 + 1e-12  # ½·2 + ½·4
    f = A.Form(np.array([[1.0]]), g, np.zeros((1, 1, 0)), np.zeros((1, 1)))
    lo, hi = A.bounds(f)
    assert lo[0, 0] <= -2.0 and hi[0, 0] >= 4.0 and hi[0, 0] - lo[0, 0] < 6.0 + 1e-12


def test_three_symbols_use_all_choices():
    # one free position, A = 2 alternatives: values −(a+b)/3, a − (a+b)/3, b − (a+b)/3
    g = np.array([[[[3.0, 6.0]]]])
    neg, pos = A.neg_pos(g)
    assert neg[0, 0] >= 3.0 and pos[0, 0] >= 3.0 and neg[0, 0] < 3.0 + 1e-9


def test_unsupported_models_are_refused_with_the_reason():
    assert "hard-attention head" in (applicable(random_model(2, 2, 8, seed=0), 16) or "")
    with pytest.raises(Unsupported, match="hard-attention head"):
        restriction_range(random_model(1, 1, 4, seed=0), "0*0", "000")
    # a deep model with every row a query beyond the budget
    assert "budget" in (applicable(random_model(3, 2, 16, kind="softmax", seed=0), 1 << 14) or "")


def test_a_candidate_beyond_the_budget_is_not_certified_and_does_not_stop_the_search():
    """The search's oracle turns Unsupported (the work budget, reached as more positions
    are freed) into "not certified", as it does an overflow; it never certifies it."""
    from attncert.soft.certified.restriction import certify

    deep = random_model(3, 2, 16, kind="softmax", seed=0)
    n = 1 << 14
    with pytest.raises(Unsupported, match="budget"):
        restriction_range(deep, "*" * n, "0" * n)
    decision, rng = certify(deep, "*" * n, "affine", "0" * n)
    assert decision is None and rng.z_lo == -np.inf and rng.z_hi == np.inf


@pytest.fixture(scope="module")
def parity_restriction():
    m = zoo_model("trained_parity")
    found = search_restriction(m, "1" * 64, time_limit=15, method="affine")  # 22 free
    assert found is not None and found.method == "affine"
    return m, found


@pytest.mark.slow
def test_a_search_on_the_trained_parity_model_frees_many_positions(parity_restriction):
    m, found = parity_restriction
    assert found.free >= 16 and found.decision is True and found.z_lo > 0
    strings, _ = _completions(m, found.rho, found.base, limit=400)
    z = forward(m, strings, keep_attention=False).logits
    assert (z > found.z_lo - 1e-9).all() and (z < found.z_hi + 1e-9).all()


@pytest.fixture(scope="module")
def affine_cert():
    m = zoo_model("trained_parity")
    out = certify_soft(m, 32, restriction=True, time_limit=12, restriction_method="affine")
    assert out.check.accepted, out.check.summary()
    data = out.certificate.to_dict()
    assert data["restriction"]["method"] == "affine" and data["restriction"]["free"] > 0
    assert data["pair"] is not None and out.verdict == "CERTIFIED"
    return m, data


@pytest.mark.slow
def test_the_kernel_re_derives_an_affine_restriction(affine_cert):
    m, data = affine_cert
    rep = K.check(data, m)
    assert rep.accepted and "affine propagation" in rep.summary()


def _not_a_completion(rest):
    rho, base = rest["rho"], rest["base"]
    i = next(k for k, c in enumerate(rho) if c != "*")
    return base[:i] + ("0" if base[i] == "1" else "1") + base[i + 1 :]


def _other_completion(rest):
    rho, base = rest["rho"], rest["base"]
    i = rho.index("*")
    return base[:i] + ("0" if base[i] == "1" else "1") + base[i + 1 :]


EDITS = [
    (
        "base not a completion",
        lambda r: r.__setitem__("base", _not_a_completion(r)),
        "differs from ρ",
    ),
    (
        "another completion as base",
        lambda r: r.__setitem__("base", _other_completion(r)),
        "not what the propagation gives",
    ),
    (
        "an unknown method",
        lambda r: r.__setitem__("method", "zonotope"),
        "expected 'box' or 'affine'",
    ),
    (
        "a narrower range",
        lambda r: r.__setitem__("z_range", [r["z_range"][0] + 0.01, r["z_range"][1]]),
        "not sound",
    ),
    (
        "one more free position",
        lambda r: r.__setitem__("rho", r["rho"].replace("1", "*", 1)),
        "restriction",
    ),
    ("the other decision", lambda r: r.__setitem__("decision", not r["decision"]), "decision"),
    ("a missing base", lambda r: r.pop("base"), "base"),
]


@pytest.mark.parametrize(("what", "edit", "match"), EDITS, ids=[e[0] for e in EDITS])
def test_every_edit_of_an_affine_claim_is_rejected(affine_cert, what, edit, match):
    m, data = affine_cert
    bad = copy.deepcopy(data)
    bad["sensitivity"], bad["pair"] = [], None  # checked elsewhere; only the restriction here
    assert K.check(bad, m).accepted
    edit(bad["restriction"])
    rep = K.check(bad, m)
    assert not rep.accepted, what
    assert "restriction" in rep.summary() and match in rep.summary(), rep.summary()
