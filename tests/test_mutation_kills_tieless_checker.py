"""Theorem 26's all-length checker (kernel/tieless/checker), pinned where a mutation
survived (issue 34): the reasons of two refusals — a section that is not a tieless proof,
and an enclosure that is not finite."""

from __future__ import annotations

import pytest
from flint import arb

from attncert.kernel.tieless.checker import PROOF_KIND, Reject, check, up
from attncert.model import zoo_model


def test_a_section_of_another_kind_is_refused_by_name():
    rep = check({"kind": "something else", "n0_tokens": 4}, zoo_model("dyck2_program"))
    assert not rep.accepted
    assert rep.failures[0] == f"all_lengths: not a {PROOF_KIND!r} object"


def test_an_infinite_enclosure_has_no_upper_endpoint():
    with pytest.raises(Reject) as err:
        up(arb("inf"))
    assert err.value.field == "arithmetic"
    assert err.value.reason.startswith("an enclosure is not finite (")
    assert up(arb(3)) == 3
