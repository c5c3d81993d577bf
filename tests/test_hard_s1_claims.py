"""Issue 16 item 1 (search side): every S1 statement of Hahn's formal proof, stated with its
number on the instance the search certifies, in the certify JSON trace."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from attncert.hard.pipeline import _restrict_all, certify
from attncert.hard.restriction import Restriction
from attncert.hard.s1_claims import LayerStages, S1Claim, layer_claims, statements
from attncert.hard.s1_stage3 import event_probability
from attncert.hard.search.ranking import rank_tuples
from attncert.hard.stages import _unsatisfied, dependency_c
from attncert.hard.tables import initial_tables
from attncert.model import random_model, zoo_model
from attncert.paper import implements

__implements__ = (
    "Hahn eq. (5)",
    "Hahn eq. (6)",
    "Hahn S1 Definition 2",
    "Hahn S1 Definition 3",
    "Hahn S1 Lemma 4",
    "Hahn S1 Definition 5",
    "Hahn S1 eq. (2)",
    "Hahn S1 eq. (3)",
    "Hahn S1 eq. (5)",
    "Hahn S1 eq. (7)",
    "Hahn S1 eq. (8)",
    "Hahn S1 eq. (9)",
    "Hahn S1 eq. (10)",
    "Hahn S1 eq. (11)",
    "Hahn S1 eq. (12)",
    "Hahn S1 eq. (13)",
    "Hahn S1 eq. (16)",
    "Hahn S1 eq. (17)",
    "Hahn S1 eq. (18)",
    "Hahn S1 eq. (19)",
    "Hahn S1 eq. (20)",
    "Hahn S1 eq. (28)",
    "Hahn S1 eq. (31)",
    "Hahn S1 eq. (32)",
)

KNOWN = {
    *(f"S1 Definition {i}" for i in (2, 3, 5, 7, 8, 11, 12, 14, 16, 19, 20)),
    *(f"S1 Lemma {i}" for i in (4, 6, 9, 10, 13, 15, 17, 21, 22, 23)),
    "S1 Corollary 18",
    "S1 Corollary 24",
    "S1 eq. (6)",
}


def _numeric(x: str) -> Fraction | None:
    try:
        return Fraction(x)
    except (ValueError, ZeroDivisionError):
        return None


def _consistent(c: dict) -> None:
    """A claim's status follows from its value and bound wherever both are exact numbers."""
    v, b = _numeric(c["value"]), _numeric(c["bound"])
    if c["relation"] and v is not None and b is not None:
        ok = v <= b if c["relation"] == "<=" else v >= b
        assert c["status"] == ("holds" if ok else "fails"), c
    assert c["status"] in ("holds", "fails", "instance", "not run", "undecided")
    assert c["holds"] is {"holds": True, "fails": False}.get(c["status"])


@implements(
    "Hahn S1 Lemma 6",
    "Hahn S1 Definition 7",
    "Hahn S1 Definition 8",
    "Hahn S1 Lemma 9",
    "Hahn S1 Lemma 10",
    "Hahn S1 Definition 11",
    "Hahn S1 Definition 12",
    "Hahn S1 Lemma 13",
    "Hahn S1 Definition 14",
    "Hahn S1 Lemma 15",
    "Hahn S1 Definition 16",
    "Hahn S1 Lemma 17",
    "Hahn S1 Corollary 18",
    "Hahn S1 Definition 19",
    "Hahn S1 Definition 20",
    "Hahn S1 Lemma 21",
    "Hahn S1 Lemma 22",
    "Hahn S1 Lemma 23",
    "Hahn S1 Corollary 24",
    "Hahn S1 eq. (6)",
)
def test_default_model_at_256_names_at_least_15_s1_statements():
    cert = certify(zoo_model("random-L2-H2-d16"), n=256, language="parity")
    names = cert.trace["s1_statements"]
    assert len(names) >= 15 and set(names) <= KNOWN
    assert names == statements(cert.trace["layers"])
    for layer in cert.trace["layers"]:
        claims = layer["s1"]
        assert {c["layer"] for c in claims} == {layer["layer"]}
        for c in claims:
            _consistent(c)
        by = {(c["statement"], c["part"]): c for c in claims}
        # Lemma 10 and Lemma 13 hold on every instance the search produces
        assert by[("S1 Lemma 10", "")]["status"] == "holds"
        assert by[("S1 Lemma 13", "")]["status"] == "holds"
        # the free counts are the restrictions' own
        free = layer["free_after"]
        assert by[("S1 Corollary 24", "")]["value"] == str(free)
        # k = 1 is far below the K of Lemma 23: said plainly
        assert by[("S1 Lemma 23", "(31)")]["in_range"] is False
        assert "outside the lemma's range" in by[("S1 Lemma 23", "(31)")]["note"]


def _stages(model, n, *, rho1=None, rho2=None, rho3=None, k=1):
    rho0 = Restriction.free(model.alphabet, n)
    tables = initial_tables(model, rho0)
    rho1 = rho1 or rho0
    rho2 = rho2 or rho1
    rho3 = rho3 or rho2
    return LayerStages(
        model,
        1,
        tables,
        rho0,
        rho1,
        rho2,
        rho3,
        tables,
        k,
        Fraction(1, 20),
        Fraction(1, 10),
        Fraction(1, 2),
    )


def _by(claims: list[S1Claim]) -> dict:
    return {(c.statement, c.part): c for c in claims}


def test_a_broken_refinement_chain_and_a_lost_free_fraction_are_reported():
    """Mutations: a 'Stage 3' that frees what Stage 2 fixed, or fixes every input, must show
    up as failed S1 statements, not pass silently."""
    model = zoo_model("random-L2-H2-d16")
    n = 16
    rho0 = Restriction.free(model.alphabet, n)
    fixed_some = rho0.fix({0: "1", 1: "0"})
    all_fixed = rho0.fix({i: "0" for i in range(n)})
    by = _by(layer_claims(_stages(model, n, rho1=fixed_some, rho2=fixed_some, rho3=rho0)))
    assert by[("Definition 3", "")].status == "fails"
    by = _by(layer_claims(_stages(model, n, rho3=all_fixed)))
    cor = by[("Corollary 24", "")]
    assert cor.status == "fails" and cor.value == "0"


def test_event_probability_is_exact():
    """P(X) for k = 1 is 1 − (#maximizing rows)·(q/|Σ|)^{|S_j|} — re-derived here from the
    ranking; for k = 2 it agrees with brute force over all draws of the union of bits."""
    model = random_model(1, 1, 8, seed=3)
    n = 12
    rho = Restriction.free(model.alphabet, n).fix({0: "1", 5: "0"})
    tabs = _restrict_all(initial_tables(model, rho), rho)
    c = dependency_c(tabs)
    q = Fraction(1, 10)
    checked = 0
    for tr in rank_tuples(model, 1, tabs, top=8):
        if not _unsatisfied(tr, tabs, c, 1):
            continue
        m = tr.keys[0].position
        best = max(tr.keys[0].row_scores)
        rows = sum(1 for s in tr.keys[0].row_scores if s == best)
        expect = 1 - rows * (q / 2) ** len(tabs[m].deps)
        assert event_probability(tr, tabs, 1, q, 2) == expect
        checked += 1
    assert checked > 0


def test_random_backend_achievement_is_reported():
    model = random_model(1, 1, 8, seed=1)
    cert = certify(model, n=16, language="parity", method="random", random_retries=200)
    lemma23 = [c for c in cert.trace["layers"][0]["s1"] if c["statement"] == "S1 Lemma 23"]
    text = " ".join(c["value"] for c in lemma23)
    assert "random back-end" in text or "nothing to do" in text


@pytest.mark.parametrize("name,lang,n", [("ones_star", "ones_star", 32), ("anbn", "anbn", 32)])
def test_zoo_models_get_s1_claims(name, lang, n):
    cert = certify(zoo_model(name), n=n, language=lang)
    for layer in cert.trace["layers"]:
        for c in layer["s1"]:
            _consistent(c)


def test_event_probability_k2_brute_force():
    model = random_model(1, 1, 8, seed=5)
    n = 10
    rho = Restriction.free(model.alphabet, n)
    tabs = _restrict_all(initial_tables(model, rho), rho)
    q = Fraction(1, 3)
    from attncert.hard.s1_stage3 import argmax_rows

    checked = 0
    for tr in rank_tuples(model, 1, tabs, top=8)[:20]:
        if len(tr.keys) < 2:
            continue
        heads = [tr.keys[0].position, tr.keys[1].position]
        bits = sorted({u for m in heads for u in tabs[m].deps})
        total = Fraction(0)
        for draw in itertools.product((None, 0, 1), repeat=len(bits)):
            val = dict(zip(bits, draw, strict=True))
            hit = any(
                all(val[u] is not None for u in tabs[m].deps)
                and sum(
                    val[u] * 2 ** (len(tabs[m].deps) - 1 - i) for i, u in enumerate(tabs[m].deps)
                )
                in argmax_rows(tr, m)
                for m in heads
            )
            if not hit:
                total += math.prod((1 - q) if v is None else q / 2 for v in draw)
        assert event_probability(tr, tabs, 2, q, 2) == total
        checked += 1
    assert checked > 0
