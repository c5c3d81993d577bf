"""The S1 statements of the hard kernel (kernel/hard/s1), pinned where a mutation survived
(issue 34): the exact wording of the quoted results and the layer of Theorem 1."""

from __future__ import annotations

import dataclasses

import pytest

from attncert.hard.pipeline import certify
from attncert.kernel.hard.s1 import s1_statements
from attncert.model import random_model


@pytest.fixture(scope="module")
def certified():
    model = random_model(2, 2, 16, seed=0)
    return model, certify(model, n=128, language="parity")


def test_quoted_results_have_their_exact_wording(certified):
    model, cert = certified
    big = dataclasses.replace(cert, trace={**cert.trace, "k": 10**9})  # inside 17's range
    st = s1_statements(big, model)
    texts = {(s.statement, s.asserts) for s in st}
    assert ("S1 eq. (6)", "an activation of ≤ c inputs takes ≤ |Σ|^c values") in texts
    assert ("S1 Lemma 17", "#free(σ₂) ≥ (1−2η)Cn  (17.1, eq. (12))") in texts
    assert (
        "S1 Lemma 21",
        "P(X₀) ≤ exp(−δ²q(1−2η)Cn/3) (Chernoff; δ ≤ 1 assumed there)",
    ) in texts
    (thm,) = [s for s in st if s.statement == "S1 Theorem 1"]
    assert thm.layer == 0 and thm.status == "holds"
