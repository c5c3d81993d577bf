"""The trusted hard-attention checker (attncert.kernel.hard.checker) names the place and the
reason of two rejections the tamper tests left unchecked: a wrong decision position, and a
misclassified string whose rigorous decision is still undecided at the precision cap
(issue 34: mutation score)."""

from __future__ import annotations

import dataclasses

import pytest

from attncert.arith.field import Undecided
from attncert.hard.pipeline import certify
from attncert.kernel.core.failure import Failure
from attncert.kernel.hard import checker as hard
from attncert.kernel.hard.checker import check
from attncert.kernel.hard.decide import decide
from attncert.model import random_model


@pytest.fixture(scope="module")
def instance():
    model = random_model(2, 2, 16, seed=0)
    cert = certify(model, n=32, language="parity")
    assert cert.misclassified is not None
    return model, cert


def test_a_wrong_decision_position_is_rejected_with_both_positions(instance):
    """Kills ``x__check_identity__mutmut_146`` (the reason replaced by None)."""
    model, cert = instance
    real = model.readout.index(model.n_tokens(cert.n))
    assert cert.output_position == real
    report = check(dataclasses.replace(cert, output_position=real - 1), model)
    assert not report.accepted
    assert report.failures == (
        Failure("output", "output.position", f"decision position is {real}, not {real - 1}"),
    )


def test_an_undecided_misclassified_string_is_rejected_at_that_string(instance, monkeypatch):
    """The second misclassified string's forward pass stays undecided at the cap: the
    rejection names ``strings[1]`` and keeps the arithmetic's message. Kills
    ``x__check_misclassified__mutmut_101`` (the place dropped from the failure)."""
    model, cert = instance
    second = cert.misclassified.strings[1]
    assert second != cert.misclassified.strings[0]

    def undecided_on_second(m, s):
        if s == second:
            raise Undecided("a score comparison is still undecided at 4096 bits")
        return decide(m, s)

    monkeypatch.setattr(hard, "decide", undecided_on_second)
    report = check(cert, model)
    assert not report.accepted
    assert report.failures == (
        Failure(
            "misclassified", "strings[1]", "a score comparison is still undecided at 4096 bits"
        ),
    )
