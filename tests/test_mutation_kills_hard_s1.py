"""The S1 statements on a certified instance (hard/s1_instance, kernel/hard/s1 before issue
41), pinned where a mutation survived (issue 34): the exact wording of the quoted results
and the layer of Theorem 1."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from attncert.certificates.hard import Certificate
from attncert.hard.pipeline import certify
from attncert.hard.s1_instance import s1_statements
from attncert.kernel.hard.checker import check
from attncert.model import random_model
from attncert.model.exact import forward_exact
from attncert.restriction import Restriction


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


def test_lemma_17s_range_is_sigma_to_the_c_times_c_over_eta_c(certified):
    from fractions import Fraction

    model, cert = certified
    st = s1_statements(cert, model)
    sigma, n = len(cert.restrictions[0].symbols), cert.n
    eta, k = Fraction(str(cert.trace["eta"])), int(cert.trace["k"])
    checked = 0
    for s in st:
        if s.statement != "S1 Lemma 17" or "(17.1, eq. (12))" not in s.asserts:
            continue
        (d2,) = [t for t in st if t.statement == "S1 Definition 2" and t.layer == s.layer]
        c = int(d2.value.removeprefix("c = "))
        C = Fraction(cert.restrictions[s.layer - 1].num_free, n)
        need = sigma**c * c / (eta * C)
        note = f"; outside the lemma's range (k = {k} < |Σ|^c c/(ηC) = {float(need):.4g})"
        assert s.asserts.endswith(note if k < need else "eq. (12))")
        checked += 1
    assert checked >= 1


def test_eq_6_holds_at_the_bound_with_three_inputs():
    """Two layers, n = 3, every input free, every claim the full set (true: accepted). At
    layer 2, c = 3 and some layer-1 activation takes all |Σ|^c = 8 values (by the exact
    forward pass on the 8 strings): eq. (6) holds with equality. Kills
    ``x__derive__mutmut_149`` (the bound |Σ|^c read as |Σ|·c = 6, which 8 values exceed;
    with c ≤ 2 and |Σ| = 2 the two agree)."""
    n = 3
    model = random_model(2, 2, 8, seed=1)
    free = Restriction(("0", "1"), (None,) * n, ("0", "1"))
    everything = tuple(range(n))
    n_tok = model.n_tokens(n)
    cert = Certificate(
        model_sha256=model.digest,
        model_name=model.name,
        n=n,
        alphabet=model.alphabet,
        restrictions=(free,) * 3,
        dependency_sets=((everything,) * n_tok,) * 2,
        output_position=model.readout.index(n_tok),
        output_dependency=everything,
    )
    assert check(cert, model).accepted
    layer1 = [
        forward_exact(model, "".join(s)).layers[0].output for s in itertools.product("01", repeat=n)
    ]
    distinct = max(
        len({tuple(out[i, j] for j in range(model.d)) for out in layer1}) for i in range(n_tok)
    )
    assert distinct == 8
    st = s1_statements(cert, model)
    (d2,) = [s for s in st if s.statement == "S1 Definition 2" and s.layer == 2]
    (eq6,) = [s for s in st if s.statement == "S1 eq. (6)" and s.layer == 2]
    assert d2.value == "c = 3"
    assert (eq6.value, eq6.bound, eq6.status) == ("8 values", "|Σ|^c = 8", "holds")
