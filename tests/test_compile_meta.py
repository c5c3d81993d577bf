"""What a compiled model records (for the z3 prover) and where a too-low temperature fails."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

from attncert.compile import compile_formula, explain
from attncert.compile.agreement import all_strings, disagreements
from attncert.compile.variants import with_temperature
from attncert.errors import SpecError, UnsupportedError
from attncert.logic import LIBRARY, parse
from attncert.model import load_model, save_model
from attncert.model.spec import Mask, Temperature

N, J = sympy.symbols("N j")
LOCALS = {
    name: sympy.Symbol(name) for name in ("N", "i", "j", "d", "k", "m", "t", "chi_j", "x_i", "beta")
}


def _sym(expr: str):
    return sympy.sympify(expr, locals=LOCALS)


@pytest.mark.parametrize(
    ("name", "regime"), [(n, r) for n, nf in LIBRARY.items() for r in nf.regimes()]
)
def test_meta_records_every_head(name, regime):
    nf = LIBRARY[name]
    m = compile_formula(nf.formula, regime=regime, alphabet=nf.alphabet)
    meta = m.meta
    assert meta["formula"] == str(nf.formula) and meta["regime"] == regime
    heads = [(li, hi, h) for li, L in enumerate(m.layers) for hi, h in enumerate(L.heads)]
    assert len(heads) == len(meta["heads"])
    for rec in meta["heads"]:
        h = m.layers[rec["layer"]].heads[rec["head"]]
        assert rec["pattern"] and rec["construction"]
        t = rec["temperature"]
        assert Temperature(t["coef"], t["n_power"], t["log_power"]) == h.temperature
        assert t["reason"]
        if not rec.get("uniform"):
            gap = _sym(rec["gap"]["min"])  # parsable in N
            assert gap.free_symbols <= {N}
            for prof in rec["gap"]["profile"]:
                _sym(prof["gap"])
        else:
            assert not h.w_q.any() and not h.w_k.any()
        if regime in ("unbounded", "future-masked-unbounded"):
            assert h.temperature.is_constant and h.temperature.coef == 1.0
        if regime.startswith("future-masked"):
            assert h.mask in (Mask.FUTURE, Mask.FUTURE_STRICT)
    feats = m.embedding.features
    if regime in ("temperature", "future-masked"):
        assert all(f.bounded for f in feats)
    if regime.startswith("future-masked"):
        assert not any("n" in f.name for f in feats)
    # designated coordinates: readout reads the root coordinate, output_coords lists nodes
    root = meta["readout"]["coord"]
    assert m.readout.output_coords[0] == root
    assert m.readout.weight[root] == 1.0 and m.readout.bias == -0.5
    assert {nd["coord"] for nd in meta["nodes"]} == set(m.readout.output_coords)
    assert set(meta["symbols"]) >= {"N", "beta"}
    assert "designated output coordinate" in explain(m)


def test_save_load_keeps_meta(tmp_path):
    m = compile_formula(LIBRARY["dyck1"].formula, regime="temperature", alphabet="()")
    path = save_model(m, tmp_path / "dyck.json") or tmp_path / "dyck.json"
    m2 = load_model(tmp_path / "dyck.json")
    assert m2.digest == m.digest
    assert m2.meta["heads"] == m.meta["heads"]
    assert disagreements(m2, all_strings("()", 8)) == []
    assert path


def test_unsupported_constructs_name_the_reason():
    with pytest.raises(UnsupportedError, match="past masking"):
        compile_formula("next Q_a", regime="future-masked")
    with pytest.raises(UnsupportedError, match="depends on n"):
        compile_formula("HALF(#<[Q_a])", regime="future-masked")
    with pytest.raises(UnsupportedError, match="temperature"):
        compile_formula("ODD(#<[Q_a])", regime="future-masked-unbounded")
    with pytest.raises(SpecError, match="regime"):
        compile_formula("Q_a", regime="hot")
    with pytest.raises(SpecError, match="alphabet"):
        compile_formula("true")


def _target_weight(score_expr: str, targets, beta: float, n: int) -> float:
    """Soft weight on the intended key for the worst query, from the recorded scores."""
    f = sympy.lambdify((J, N), _sym(score_expr))
    worst = 1.0
    for i in range(2, n + 1):
        keys = list(range(1, i))  # strict future mask
        t = targets(i)
        if t not in keys:
            continue
        s = np.array([float(f(j, n)) for j in keys])
        w = np.exp(beta * (s - s.max()))
        worst = min(worst, w[keys.index(t)] / w.sum())
    return worst


def test_too_low_temperature_fails_where_the_gap_predicts():
    """◁Q_1 with the Thm-12a heads but a constant β = 2: the rightmost even (odd) key beats
    the next one of its parity only by the recorded gap 2/N, so the attention on it drops
    below ½ at a predictable N; the root coordinate is R(weight) there, i.e. wrong."""
    m = compile_formula("prev Q_1", regime="temperature", alphabet="01")
    recs = m.meta["heads"]
    assert [r["gap"]["min"] for r in recs] == ["2/N", "2/N"]
    beta0 = 2.0
    low = m
    for r in recs:
        low = with_temperature(low, Temperature(beta0), heads=[(r["layer"], r["head"])])

    def predicted_weight(n: int) -> float:
        even = _target_weight(recs[0]["scores"], lambda i: i - 1 if i % 2 else -1, beta0, n)
        odd = _target_weight(recs[1]["scores"], lambda i: i - 1 if i % 2 == 0 else -1, beta0, n)
        return min(even, odd)

    predicted = next(n for n in range(2, 40) if predicted_weight(n) <= 0.5)
    assert predicted == 8  # and the prediction is not trivial:
    for n in range(1, predicted):
        assert disagreements(low, all_strings("01", n)) == [], n
    bad = disagreements(low, all_strings("01", predicted), limit=1000)
    assert bad, "agreement should fail at the predicted length"
    # the compiled temperature β(N) = c·N is fine at that length and far beyond
    assert disagreements(m, all_strings("01", predicted)) == []
    # and the recorded profile explains the failure: Σ_k exp(−β0·2k/N) ≥ 1 at N = predicted
    same_parity = sum(math.exp(-beta0 * 2 * k / predicted) for k in range(1, predicted // 2))
    assert same_parity >= 1.0


def test_parse_is_the_public_entry():
    m = compile_formula(parse("Q_a S Q_b"), regime="unbounded", alphabet="abc")
    assert m.meta["heads"][0]["role"] == "since"


def test_library_regime_names_are_the_compilers():
    from attncert.compile.regime import Regime

    names = {r for nf in LIBRARY.values() for r in nf.regimes()}
    assert names == {r.value for r in Regime}
