"""The soft-certificate checker (attncert.kernel.soft.checker), pinned where a mutation
survived (issue 34): the place named for a malformed pair decision or a missing method, the
PARITY floor's refusal, the 2-Dyck floor at lengths below 2, and a model kind the
propagation does not support."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
from flint import arb

from attncert.certificates.soft import FloorClaim
from attncert.kernel.core.failure import Failure
from attncert.kernel.soft import checker as K
from attncert.model import random_model
from attncert.model.decoders import random_decoder
from attncert.model.zoo import zoo_model

sys.path.insert(0, str(Path(__file__).parent))
import test_kernel_soft as older


@pytest.fixture(scope="module")
def cert():
    out = older.certify_soft(zoo_model("soft_parity_lm"), 24, restriction=True, time_limit=30)
    assert out.check.accepted
    data = out.certificate.to_dict()
    assert data["pair"] is not None
    return data


def _first(data, model=None) -> Failure:
    report = K.check(data, model or zoo_model("soft_parity_lm"))
    assert not report.accepted
    return report.failures[0]


def test_a_pair_decision_that_is_not_a_boolean_is_a_format_failure_of_the_pair(cert):
    """Kills ``x__check_pair__mutmut_104`` (the field's place misnamed)."""
    data = copy.deepcopy(cert)
    data["pair"]["decision"] = "yes"
    assert _first(data) == Failure("format", "pair", "field 'decision' has the wrong type str")


def test_a_missing_method_is_a_format_failure_of_the_method(cert):
    """Kills ``x_check__mutmut_130`` (the field's place misnamed)."""
    data = copy.deepcopy(cert)
    del data["method"]
    assert _first(data) == Failure("format", "method", "missing field 'method'")


def test_the_parity_floor_is_refused_outside_its_readout_and_alphabet():
    """Kills ``x__floor_applies__mutmut_19`` (the refusal's text changed)."""
    text = "the PARITY floor needs the accept readout of a model over {0, 1}"
    sp = zoo_model("soft_parity_lm")
    parity = FloorClaim("parity", 0.0)
    assert K._floor_applies(parity, ("0", "1"), sp) == text
    assert K._floor_applies(parity, "accept", sp) is None
    other = random_model(1, 1, 4, kind="softmax", alphabet="ab", seed=0)
    assert K._floor_applies(parity, "accept", other) == text


@pytest.mark.parametrize("n", [0, 1])
def test_no_prefix_shorter_than_two_is_unbalanced_and_ends_with_a_closer(n):
    """In the 2-Dyck PCFG the first symbol is an opener (at height 0 the chain only goes up
    or stops), so P(U_n) = 0 for n < 2, and a floor of 0 nats with P(U_n) = 0 is what B
    gives. Kills ``x__unbalanced__mutmut_4`` (P(U_n) = 1 there)."""
    pa = arb(1) / 3
    assert K._unbalanced(pa, n) == 0
    floor = FloorClaim("dyck2-bracket-type", 0.0, p="1/3", p_u=0.0)
    assert K._check_floor(floor, 1.0, n, 1e-6) is None
    assert 0 < K._unbalanced(pa, 3) < 1  # "(()": unbalanced, ends with a closer


def test_a_model_kind_the_propagation_does_not_support_is_refused_first():
    """An ALiBi decoder: refused by name before any field of the certificate is read.
    Kills ``x_check__mutmut_78`` (the supported kinds refused instead)."""
    model = random_decoder(1, 1, 4, positions="alibi", norm="layer", mlp="gelu", seed=0)
    assert model.new_kinds == ("ALiBi",)
    data = {"format": K.FORMAT, "version": K.VERSION, "model": {"sha256": model.digest}}
    assert _first(data, model) == Failure(
        "model", "model", "the soft checker's propagation does not support models with ALiBi"
    )
    rms = random_decoder(1, 1, 4, positions="none", norm="rms", mlp="gelu", seed=0)
    assert rms.new_kinds == ("RMSNorm",)
    data = {"format": K.FORMAT, "version": K.VERSION, "model": {"sha256": rms.digest}}
    assert _first(data, rms) == Failure("format", "n", "missing field 'n'")
