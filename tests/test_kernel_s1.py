"""Supplement S1 on the certified instance, re-derived by the kernel (issue 16): at least
15 distinct S1 statements on the default model at n = 256, named in `attncert check`."""

from __future__ import annotations

import dataclasses
import json

import pytest

from attncert.cli.main import main
from attncert.hard.certificate import save_certificate
from attncert.hard.pipeline import certify
from attncert.hard.s1_instance import s1_statements
from attncert.model import random_model
from attncert.restriction import Restriction


@pytest.fixture(scope="module")
def default():
    model = random_model(2, 2, 16, seed=0)
    return model, certify(model, n=256, language="parity")


@pytest.mark.slow
def test_at_least_15_distinct_statements_hold_on_the_default_model(default):
    model, cert = default
    st = s1_statements(cert, model)
    names = {s.statement for s in st}
    assert len(names) >= 15, names
    assert {"S1 Lemma 6", "S1 Lemma 17", "S1 Corollary 24", "S1 Lemma 10"} <= names
    assert all(s.status in ("holds", "evaluated") for s in st), [
        s for s in st if s.status == "fails"
    ]
    cor24 = [s for s in st if s.statement == "S1 Corollary 24"]
    assert [int(s.value) for s in cor24] == [r.num_free for r in cert.restrictions[1:]]


def test_a_stage_restriction_that_does_not_refine_is_reported(default):
    model, cert = default
    s1, s2 = cert.stages[1]
    fixed = list(s2.fixed)
    u = next(i for i, x in enumerate(fixed) if x is not None and s1.fixed[i] is None)
    fixed[u] = None  # σ₂ frees an input that ρ₂ fixes: ρ₂ no longer refines σ₂
    bad_s2 = Restriction(s2.alphabet, tuple(fixed), s2.free_symbols)
    bad = dataclasses.replace(cert, stages=(cert.stages[0], (s1, bad_s2)))
    st = s1_statements(bad, model)
    d3 = [s for s in st if s.statement == "S1 Definition 3" and s.layer == 2]
    assert d3 and d3[0].status == "holds"  # σ₂ still refines σ₁ and ρ₂ refines it: fewer fixed
    fixed[u] = "1" if s2.fixed[u] == "0" else "0"
    wrong = Restriction(s2.alphabet, tuple(fixed), s2.free_symbols)
    bad = dataclasses.replace(cert, stages=(cert.stages[0], (s1, wrong)))
    d3 = [s for s in s1_statements(bad, model) if s.statement == "S1 Definition 3" and s.layer == 2]
    assert d3[0].status == "fails"


def test_without_stage_restrictions_the_stage_statements_are_not_claimed(default):
    model, cert = default
    st = s1_statements(dataclasses.replace(cert, stages=()), model)
    assert any(s.status == "not re-derivable" for s in st)
    assert not any(s.statement == "S1 Lemma 17" for s in st)


@pytest.mark.slow
def test_check_names_the_statements(default, tmp_path, capsys):
    _, cert = default
    path = save_certificate(cert, tmp_path / "c.json")
    main(["check", str(path)])
    out = capsys.readouterr().out
    assert "supplement S1 on this instance, re-derived by the kernel" in out
    assert out.count("S1 Lemma 6") >= 2 and "S1 Corollary 24" in out
    main(["check", str(path), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert len({s["statement"] for s in data["s1"]}) >= 15
    main(["check", str(path), "--no-s1", "--json"])
    assert json.loads(capsys.readouterr().out)["s1"] == []
