"""The length-uniform checker's messages (:mod:`attncert.kernel.uniform.checker`) where the
tampering table of ``test_soft_uniform_kernel.py`` checks only a word: an edited range cap
is named in the reason exactly (issue 34: mutation score)."""

from __future__ import annotations

from test_soft_uniform_decoders import SHAPES, _decoder

from attncert.kernel.uniform import checker as KU
from attncert.soft.certified.uniform import certify_uniform


def test_an_unsound_range_cap_is_named_with_both_values():
    model = _decoder(SHAPES[0])
    cert = dict(certify_uniform(model, 4, bins=2).certificate)
    derived = cert["cap"]
    cert["cap"] = derived / 2
    report = KU.check(cert, model)
    assert not report.accepted
    f = report.failures[0]
    assert (f.claim, f.where) == ("cap", "cap")
    assert f.reason.startswith("claimed range cap Z ") and "is not sound: re-derived" in f.reason
