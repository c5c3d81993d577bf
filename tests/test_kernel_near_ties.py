"""Near ties and exact ties under LayerNorm: decided rigorously, never by a float
coincidence (issue 14, "Must show": a model whose two scores differ by less than 2⁻⁶⁰).

The model (one leftmost-hard head, pre-norm LayerNorm): tokens 0 and 1 have embeddings
(1, 0, −1, a, −a, 0) and (1+δ, 0, −1−δ, −a, a, 0) with δ = 2⁻⁵², a = 2⁻²⁰. The head's
score is LN(x)[0]; the two tokens' scores differ by ≈ 2⁻⁶⁶·⁶ (only ε in √(σ²+ε) tells
them apart), and token 1 scores higher, so the head attends to the first 1. The value
LN(x)[3] − LN(x)[4] = ±2a/√(σ²+ε) reveals which token was attended, and the readout
accepts iff it was a 0 — i.e. iff the string has no 1.
"""

from __future__ import annotations

from itertools import product

import mpmath
import numpy as np
import pytest

from attncert.arith.field import Undecided
from attncert.hard.bruteforce import confirm_by_enumeration
from attncert.hard.pipeline import CertificationFailed, certify
from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.hard.checker import check
from attncert.model import Embedding, Head, Layer, LayerNorm, Model, Readout, forward

DELTA = 2.0**-52
A = 2.0**-20
EPS = 1e-5


def near_tie_model(*, shift: float | None = None) -> Model:
    """The module docstring's model; with ``shift``, token 1 is token 0 plus shift·(1,…,1)
    instead: LayerNorm maps both to the same vector, an exact tie that is not
    structural (different inputs), which no precision can decide."""
    e0 = np.array([1.0, 0.0, -1.0, A, -A, 0.0])
    e1 = np.array([1.0 + DELTA, 0.0, -1.0 - DELTA, -A, A, 0.0]) if shift is None else e0 + shift
    bos = np.array([-1.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    d = 6
    head = Head(
        w_q=np.zeros((1, d)),
        w_k=np.eye(1, d, 0),
        w_v=(np.eye(1, d, 3) - np.eye(1, d, 4)),
        w_o=np.eye(d, 1, -5),
        kind="leftmost",
        b_q=np.ones(1),
    )
    norm = LayerNorm(np.ones(d), np.zeros(d), EPS)
    return Model(
        alphabet=("0", "1"),
        embedding=Embedding(("0", "1", "B"), np.stack([e0, e1, bos])),
        layers=(Layer((head,), None, True, norm, None, "pre"),),
        readout=Readout(np.eye(1, d, 5)[0] * 2.0**20, 0.0),
        bos="B",
        name="near-tie" if shift is None else "ln-shift-tie",
    )


def _reference_score(e: np.ndarray) -> mpmath.mpf:
    """LN(x)[0] at 300 digits, from the exact float64 inputs (an independent check)."""
    with mpmath.workdps(300):
        x = [mpmath.mpf(float(v)) for v in e]
        mu = sum(x) / len(x)
        var = sum((v - mu) ** 2 for v in x) / len(x)
        return (x[0] - mu) / mpmath.sqrt(var + mpmath.mpf(EPS))


def test_the_two_scores_differ_by_less_than_2_to_the_minus_60():
    m = near_tie_model()
    s0 = _reference_score(m.embedding.word[0])
    s1 = _reference_score(m.embedding.word[1])
    gap = s1 - s0
    assert 0 < gap < mpmath.mpf(2) ** -60
    # float64 cannot see the gap: the float scores are equal or wrongly ordered
    tr = forward(m, ["01"])
    s = tr.layers[0].scores[0, 0, -1]
    assert not s[2] > s[1]


def test_rigorous_decisions_follow_the_true_scores_not_float_coincidence():
    m = near_tie_model()
    wrong_in_float = 0
    for n in range(1, 7):
        for sym in product("01", repeat=n):
            s = "".join(sym)
            tr = forward_rigorous(m, s)
            truth = "1" not in s  # the head attends to the first 1 when there is one
            assert tr.accept is truth, s
            chosen = tr.layers[0].chosen[0][-1]
            first = s.index("1") + 1 if "1" in s else 1  # token index (BOS is token 0)
            assert chosen == (first,), s
            assert (tr.precision is not None and tr.precision > 53) or "1" not in s or s == "1" * n
            wrong_in_float += bool(forward(m, [s]).accept[0]) != truth
    assert wrong_in_float > 0  # the float evaluator guesses, the rigorous one does not


@pytest.mark.parametrize(
    "n",
    [4, 8, pytest.param(12, marks=pytest.mark.slow)],  # n = 12: 9 s, in .ci/run's slow step
)
def test_certificates_on_the_near_tie_model_are_checked_and_confirmed_by_brute_force(n):
    m = near_tie_model()
    cert = certify(m, n=n, language="parity")
    report = check(cert, m)
    assert report.accepted, report.summary()
    assert report.arithmetic.startswith("arb") and report.arithmetic != "arb, 53 bits"
    bf = confirm_by_enumeration(m, cert)
    assert bf.decision_is_function, bf.counterexample


def test_an_exact_tie_that_is_not_structural_is_refused_not_guessed():
    m = near_tie_model(shift=0.25)
    with pytest.raises(Undecided, match="undecided at 4096 bits"):
        forward_rigorous(m, "01")
    # a single token type present: the tie is structural (identical inputs) and decided
    assert forward_rigorous(m, "11").accept == bool(forward(m, ["11"]).accept[0])
    with pytest.raises(CertificationFailed, match="undecided"):
        certify(m, n=6, language="parity")


def test_cli_reports_undecided_with_exit_code_3(tmp_path, capsys):
    from attncert.cli.main import main
    from attncert.model import save_model

    path = save_model(near_tie_model(shift=0.25), tmp_path / "tie.json")
    assert main(["certify", str(path), "--n", "6"]) == 3
    err = capsys.readouterr().err
    assert "UNDECIDED" in err and "Traceback" not in err
    assert not list(tmp_path.glob("*.tmp"))
