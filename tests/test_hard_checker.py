"""The trusted checker rejects every mutated certificate or model with a specific reason,
and it is independent of the search (issue 3, "Must show")."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attncert.cli.main import main
from attncert.errors import SpecError
from attncert.hard.certificate import (
    certificate_from_dict,
    certificate_to_dict,
    load_certificate,
    save_certificate,
)
from attncert.hard.checker import check
from attncert.hard.pipeline import certify
from attncert.hard.restriction import Restriction
from attncert.model import model_from_dict, model_to_dict, random_model, save_model

__implements__ = (
    "Hahn Theorem 1",
    "Hahn Lemma 4",
    "Hahn eq. (7)",
    "Hahn S1 Definition 3",
    "Hahn S1 eq. (7)",
)

SRC = Path(__file__).resolve().parents[1] / "src" / "attncert"


@pytest.fixture(scope="module")
def model():
    return random_model(2, 2, 8, seed=21)


@pytest.fixture(scope="module")
def cert(model):
    c = certify(model, n=40, language="parity")
    assert check(c, model).accepted
    assert c.misclassified is not None
    return c


def _with_restriction(cert, k, pos, symbol):
    rs = list(cert.restrictions)
    fixed = list(rs[k].fixed)
    fixed[pos] = symbol
    rs[k] = Restriction(rs[k].alphabet, tuple(fixed))
    return dataclasses.replace(cert, restrictions=tuple(rs))


def _fixed_positions(rho):
    return [i for i, s in enumerate(rho.fixed) if s is not None]


def test_flipping_any_fixed_symbol_is_rejected(model, cert):
    L = len(cert.restrictions) - 1
    tried = 0
    for k in range(1, L + 1):
        for pos in _fixed_positions(cert.restrictions[k]):
            other = "1" if cert.restrictions[k].fixed[pos] == "0" else "0"
            report = check(_with_restriction(cert, k, pos, other), model)
            assert not report.accepted
            f = report.failures[0]
            if k < L or cert.restrictions[k - 1].fixed[pos] is not None:
                # a neighbouring restriction in the chain no longer refines / is refined
                assert f.claim == "restrictions" and "does not refine" in f.reason, f
            else:
                assert f.claim in ("misclassified", "dependency_sets", "output"), f
                assert (
                    str(pos + 1) in f.where or str(pos + 1) in f.reason or "depends on" in f.reason
                )
            tried += 1
    assert tried >= 3


def test_freeing_a_blocker_is_rejected_with_the_head_that_escapes(model):
    """Un-fixing the positions that captured attention makes a dependency set grow."""
    c = certify(model, n=40, language=None)
    last = c.restrictions[-1]
    freed = Restriction(last.alphabet, tuple(None for _ in last.fixed))
    bad = dataclasses.replace(c, restrictions=(*c.restrictions[:-1], freed))
    report = check(bad, model)
    assert not report.accepted
    assert report.failures[0].claim == "restrictions"
    # free everything in every layer: the collapse itself must fail or grow the sets
    all_free = tuple(Restriction(last.alphabet, freed.fixed) for _ in c.restrictions)
    report = check(dataclasses.replace(c, restrictions=all_free), model)
    assert not report.accepted
    assert report.failures[0].claim in ("dependency_sets", "output")
    reason = report.failures[0].reason
    assert (
        "may be attended" in reason
        or "own input depends on input position" in reason
        or "cap" in reason
    ), reason


def test_dropping_a_claimed_dependency_is_rejected(model, cert):
    layers = [list(map(list, layer)) for layer in cert.dependency_sets]
    for ell, layer in enumerate(layers):
        for j, deps in enumerate(layer):
            if deps:
                dropped = deps.pop()
                new_sets = tuple(tuple(map(tuple, lay)) for lay in layers)
                report = check(dataclasses.replace(cert, dependency_sets=new_sets), model)
                assert not report.accepted
                f = report.failures[0]
                assert f.claim == "dependency_sets"
                assert f.where == f"layer {ell + 1}, token position {j}"
                assert f"{{{dropped + 1}}}" in f.reason
                return
    pytest.fail("no non-empty dependency set to drop from")


def test_dropping_from_the_output_dependency_set_is_rejected():
    model = random_model(1, 1, 8, seed=6)
    c = certify(model, n=16, language="parity")
    assert c.output_dependency == (15,)
    assert check(c, model).accepted
    bad = dataclasses.replace(c, output_dependency=())
    report = check(bad, model)
    assert not report.accepted and report.failures[0].claim == "output"
    assert "differ only at input position(s) {16}" in report.failures[0].reason


def test_changing_one_weight_is_rejected(model, cert):
    d = model_to_dict(model)
    d["layers"][0]["heads"][0]["w_q"][0][0] = float(
        np.nextafter(d["layers"][0]["heads"][0]["w_q"][0][0], 9)
    )
    changed = model_from_dict(d)
    report = check(cert, changed)
    assert not report.accepted
    assert report.failures[0].claim == "model" and "hashes to" in report.failures[0].reason


def test_editing_n_is_rejected(model, cert):
    report = check(dataclasses.replace(cert, n=cert.n + 1), model)
    assert not report.accepted
    assert report.failures[0].claim == "restrictions" and "but n =" in report.failures[0].reason


def test_tampered_pair_is_rejected(model, cert):
    m = cert.misclassified
    assert m is not None
    # claim the model answers differently than it does
    bad = dataclasses.replace(
        cert, misclassified=dataclasses.replace(m, decisions=(not m.decisions[0], m.decisions[1]))
    )
    report = check(bad, model)
    assert not report.accepted and "the model answers" in report.failures[0].reason
    # two strings with the same membership
    same = dataclasses.replace(
        m,
        strings=(m.strings[0], m.strings[0]),
        membership=(m.membership[0],) * 2,
        decisions=(m.decisions[0],) * 2,
    )
    report = check(dataclasses.replace(cert, misclassified=same), model)
    assert not report.accepted and "same membership" in report.failures[0].reason


def test_certificate_json_round_trip_and_errors(tmp_path, model, cert):
    path = save_certificate(cert, tmp_path / "c.json")
    again = load_certificate(path)
    assert certificate_to_dict(again) == certificate_to_dict(cert)
    assert check(again, model).accepted
    data = json.loads(path.read_text())
    data["restrictions"][1] = data["restrictions"][1][:-1] + "x"
    with pytest.raises(SpecError, match=r"restrictions\[1\].*unknown symbol 'x'"):
        certificate_from_dict(data, "c.json")
    data = json.loads(path.read_text())
    del data["output"]
    with pytest.raises(SpecError, match="missing field 'output'"):
        certificate_from_dict(data, "c.json")


def test_cli_certify_check_exit_codes(tmp_path, capsys, model, cert):
    from attncert.hard.verdict import assess

    mpath = save_model(model, tmp_path / "m.json")
    cpath = save_certificate(cert, tmp_path / "c.json")
    verdict = assess(cert, model, check(cert, model)).verdict
    assert verdict.checked
    assert main(["check", str(cpath), str(mpath)]) == verdict.exit_code
    out = capsys.readouterr().out
    assert out.startswith(f"{verdict.value}: CHECKED")
    # tamper: flip the last restriction's first fixed symbol
    data = json.loads(cpath.read_text())
    r = data["restrictions"][-1]
    i = next(k for k, ch in enumerate(r) if ch != "*")
    data["restrictions"][-1] = r[:i] + ("1" if r[i] == "0" else "0") + r[i + 1 :]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    assert main(["check", str(tmp_path / "bad.json"), str(mpath)]) == 1
    assert "REFUTED: REJECTED" in capsys.readouterr().out
    # bad input: malformed JSON, missing model
    (tmp_path / "junk.json").write_text("{")
    assert main(["check", str(tmp_path / "junk.json"), str(mpath)]) == 2
    err = capsys.readouterr().err
    assert "junk.json" in err and "line 1" in err
    code = main(["certify", str(mpath), "--n", "24", "-o", str(tmp_path / "new.json"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["n"] == 24 and (tmp_path / "new.json").exists()
    assert out["verdict"] == out["summary"]["verdict"]
    assert code == {"CERTIFIED": 0, "CERTIFIED-TRIVIAL": 4, "OUTSIDE-THEOREM": 5}[out["verdict"]]
    assert main(["certify", str(mpath), "--language", "klingon"]) == 2


@pytest.mark.slow
def test_cli_certify_bundled_default_runs_without_files():
    proc = subprocess.run(
        [sys.executable, "-m", "attncert.cli.main", "certify", "--n", "64"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    # the bundled default (a trained hard model) is certified non-trivially: a checked
    # restriction, a checked witness that it is not constant, a misclassified pair
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("CERTIFIED (independent checker)")
    assert "not constant: the model says" in proc.stdout and "WRONG:" in proc.stdout
    assert "Traceback" not in proc.stderr


TRUSTED = [
    "hard/checker.py",
    "kernel/hard/checker.py",
    "kernel/hard/decide.py",
    "arith/field.py",
    "arith/filter.py",
    "arith/positionwise.py",
    "hard/certificate.py",
    "hard/restriction.py",
]
FORBIDDEN = (
    "pysat",
    "z3",
    "attncert.hard.search",
    "attncert.hard.stages",
    "attncert.hard.pipeline",
    "attncert.hard.collapse",
    "attncert.hard.tables",
    "attncert.hard.output",
    "attncert.prove",
)


@pytest.mark.parametrize("rel", TRUSTED)
def test_trusted_modules_import_no_solver_or_search(rel):
    tree = ast.parse((SRC / rel).read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    bad = [n for n in names if n.startswith(FORBIDDEN)]
    assert not bad, f"{rel} imports {bad}"


def test_importing_the_checker_loads_no_solver():
    code = (
        "import sys, attncert.hard.checker as c; c.check;"
        f"bad=[m for m in sys.modules if m.startswith({FORBIDDEN!r})];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
