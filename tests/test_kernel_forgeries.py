"""Forged certificates (issue 41, item 4): hypothesis picks *which* claimed number to move
and *how far* inward — from one unit in the last place to just under the certificate's
tolerance past the number the kernel re-derives — keeps every other field consistent, and
the kernel must refuse it naming the field. The same field set exactly to the re-derived
number is accepted (the edge from the other side).

A claim is *sound* on one side of the re-derived number: an upper bound (K, K_tokens, a
one-key constant, a change coefficient, a box width, a range's upper end, B(n)) may not
lie below it, a lower end not above it. A forgery puts it on the wrong side; no tolerance
may let it through.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attncert.certificates.verify import certificate_from_dict
from attncert.kernel.soft import checker as KS
from attncert.kernel.soft.propagate import propagate
from attncert.kernel.uniform import checker as KU
from attncert.kernel.uniform import dyadic as Q
from attncert.kernel.verify.checker import check as check_tree
from attncert.model import random_model, zoo_model
from attncert.soft.certified.uniform import certify_uniform

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _past(x: float, side: str, ulps: int) -> float:
    """``ulps`` floats past ``x`` on the unsound side (below for an upper bound)."""
    step = -np.inf if side == "up" else np.inf
    for _ in range(ulps):
        x = float(np.nextafter(x, step))
    return x


# ----- length-uniform certificates (Lemma 5 for every n ≥ N₀) --------------------------------


@pytest.fixture(scope="module")
def uniform():
    model = zoo_model("soft_parity")
    u = certify_uniform(model, 64, bins=1, floor_at=(64,))
    assert u.check.accepted
    return model, u.certificate, KU.derive(model, 64, 1)


#: (path in the certificate, kind, side): "up" claims are upper bounds
UNIFORM_FIELDS = (
    (("cases", 0, "heads", 0, "one_key"), "dyadic", "up"),
    (("cases", 1, "heads", 1, "one_key"), "dyadic", "up"),
    (("cases", 0, "steps", 1, "other"), "dyadic", "up"),
    (("cases", 1, "steps", 3, "other"), "dyadic", "up"),
    (("cases", 0, "steps", 1, "width"), "float", "up"),
    (("cases", 0, "per_symbol", 0, "K_tokens"), "dyadic", "up"),
    (("cases", 1, "per_symbol", 0, "K"), "dyadic", "up"),
    (("cases", 0, "per_symbol", 0, "z_range", 1), "float", "up"),
    (("cases", 1, "per_symbol", 0, "z_range", 0), "float", "down"),
    (("K",), "dyadic", "up"),
    (("cap",), "float", "up"),
)


def _get(d, path):
    for k in path:
        d = d[k]
    return d


def _set(d, path, value):
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


def _consistent(data: dict) -> dict:
    """Recompute what follows from K and Z (n* and the floor) so that only the forged
    number itself can be refused."""
    k, cap = Q.parse(data["K"]), Fraction(data["cap"])
    data["nontrivial_from"] = str(KU.nontrivial_from(k, cap, data["n0"]))
    data["floor"]["at"] = [{"n": 64, "nats": KU.parity_floor(k, cap, 64)}]
    return data


@SETTINGS
@given(
    field=st.sampled_from(UNIFORM_FIELDS),
    ulps=st.integers(1, 64),
    bits=st.integers(12, 53),
)
def test_a_uniform_claim_moved_past_the_re_derived_number_is_refused(uniform, field, ulps, bits):
    model, cert, derived = uniform
    path, kind, side = field
    data = json.loads(json.dumps(cert))
    data["tolerance"] = 1e-3
    want = _get(derived, path)
    if kind == "dyadic":
        # ``ulps`` units of the 53-bit mantissa below (the format's smallest steps), or a
        # relative 2^-bits below, whichever is larger: always inside the tolerance 10⁻³
        q = Q.parse(want)
        forged = Q.text(_dyadic_below(q, max(ulps, 2 ** max(0, 53 - bits))))
    else:
        forged = _past(float(want), side, ulps)
    _set(data, path, forged)
    rep = KU.check(_consistent(data), model)
    assert not rep.accepted, (path, forged, want)
    f = rep.failures[0]
    assert "not sound" in f.reason, f
    name = next(p for p in reversed(path) if isinstance(p, str))
    assert name in f.where or (name == "cap" and f.where == "cap"), f


def _dyadic_below(q: Fraction, units: int) -> Fraction:
    """q minus ``units`` units in the last place of its 53-bit mantissa (q ≥ 2^-1000)."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    return q - units * Fraction(2) ** (e - 52)


@pytest.mark.parametrize("field", UNIFORM_FIELDS, ids=lambda f: ".".join(map(str, f[0])))
def test_a_uniform_claim_at_the_re_derived_number_is_accepted(uniform, field):
    model, cert, derived = uniform
    path, _, _ = field
    data = json.loads(json.dumps(cert))
    data["tolerance"] = 1e-3
    _set(data, path, _get(derived, path))
    rep = KU.check(_consistent(data), model)
    assert rep.accepted, rep.summary()


# ----- soft certificates (B(n) at one n, a restriction) -----------------------------------------

SOFT = random_model(1, 1, 8, kind="softmax", seed=5)


def _soft_cert(model, n: int) -> dict:
    """An honest soft certificate with one sensitivity claim, its numbers the kernel's own
    (read back from a first check)."""
    from attncert.soft.certified.certify import certify_soft

    out = certify_soft(model, n)
    assert out.check.accepted
    return json.loads(out.certificate.to_json())


@pytest.fixture(scope="module")
def soft():
    data = _soft_cert(SOFT, 6)
    rep = KS.check(data, SOFT)
    return data, rep.widths


@SETTINGS
@given(which=st.sampled_from(("entry", "total")), ulps=st.integers(1, 4096))
def test_a_soft_bound_below_the_re_derived_one_is_refused(soft, which, ulps):
    data, widths = soft
    data = json.loads(json.dumps(data))
    data["method"]["tolerance"] = 1e-3
    k = int(np.argmax([min(w, c) for w, c in widths]))
    derived = min(widths[k])
    forged = _past(derived, "up", ulps)
    sens = data["sensitivity"][0]
    if which == "entry":
        sens["per_symbol"][k]["bound"] = forged
    else:
        for e in sens["per_symbol"]:
            e["bound"] = min(e["bound"], derived)
        sens["bound"] = forged
    rep = KS.check(data, SOFT)
    assert not rep.accepted
    assert "is not sound" in rep.failures[0].reason, rep.failures


def test_a_soft_bound_at_the_re_derived_one_is_accepted(soft):
    data, widths = soft
    data = json.loads(json.dumps(data))
    data["method"]["tolerance"] = 1e-3
    sens = data["sensitivity"][0]
    for e, wc in zip(sens["per_symbol"], widths, strict=True):
        e["bound"] = min(wc)
    sens["bound"] = max(min(wc) for wc in widths)
    assert KS.check(data, SOFT).accepted


# ----- verification trees ----------------------------------------------------------------------


def _accepting():
    import dataclasses

    m = random_model(1, 1, 8, kind="softmax", seed=2)
    return dataclasses.replace(m, readout=dataclasses.replace(m.readout, bias=40.0))


TREE_MODEL = _accepting()


def _tree(z_range, **leaf) -> dict:
    return {
        "format": "attncert-verify-certificate",
        "version": 1,
        "model": {"name": TREE_MODEL.name, "sha256": TREE_MODEL.digest},
        "language": "parity",
        "n": 3,
        "alphabet": "01",
        "tolerance": 1e-3,
        "nodes": [
            {
                "parent": None,
                "symbol": None,
                "leaf": {
                    "kind": "bound",
                    "method": "box",
                    "decision": True,
                    "z_range": list(z_range),
                    "members": "4",
                    "right": "4",
                    "wrong": "4",
                    "witness": "001",
                    **leaf,
                },
            }
        ],
        "totals": {"right": "4", "wrong": "4", "undecided": "0"},
    }


@SETTINGS
@given(end=st.sampled_from((0, 1)), ulps=st.integers(1, 4096))
def test_a_tree_leaf_range_inside_the_re_derived_one_is_refused(end, ulps):
    z = list(propagate(TREE_MODEL, "***", False)[:2])
    assert check_tree(certificate_from_dict(_tree(z)), TREE_MODEL).accepted
    z[end] = _past(z[end], "down" if end == 0 else "up", ulps)
    rep = check_tree(certificate_from_dict(_tree(z)), TREE_MODEL)
    assert [f.where for f in rep.failures] == ["nodes[0].leaf.z_range"]
    assert "is not sound" in rep.failures[0].reason


@SETTINGS
@given(field=st.sampled_from(("members", "right", "wrong")), delta=st.sampled_from((-1, 1)))
def test_a_count_one_off_is_refused(field, delta):
    z = propagate(TREE_MODEL, "***", False)[:2]
    data = _tree(z)
    leaf = data["nodes"][0]["leaf"]
    leaf[field] = str(int(leaf[field]) + delta)
    if field != "members":  # keep the totals consistent with the forged leaf
        data["totals"][field] = leaf[field]
    rep = check_tree(certificate_from_dict(data), TREE_MODEL)
    assert not rep.accepted and rep.failures[0].claim == "counts", rep.failures
