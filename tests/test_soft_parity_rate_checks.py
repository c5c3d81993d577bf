"""Issue 16 item 5: every inequality of the PARITY-rate argument checked mechanically;
Lemma A4 refuted as stated, so the several-layer theorem is labelled a conjecture everywhere
it is printed; issue 19 item 4: --parity-rate states which parity the model accepts."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy as sp

from attncert.cli.main import main
from attncert.model import random_model, zoo_model
from attncert.soft.parity_rate import STATUS, accepted_parity, status_for
from attncert.soft.parity_rate_checks import (
    CLAIMS,
    _exhaustive,
    _mass,
    _relu,
    check_parity_rate,
    lemma_a4_counterexample,
)
from attncert.symbolic.claim_types import Claim
from attncert.symbolic.runner import Verdict, decide_claim


@pytest.fixture(scope="module")
def checked():
    return check_parity_rate()


@pytest.mark.slow
def test_every_inequality_is_decided_and_only_lemma_a4_fails(checked):
    by = {r.id: r.verdict for r in checked.results}
    assert by.pop("A4.conclusion") == "refuted"
    assert set(by.values()) <= {"proved", "holds"}, by
    assert len(by) == len(CLAIMS) + 5 + 1
    assert checked.counts()["unknown"] == 0
    json.dumps(checked.as_dict())


def test_lemma_a4_family_exactly():
    """(H1) and (H2) hold with constants independent of N, yet N·M(S/N) = M(S) grows: at least
    W − 1 = √N − 1 at every tested N, recomputed here without the module's helpers."""
    prev = Fraction(0)
    for W in (4, 8, 12, 16):
        f = lemma_a4_counterexample(W)
        assert f.N == W * W
        assert f.NV < 2 and f.NM < 7 and f.B < 3
        assert f.NM_G >= W - 1
        assert prev < f.NM_G
        prev = f.NM_G

        def psi(u):
            return (1 - u * u) ** 2 if -1 <= u <= 1 else Fraction(0)

        K = f.K
        y = lambda m, k, W=W: Fraction((-1) ** m, W) * psi(Fraction(m - k, W))  # noqa: E731
        S = [sum((y(m, k) for m in range(k)), Fraction(0)) for k in range(K + 1)]
        mass = sum(abs(S[k + 2] - 2 * S[k + 1] + S[k]) for k in range(K - 1))
        assert mass == f.NM_G


def test_mutated_inequalities_are_caught():
    """A sign slip in R1's identity is not proved and is refuted; ReLU without R3's crossing
    term (Σ|Δ²ReLU z| ≤ Σ|Δ²z|) fails exhaustively, e.g. on z = (−2, 0, 2)."""
    base = next(c for c in CLAIMS if c.id == "R1.first-difference")
    lhs, rhs = base.conclusion.lhs, base.conclusion.rhs
    num = sp.Symbol("Num", real=True)
    wrong = Claim(
        id="mut",
        source=base.source,
        hypotheses=(),
        conclusion=sp.Eq(lhs, rhs.subs(num, -num), evaluate=False),
        parameters=(),
    )
    v, _, _ = decide_claim(wrong)
    assert v is not Verdict.PROVED
    _, bad = _exhaustive(lambda s: _mass(_relu(s)) <= _mass(s), 3, 2)
    assert bad is not None and _mass(_relu(bad)) > _mass(bad)


def test_status_is_labelled_by_depth():
    assert "conjecture" in STATUS["two or more layers"]
    assert "proved" in STATUS["one layer"]
    assert "conjecture" in status_for(zoo_model("soft_parity"))
    assert "proved" in status_for(random_model(1, 1, 4, kind="softmax", seed=1))


def test_accepted_parity_from_the_model_or_announced():
    assert accepted_parity(zoo_model("soft_parity")) == (
        True,
        "meta.language = 'parity (even number of 1s)'",
    )
    even, why = accepted_parity(random_model(1, 1, 4, kind="softmax", seed=1))
    assert even is None and "declares no accepted parity" in why


def test_cli_parity_rate_states_parity_and_status(capsys, tmp_path):
    argv = [
        "sensitivity",
        "zoo:soft_parity",
        "--n",
        "8,16",
        "--restarts",
        "1",
        "--time-budget",
        "1",
    ]
    assert main([*argv, "--parity-rate", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["parity_rate"]
    assert d["accepts"] == "even" and "meta.language" in d["accepts_source"]
    assert "conjecture" in d["status"]
    assert main([*argv, "--parity-rate", "--accepts", "odd"]) == 0
    out = capsys.readouterr().out
    assert "accepted parity odd (--accepts)" in out and "conjecture" in out
    from attncert.model import save_model

    path = tmp_path / "m.json"
    save_model(random_model(1, 1, 4, kind="softmax", seed=1), path)
    assert main(["sensitivity", str(path), "--n", "8", "--restarts", "1", "--parity-rate"]) == 0
    out = capsys.readouterr().out
    assert "assumed even" in out and "proved for one layer" in out
