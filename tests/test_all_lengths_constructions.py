"""All-length proofs across the constructions (issue 23): every §4 result in every regime,
the closed-form bounds against the true soft errors of every head kind, the statement against
the interpreter at small and at large n, tampered counting certificates, the CLI and the
``all_lengths`` proof artifacts."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import random
import shutil

import numpy as np
import pytest

from attncert.certificates.all_lengths import (
    certificate_from_dict,
    formula_from_json,
    term_from_json,
)
from attncert.cli.main import main
from attncert.compile import compile_formula
from attncert.compile.agreement import disagreements
from attncert.compile.first_last import first_last_model
from attncert.kernel.all_lengths import checker as K
from attncert.logic import parse
from attncert.logic import syntax as s
from attncert.logic.interpreter import evaluate_batch
from attncert.logic.numpred import predicate
from attncert.model import save_model
from attncert.model.forward import forward
from attncert.model.spec import Temperature
from attncert.proofcheck.catalog import _ALL_LENGTHS
from attncert.prove.all_lengths import prove_all_lengths
from attncert.prove.all_lengths_certificate import certificate_to_dict, formula_to_json

CASES = [(f, a, r) for _, _, _, f, a, r in _ALL_LENGTHS if r != "proposition11"]


def _model(formula, alphabet, regime):
    if regime == "proposition11":
        return first_last_model(formula, alphabet)
    return compile_formula(formula, regime=regime, alphabet=alphabet)


@pytest.fixture(scope="module")
def proved():
    out = {}
    for _, _, _, f, a, r in _ALL_LENGTHS:
        m = _model(f, a, r)
        res = prove_all_lengths(f, m)
        out[(f, r)] = (m, res)
    return out


def test_every_catalogued_result_is_proved_for_all_lengths(proved):
    for (f, r), (_, res) in proved.items():
        assert res.verdict == "proved", (f, r, res.statement, [x.line() for x in res.failures])
        assert res.statement == "for all n ≥ 1" and res.kernel.accepted
        assert res.bounded.verdict == "proved" and res.bounded.max_len == res.n0 - 1
    kinds = {g["kind"] for _, res in proved.values() for g in res.certificate.gadgets}
    assert kinds >= {
        "bool", "prev-parity", "prev-shift", "since-tie", "since-shift", "mean", "lookup",
        "countpred", "threshold-sign", "threshold-clamp", "proposition11",
    }  # fmt: skip


def test_the_models_agree_with_the_interpreter_at_small_and_large_n(proved):
    rng = random.Random(0)
    for (f, r), (m, _) in proved.items():
        a = m.alphabet
        small = [
            "".join(w)
            for n in range(1, 6 if len(a) <= 2 else 4)
            for w in itertools.product(a, repeat=n)
        ]
        big = ["".join(rng.choice(a) for _ in range(n)) for n in (57, 130) for _ in range(3)]
        if r != "proposition11":
            assert disagreements(m, small + big, limit=1) == [], (f, r)
            continue
        for w in small + big:  # the mark coordinate is the model's only output
            got = forward(m, [w]).outputs[0, :, 0] > 0.5
            assert (got == evaluate_batch(parse(f), [w])[0]).all(), (f, w)


# ----- the closed-form bounds dominate the measured soft errors (every head kind) -----------


def _strict_count(truth: np.ndarray, i: int, left: bool) -> np.ndarray:
    return truth[:, : i - 1].sum(axis=1) if left else truth[:, i:].sum(axis=1)


def _hard_rows(model, g, item, strings, n):
    """(value coordinate, scale, {row i: hard values per string}) for one inequality."""
    kind = g["kind"]
    f = formula_from_json(g.get("formula", ["top"]))
    rows: dict[int, np.ndarray] = {}
    if kind in ("prev-parity", "prev-shift"):
        arg = evaluate_batch(f.arg, strings).astype(float)
        step = -1 if isinstance(f, s.Prev) else 1
        if kind == "prev-parity":
            idx = g["heads"].index(item["head"][1])
            raw, parity = g["raws"][idx], 0 if "even" in item["what"] else 1
        else:
            raw, parity = g["raw"], None
        for i in range(1, n + 1):
            t = i + step
            if 1 <= t <= n and (parity is None or t % 2 == parity):
                rows[i] = arg[:, t - 1]
        return raw, 1.0, rows
    if kind in ("since-tie", "since-shift"):
        psi = evaluate_batch(f.right, strings)
        chi = psi | ~evaluate_batch(f.left, strings)
        since = isinstance(f, s.Since)
        for i in range(1, n + 1):
            side = range(i - 1, 0, -1) if since else range(i + 1, n + 1)
            vals, ok = np.zeros(len(strings)), np.zeros(len(strings), dtype=bool)
            for b in range(len(strings)):
                j = next((j for j in side if chi[b, j - 1]), None)
                if j is not None:
                    ok[b], vals[b] = True, float(psi[b, j - 1])
            if ok.all():
                rows[i] = vals
            elif ok.any():  # keep the strings where the case applies
                rows[i] = np.where(ok, vals, np.nan)
        return g["raw"], 1.0, rows
    if kind == "lookup":
        term = term_from_json(g["term"])
        left = isinstance(term, s.CountLeft)
        phi = evaluate_batch(term.arg, strings)
        bounded = model.meta["regime"] in ("temperature", "future-masked")
        value_row = "count" in item["what"]
        for i in range(1, n + 1):
            S = _strict_count(phi, i, left)
            if value_row:
                rows[i] = S / n if bounded else S.astype(float)
            else:
                rows[i] = S  # resolved per predicate below
        if value_row:
            return g["value"], (float(n) if bounded else 1.0), rows
        return g["preds"], 1.0, rows
    if kind == "threshold-sign":
        truth = evaluate_batch(f, strings).astype(float)
        causal = model.layers[item["head"][0]].heads[item["head"][1]].mask.value == "future"
        for i in range(1, n + 1):
            if n >= 2 and (not causal or i >= 2):
                rows[i] = truth[:, i - 1]
        return g["raw"], 1.0, rows
    raise AssertionError(kind)


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3, 5, 7])
def test_bounds_dominate_the_true_soft_errors(proved, n):
    checked = set()
    for (f, r), (m, res) in proved.items():
        if len(m.alphabet) ** n > 3000:
            continue
        cert = res.certificate
        strings = ["".join(w) for w in itertools.product(m.alphabet, repeat=n)]
        tr = forward(m, strings)
        for item in K.expected_inequalities(cert, m):
            if item["inequality"].var != "n" and n < 2:
                continue
            g = cert.gadgets[item["gadget"]]
            li, hi = item["head"]
            hv = tr.layers[li].head_values[:, hi]
            x = n if item["inequality"].var == "n" else None
            coord, scale, rows = _hard_rows(m, g, item, strings, n)
            worst = 0.0
            for i, hard in rows.items():
                if isinstance(coord, list):  # lookup predicate rows: θ(S), θ(S+1)
                    for name, raw_s, raw_s1 in coord:
                        th = predicate(name)
                        for raw, shift in ((raw_s, 0), (raw_s1, 1)):
                            want = np.array([float(th(int(k) + shift, n)) for k in hard])
                            worst = max(worst, float(np.max(np.abs(hv[:, i - 1, raw] - want))))
                    continue
                diff = np.abs(hv[:, i - 1, coord] - hard)
                worst = max(worst, float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0)
                if x is None:  # a bound in the position i
                    bound = float(item["inequality"].ball(i).upper())
                    assert float(np.nanmax(diff)) <= bound + 1e-12, (f, r, item["id"], i)
            if x is not None:
                bound = float(item["inequality"].ball(n).upper()) / scale
                assert worst <= bound + 1e-12, (f, r, item["id"], n, worst, bound)
            checked.add(g["kind"])
    assert checked >= {"prev-parity", "prev-shift", "since-tie", "since-shift", "lookup",
                       "threshold-sign"}  # fmt: skip


# ----- counting certificates: tampering and perturbation ----------------------------------------

MIXED = "2*#<[Q_a] - #>[Q_b] >= 1 | HALF(#>[Q_a])"


@pytest.fixture(scope="module")
def mixed():
    m = compile_formula(MIXED, regime="temperature", alphabet="ab")
    res = prove_all_lengths(MIXED, m)
    assert res.verdict == "proved"
    return m, res.certificate


def _edit(cert, fn):
    d = copy.deepcopy(certificate_to_dict(cert))
    fn(d)
    return certificate_from_dict(d)


def _gadget(d, kind, pred=lambda g: True):
    return next(g for g in d["gadgets"] if g["kind"] == kind and pred(g))


COUNT_EDITS = {
    # a larger value budget for the counts than the sign head's gap can absorb
    "value budget": (lambda d: _gadget(d, "lookup", lambda g: g["value"] is not None).__setitem__(
        "value_budget", "1/2"), "value_budget"),
    "lookup budget": (lambda d: _gadget(d, "lookup", lambda g: bool(g["preds"])).__setitem__(
        "budget", "1/3"), "budget"),
    "sign counts": (lambda d: _gadget(d, "threshold-sign")["counts"].reverse(), "counts"),
    "sign flag": (lambda d: _gadget(d, "threshold-sign").__setitem__("flag", 0), "flag"),
    "lookup term": (lambda d: _gadget(d, "lookup").__setitem__("term", ["left", ["atom", "b"]]), "phi"),
    "mean value": (lambda d: _gadget(d, "mean").__setitem__("value", 0), "gadget"),
    "threshold formula": (lambda d: _gadget(d, "threshold-sign").__setitem__(
        "formula", formula_to_json(parse("2*#<[Q_a] - #>[Q_b] >= 2"))), "query"),
    "lookup exponent": (lambda d: d["inequalities"][0]["atoms"][0]["Phi"]["b"][0].__setitem__(
        0, "7"), "exponent Phi"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(COUNT_EDITS))
def test_counting_certificate_edits_are_rejected(mixed, name):
    model, cert = mixed
    fn, needle = COUNT_EDITS[name]
    rep = K.check(_edit(cert, fn), model)
    assert not rep.accepted
    text = " ".join(f.line() for f in rep.failures)
    assert needle in text, text


def _lookup_coef(c):
    m = compile_formula("ODD(#<[Q_1])", regime="temperature", alphabet="01")
    layers = list(m.layers)
    heads = list(layers[1].heads)
    heads[0] = dataclasses.replace(heads[0], temperature=Temperature(c, n_power=4, log_power=1))
    layers[1] = dataclasses.replace(layers[1], heads=tuple(heads))
    return dataclasses.replace(m, layers=tuple(layers))


@pytest.mark.slow
def test_lowered_lookup_temperature_moves_n0_then_fails_at_a_named_length():
    """β = c·N⁴·log N: the closed form (N − 1)·N^(−c·N³/((N−1)(N+1)²)) needs c > 1 in the
    limit; with c = 1.5 it holds from N0 = 22 on (z3 proves n ≤ 21), with c = 1.2 only
    from n = 1061 on, beyond the bounded prover: the output names n = 2 and says why."""
    res = prove_all_lengths("ODD(#<[Q_1])", _lookup_coef(1.5))
    assert res.verdict == "proved" and res.n0 == 22 and res.bounded.max_len == 21
    res = prove_all_lengths("ODD(#<[Q_1])", _lookup_coef(1.2))
    assert res.verdict == "partial" and res.statement == "proved for n ≤ 12"
    f = res.failures[0]
    assert f.first == 2 and "1061" in f.reason
    assert any("n = 2" in note and "insufficient" in note for note in res.notes)


def test_perturbed_ffn_weight_gives_a_counterexample_not_a_refusal():
    m = compile_formula("Q_a S Q_b", regime="temperature", alphabet="abc")
    layers = list(m.layers)
    ffn = layers[-1].ffn
    w2 = np.array(ffn.w2)
    w2[w2 == 2.0] = 1.0  # the rounding FFN no longer reaches 1
    layers[-1] = dataclasses.replace(layers[-1], ffn=dataclasses.replace(ffn, w2=w2))
    bad = dataclasses.replace(m, layers=tuple(layers))
    res = prove_all_lengths("Q_a S Q_b", bad)
    assert res.verdict == "counterexample"
    assert res.failures[0].id == "construction" and "any length" in res.failures[0].reason


# ----- the command line ----------------------------------------------------------------------------


def test_cli_all_lengths_proves_writes_and_rechecks(tmp_path, capsys):
    out = tmp_path / "parity.cert.json"
    rc = main(["prove", "ODD(#<[Q_1])", "--alphabet", "01", "--all-lengths", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "CERTIFIED: for all n ≥ 1" in text
    assert main(["check", str(out)]) == 0
    assert "CERTIFIED: ODD(#<[Q_1]) for all n ≥ 1" in capsys.readouterr().out
    d = json.loads(out.read_text())
    d["inequalities"][0]["atoms"][0]["P"][0][0] = "-7"
    out.write_text(json.dumps(d))
    assert main(["check", str(out), "--json"]) == 1
    rec = json.loads(capsys.readouterr().out)
    assert rec["verdict"] == "REFUTED" and "coefficient P" in rec["failures"][0]["reason"]


def test_cli_all_lengths_honest_partial_and_refusal(tmp_path, capsys):
    m = compile_formula("prev Q_1", regime="temperature", alphabet="01")
    layers = [
        dataclasses.replace(
            m.layers[0],
            heads=tuple(
                dataclasses.replace(h, temperature=Temperature(0.8, n_power=1))
                for h in m.layers[0].heads
            ),
        )
    ]
    path = tmp_path / "low.json"
    save_model(dataclasses.replace(m, layers=tuple(layers)), path)
    rc = main(["prove", "prev Q_1", "--model", str(path), "--all-lengths"])
    text = capsys.readouterr().out
    assert rc == 3
    assert "for all n" not in text.split("UNDECIDED")[-1]
    assert "UNDECIDED: proved for n ≤ 12" in text and "first fails at n = 2" in text
    assert main(["prove", "prev Q_1", "--model", "zoo:soft_parity", "--all-lengths"]) == 2
    err = capsys.readouterr().err
    assert "does not support this model" in err and "Traceback" not in err
    assert main(["prove", "prev Q_1", "--all-lengths", "--max-len", "5"]) == 2


# ----- the proof artifacts ------------------------------------------------------------------------


def test_all_lengths_artifact_edits_are_caught(tmp_path):
    from pathlib import Path

    from attncert.model import load_model
    from attncert.proofcheck.kinds import Context
    from attncert.proofcheck.kinds.all_lengths import check
    from attncert.proofcheck.manifest import load_manifest

    src = Path(__file__).parent.parent / "proofs/yang2024/theorem20/parity-temperature-all-lengths"
    d = tmp_path / "a"
    shutil.copytree(src, d)
    man = load_manifest(d)
    model = load_model(d / "model.json")
    assert check(Context(d, man, model)).ok
    cert = json.loads((d / "certificate.json").read_text())
    cert["inequalities"][0]["proof"]["x1"] = 1
    (d / "certificate.json").write_text(json.dumps(cert))
    out = check(Context(d, man, model))
    assert not out.ok and "kernel" in out.failures[0]
    shutil.rmtree(d)
    shutil.copytree(src, d)
    q = sorted((d / "smt2").glob("*.smt2"))[0]
    q.write_text(q.read_text().replace("(check-sat)", "(assert false)\n(check-sat)"))
    out = check(Context(d, man, model))
    assert not out.ok and any("not the encoding" in x for x in out.failures)


def test_an_all_lengths_artifact_regenerates_byte_for_byte(tmp_path):
    from pathlib import Path

    from attncert.proofcheck import regenerate

    path = "yang2024/theorem20/parity-temperature-all-lengths"
    regenerate(tmp_path, only=[path])
    committed = Path(__file__).parent.parent / "proofs" / path
    for f in sorted(committed.rglob("*")):
        if f.is_file():
            assert (tmp_path / path / f.relative_to(committed)).read_bytes() == f.read_bytes(), f


# ----- mutation: an edited weight is never proved wrongly ---------------------------------------


def _mutate(model, rng):
    layers = list(model.layers)
    li = rng.randrange(len(layers))
    lay = layers[li]
    scale = rng.choice([0.0, 0.5, 0.9, 1.1, 2.0, -1.0])
    what = rng.choice(["weight", "weight", "position", "temperature"])
    if what == "position":  # a positional-encoding weight (tie-breaking terms live here)
        e = model.embedding
        a = np.array(e.pos_weight)
        nz = np.argwhere(a != 0)
        idx = tuple(nz[rng.randrange(len(nz))])
        a[idx] *= scale
        return dataclasses.replace(model, embedding=dataclasses.replace(e, pos_weight=a))
    if what == "temperature" and lay.heads:
        hi = rng.randrange(len(lay.heads))
        t = lay.heads[hi].temperature
        c = t.coef * rng.choice([0.5, 0.9, 1.1, 2.0])
        hs = list(lay.heads)
        hs[hi] = dataclasses.replace(hs[hi], temperature=dataclasses.replace(t, coef=c))
        layers[li] = dataclasses.replace(lay, heads=tuple(hs))
        return dataclasses.replace(model, layers=tuple(layers))
    if (rng.random() < 0.5 or lay.ffn is None) and lay.heads:
        hi = rng.randrange(len(lay.heads))
        name = rng.choice(["w_q", "w_k", "w_v", "w_o"])
        a = np.array(getattr(lay.heads[hi], name))
        nz = np.argwhere(a != 0)
        if len(nz) == 0:
            return None
        idx = tuple(nz[rng.randrange(len(nz))])
        a[idx] *= scale
        hs = list(lay.heads)
        hs[hi] = dataclasses.replace(hs[hi], **{name: a})
        lay = dataclasses.replace(lay, heads=tuple(hs))
    else:
        name = rng.choice(["w1", "b1", "w2"])
        a = np.array(getattr(lay.ffn, name))
        nz = np.argwhere(a != 0)
        if len(nz) == 0:
            return None
        idx = tuple(nz[rng.randrange(len(nz))])
        a[idx] *= scale
        lay = dataclasses.replace(lay, ffn=dataclasses.replace(lay.ffn, **{name: a}))
    layers[li] = lay
    return dataclasses.replace(model, layers=tuple(layers))


@pytest.mark.slow
def test_mutated_models_are_never_proved_wrongly():
    """Random single-weight edits of compiled models: whatever the kernel accepts agrees with
    exhaustive interval enumeration on every string up to length 6."""
    from attncert.errors import AttncertError
    from attncert.prove.enumerate import enumerate_agreement

    rng = random.Random(23)
    cases = [
        ("prev Q_1", "temperature"),
        ("ODD(#<[Q_1])", "temperature"),
        ("#<[Q_1] > #<[Q_0]", "future-masked"),
        ("#<[Q_1] > #<[Q_0]", "unbounded"),
        ("prev Q_1 & next Q_0", "unbounded"),
        ("Q_0 S Q_1", "future-masked-unbounded"),
    ]
    proved = 0
    for _ in range(40):
        f, r = rng.choice(cases)
        m = _mutate(compile_formula(f, regime=r, alphabet="01"), rng)
        if m is None:
            continue
        try:
            res = prove_all_lengths(f, m)
        except AttncertError:
            continue
        if res.verdict == "proved":
            proved += 1
            for n in range(1, 7):
                assert enumerate_agreement(m, parse(f), n).verdict == "proved", (f, r, n)
        else:
            assert res.statement != "for all n ≥ 1"
    assert proved >= 5
