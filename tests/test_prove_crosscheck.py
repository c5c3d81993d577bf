"""Cross-examination of the bounded agreement prover (issue 7).

* its verdicts match exhaustive interval enumeration — for every library formula
  (temperature regime: n ≤ 8 for |Σ| = 2, 5 for |Σ| = 3, 4 for |Σ| = 4; PARITY, ◁ and
  MAJORITY up to n = 10) and for mutated models whose verdict is a counterexample; the
  slow run covers every regime up to n ≤ 10 / 7 / 5;
* written ``.smt2`` files re-run by a fresh z3 process give the recorded verdicts;
* the pieces are checked against brute force: the interval forward pass encloses the
  float forward pass; a row's decision list equals the argmax on every assignment and
  its staircase bound is ≥ the true softmax error (computed with 60-digit mpmath);
  the tieless check never calls a tied model tieless and its gaps are ≤ the exact ones.
"""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from flint import fmpq

from attncert.compile import compile_formula
from attncert.compile.tieless import check_uniform_tieless, to_average_hard
from attncert.compile.variants import with_temperature
from attncert.logic import LIBRARY
from attncert.model import forward, random_model
from attncert.model.spec import AttentionKind, Temperature
from attncert.prove import expr as E
from attncert.prove import interval_forward, prove_agreement, recheck_files
from attncert.prove.gaps import key_options_row
from attncert.prove.intervals import arb_q, staircase_bound
from attncert.prove.tieless import tieless_gaps

BUDGET = {2: 8, 3: 5, 4: 4}
SLOW_BUDGET = {2: 10, 3: 7, 4: 5}


def _agree(name, regime, k):
    nf = LIBRARY[name]
    res = prove_agreement(nf.formula, max_len=k, regime=regime, alphabet=nf.alphabet, cross_check=k)
    assert [r.cross_check for r in res.lengths] == ["agree"] * k, [
        (r.n, r.verdict, r.cross_check) for r in res.lengths
    ]
    return res


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LIBRARY))
def test_verdicts_match_enumeration(name):
    _agree(name, "temperature", BUDGET[len(LIBRARY[name].alphabet)])


# (parity, previous-symbol and majority up to n = 10 ran here in the default run too; the
# slow run below does every formula in every regime to 10 on two symbols, those included)
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "regime"), [(n, r) for n, nf in LIBRARY.items() for r in nf.regimes()]
)
def test_verdicts_match_enumeration_all_regimes(name, regime):
    _agree(name, regime, SLOW_BUDGET[len(LIBRARY[name].alphabet)])


def test_mutants_match_enumeration():
    m = compile_formula("Q_a S Q_b", alphabet="abc")
    low = with_temperature(m, Temperature(0.5, 1.0))
    res = prove_agreement("Q_a S Q_b", low, max_len=5, cross_check=5)
    assert {r.verdict for r in res.lengths} == {"proved", "counterexample"}
    assert all(r.cross_check == "agree" for r in res.lengths)
    p = compile_formula("ODD(#<[Q_1])", alphabet="01")
    res = prove_agreement("EVEN(#<[Q_1])", p, max_len=6, cross_check=6)
    assert all(r.verdict == "counterexample" and r.cross_check == "agree" for r in res.lengths)


# ----- .smt2 files ------------------------------------------------------------------------------


def test_smt2_files_rerun_by_fresh_z3(tmp_path):
    nf = LIBRARY["majority"]
    good = prove_agreement(nf.formula, max_len=5, alphabet=nf.alphabet, smt2_dir=tmp_path / "a")
    m = compile_formula("Q_a S Q_b", alphabet="abc")
    bad = prove_agreement("Q_a U Q_b", m, max_len=4, smt2_dir=tmp_path / "b")
    recorded = {
        q["file"]: q["verdict"]
        for res in (good, bad)
        for length in res.lengths
        for q in length.queries
        if q["file"]
    }
    assert len(recorded) > 20
    assert {"sat", "unsat"} <= set(recorded.values())
    assert recheck_files(sorted(recorded)) == recorded


# ----- pieces vs brute force ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_interval_forward_encloses_float_forward(seed):
    m = random_model(2, 2, 6, kind="softmax", seed=seed)
    rng = random.Random(seed)
    strings = ["".join(rng.choice(m.alphabet) for _ in range(7)) for _ in range(5)]
    fl = forward(m, strings).final
    for b, w in enumerate(strings):
        y = interval_forward(m, w)
        for p, row in enumerate(y):
            for c, ball in enumerate(row):
                mid, rad = float(ball.mid()), float(ball.rad())
                assert abs(fl[b, p, c] - mid) <= rad + 1e-9 * (1 + abs(mid))
                assert rad < 1e-6


def _brute_row(q, options, values, beta):
    """Exact argmax value and max true softmax error over all joint assignments."""
    keys = sorted(options)
    worst = mpmath.mpf(0)
    outs = []
    for choice in np.ndindex(*[len(options[j]) for j in keys]):
        sc = [
            sum(a * b for a, b in zip(q, options[j][c], strict=True))
            for j, c in zip(keys, choice, strict=True)
        ]
        vs = [values[j][c] for j, c in zip(keys, choice, strict=True)]
        best = max(sc)
        top = [k for k, x in enumerate(sc) if x == best]
        if len(top) > 1:
            return None, None
        hard = vs[top[0]]
        with mpmath.workdps(60):
            ws = [
                mpmath.exp(
                    beta * (mpmath.mpf(int(x.p)) / int(x.q) - mpmath.mpf(int(best.p)) / int(best.q))
                )
                for x in sc
            ]
            tot = sum(ws)
            soft = (
                sum(w * (mpmath.mpf(int(v.p)) / int(v.q)) for w, v in zip(ws, vs, strict=True))
                / tot
            )
            worst = max(worst, abs(soft - mpmath.mpf(int(hard.p)) / int(hard.q)))
        outs.append((choice, hard))
    return outs, worst


@pytest.mark.parametrize("seed", range(12))
def test_decision_list_and_staircase_vs_brute_force(seed):
    rng = random.Random(seed)
    n_keys = rng.randint(2, 5)
    q = [fmpq(rng.randint(-4, 4), rng.randint(1, 3)) for _ in range(2)]
    atoms = {j: E.Atom(f"b{j}", "bool") for j in range(1, n_keys + 1)}
    keys, vals, options, values = {}, {}, {}, {}
    for j, a in atoms.items():
        k0 = [fmpq(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(2)]
        k1 = [fmpq(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(2)]
        v0, v1 = fmpq(rng.randint(0, 3), 3), fmpq(rng.randint(0, 3), 3)
        keys[j] = [E.ite(E.CVar(E.Var(a)), E.const(k1[r]), E.const(k0[r])) for r in range(2)]
        vals[j] = [E.ite(E.CVar(E.Var(a)), E.const(v1), E.const(v0))]
        options[j], values[j] = [k0, k1], [v0, v1]
    brute, worst = _brute_row(q, options, values, 3)
    if brute is None:
        pytest.skip("random row with a possible tie")
    out, stair, _ = key_options_row(n_keys + 1, q, keys, vals, AttentionKind.SOFTMAX, {})
    for choice, hard in brute:
        asg = {atoms[j]: c for j, c in zip(sorted(atoms), choice, strict=True)}
        assert E.ev(out[0], asg) == hard
    if stair is not None:
        bound = staircase_bound(stair, arb_q(3))
        assert mpmath.mpf(int(bound.p)) / int(bound.q) >= worst


@pytest.mark.slow
@pytest.mark.parametrize("name", ["since", "previous-symbol", "parity", "majority", "ngram"])
def test_tieless_check_vs_exact_enumeration(name):
    nf = LIBRARY[name]
    hard = to_average_hard(compile_formula(nf.formula, alphabet=nf.alphabet))
    mine = tieless_gaps(hard, 5)
    exact = check_uniform_tieless(hard, 5, stop_at_tie=False).lengths
    for r, e in zip(mine, exact, strict=True):
        if r.tieless:
            assert e.tieless
            for key, g in r.min_gaps.items():
                li, hi = map(int, key.split("."))
                eg = e.gaps.get((li, hi))
                if g is not None and eg is not None:
                    assert Fraction(g) <= eg
        if not e.tieless:
            assert r.tieless is not True


@pytest.mark.parametrize("seed", range(6))
def test_tieless_check_on_random_one_layer_models(seed):
    m = random_model(1, 1, 4, kind="average", seed=seed)
    mine = tieless_gaps(m, 4)  # no output claim: only the attention rows are analysed
    exact = check_uniform_tieless(m, 4, stop_at_tie=False).lengths
    assert all(r.tieless is not None for r in mine)
    for r, e in zip(mine, exact, strict=True):
        if not e.tieless:
            assert r.tieless is not True, (r, e.ties[:1])
        if r.tieless and e.min_gap is not None and r.min_gap is not None:
            assert r.min_gap <= float(e.min_gap) + 1e-12
