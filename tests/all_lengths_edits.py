"""Shared by the all-length checker's kill tests: an edited certificate (or a replaced
model) must be rejected, and the first failure is what the test pins."""

from __future__ import annotations

import copy

from attncert.certificates.all_lengths import certificate_from_dict
from attncert.kernel.all_lengths import checker as K
from attncert.prove.all_lengths_certificate import certificate_to_dict


def first_failure(model, cert, edit=None, new_model=None):
    """The kernel's first failure on ``cert`` after ``edit`` (a function of its dict),
    checked against ``new_model`` (its hash written into the certificate) when given."""
    d = copy.deepcopy(certificate_to_dict(cert))
    if edit is not None:
        edit(d)
    if new_model is not None:
        d["model"]["sha256"] = new_model.digest
        model = new_model
    rep = K.check(certificate_from_dict(d), model)
    assert not rep.accepted
    return rep.failures[0]
