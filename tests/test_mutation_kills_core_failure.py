"""How a checker rejects (:mod:`attncert.kernel.core.failure`): the exact text of a failure,
a report's summary, the exception that carries a failure and the set notation of positions
(issue 34: the mutation score of the kernel's shared core)."""

from __future__ import annotations

import pytest

from attncert.kernel.core.failure import CheckReport, Failure, _fail, _fmt, _Reject


def test_a_failure_reads_claim_place_and_reason():
    assert str(Failure("output", "string 3", "the logit is negative")) == (
        "output (string 3): the logit is negative"
    )


def test_a_report_summarises_its_facts_or_its_failures():
    ok = CheckReport(True, (), ("B(n) ≤ 1/4", "floor 0.1"))
    assert ok.summary() == "CHECKED: B(n) ≤ 1/4; floor 0.1"
    bad = CheckReport(False, (Failure("a", "b", "c"), Failure("d", "e", "f")), ("ignored",))
    assert bad.summary() == "REJECTED: a (b): c; d (e): f"
    assert CheckReport(False, (Failure("x", "y", "z"),), ()).summary() == "REJECTED: x (y): z"


def test_fail_raises_the_failure_it_was_given():
    with pytest.raises(_Reject) as caught:
        _fail("model", "layer 2", "no such head")
    assert caught.value.failure == Failure("model", "layer 2", "no such head")
    assert str(caught.value) == "model (layer 2): no such head"
    assert caught.value.args == ("model (layer 2): no such head",)


def test_positions_are_printed_one_based_and_sorted():
    assert _fmt({4, 0, 2}) == "{1, 3, 5}"
    assert _fmt([]) == "{}"
    assert _fmt((7,)) == "{8}"
