"""The Theorem-26 artifact (Yang et al. §5 on the Appendix-E Dyck-2 program): the committed
artifact re-verifies, and every kind of damage is rejected with a precise reason — a
lowered β, a weight changed in the soft model only, a weight changed consistently in both
models (a tie; a wrong language), an edited recorded gap or error bound, an edited
language name."""

from __future__ import annotations

import itertools
import json
import random
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from attncert.languages import Dyck
from attncert.model import load_model, model_from_dict, model_to_dict, save_model
from attncert.proofcheck import check_artifact
from attncert.proofcheck.kinds.tieless_simulation import _decimal_up, first_difference
from attncert.proofcheck.manifest import sha256_file

__implements__ = (
    "Yang Theorem 26",
    "Yang Lemma 24",
    "Yang Lemma 25",
)

REPO = Path(__file__).resolve().parents[1]
NAME = "yang2024/theorem26/dyck2-program"
ART = REPO / "proofs" / NAME
NEAREST = (3, 0)  # layer 3 head 0: the nearest-same-depth head


@pytest.fixture(scope="module")
def committed():
    return check_artifact(ART, NAME)


@pytest.fixture
def art(tmp_path: Path) -> Path:
    dst = tmp_path / "dyck2-program"
    shutil.copytree(ART, dst)
    return dst


def _rehash(art: Path) -> None:
    """Re-hash every listed file and the model reference (as a careless editor would), so
    the mutation reaches the kind's checker."""
    mpath = art / "manifest.json"
    m = json.loads(mpath.read_text())
    for f in m["files"]:
        f["sha256"] = sha256_file(art / f["path"])
    m["model"]["sha256"] = load_model(art / m["model"]["ref"]).digest
    mpath.write_text(json.dumps(m, indent=1) + "\n")


def _edit_model(art: Path, file: str, edit) -> None:
    d = model_to_dict(load_model(art / file))
    edit(d)
    save_model(model_from_dict(d), art / file)  # a fresh, self-consistent content hash


def _edit_json(art: Path, file: str, edit) -> None:
    d = json.loads((art / file).read_text())
    edit(d)
    (art / file).write_text(json.dumps(d, indent=1) + "\n")


def _coord(art: Path, label: str) -> int:
    return load_model(art / "model.json").meta["coordinates"].index(label)


def _reasons(art: Path) -> str:
    r = check_artifact(art, NAME)
    assert not r.ok
    assert r.status == "rejected", r.reasons
    assert all(x.startswith(NAME + ": ") for x in r.reasons)  # the artifact is named
    return "\n".join(r.reasons)


# ----- the committed artifact ----------------------------------------------------------------


@pytest.mark.slow
def test_committed_artifact_verifies(committed) -> None:
    assert committed.ok, committed.reasons
    assert committed.kind == "tieless_simulation"
    assert committed.result == "Yang 2024, Theorem 26"
    (fact,) = committed.facts
    assert "decides dyck2 exactly on all 340 inputs of length 1…4 (10 in the language)" in fact
    assert "min gap 1" in fact
    assert committed.seconds < 10  # the brief's budget is ≈ 5 s on a quiet machine


def test_recorded_rows_agree_with_the_generators_independent_report() -> None:
    """The proof object (recomputed by the checker's path) and the untrusted generator's
    own per-n derivation (soft_simulation's meta) agree on every exact quantity, and the
    recorded β(N) is above the β each length needed."""
    from attncert.compile.tieless import soft_simulation

    proof = json.loads((ART / "proof.json").read_text())
    sim = soft_simulation(load_model(ART / "model.json"), 4)
    assert proof["temperature"] == sim.temperature.to_dict()
    for row, gen in zip(proof["lengths"], sim.per_n, strict=True):
        assert row["n"] == gen["n"] and row["N"] == gen["N"]
        assert row["gaps"] == gen["gaps"]
        assert row["min_gap"] == gen["min_gap"] == "1"
        assert row["activation_bound"] == gen["activation_bound"] == str(row["N"] ** 3)
        assert row["margin"] == gen["margin"] == "1/2"
        assert float(row["beta"]) >= gen["beta_needed"]
        assert Fraction(row["error_bound"]) < Fraction(row["limit"]) == Fraction(1, 2)
    assert [r["strings"] for r in proof["lengths"]] == [4, 16, 64, 256]


def test_soft_model_agrees_with_dyck2_on_all_short_strings_by_brute_force() -> None:
    """Independent of the checker: the committed soft model's float decisions are Dyck-2
    membership on every string of length ≤ 4 (and the language has 10 such strings)."""
    from attncert.model import forward

    soft = load_model(ART / "soft_model.json")
    lang = Dyck(2)
    members = 0
    for n in range(1, 5):
        strings = ["".join(p) for p in itertools.product("()[]", repeat=n)]
        acc = forward(soft, strings).accept
        truth = [lang.contains(s) for s in strings]
        members += sum(truth)
        assert [bool(a) for a in acc] == truth
    assert members == 10


@pytest.mark.slow
def test_the_checker_loads_no_solver_and_no_search() -> None:
    code = (
        "import sys; from attncert.proofcheck import check_artifact;"
        f"r = check_artifact({str(ART)!r}, 'x'); assert r.ok, r.reasons;"
        "bad = [m for m in sys.modules if m.startswith(('z3', 'pysat', 'attncert.prove',"
        " 'attncert.hard.search', 'attncert.compile.dyck'))];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ----- mutations -----------------------------------------------------------------------------


@pytest.mark.slow
def test_lowered_beta_is_rejected_at_the_length_it_breaks(art: Path) -> None:
    """β(N) = 15·log N instead of 20.59375·log N: the bound no longer beats the margin at
    n = 1 (N = 2, β ≈ 10.4) although the weights are unchanged."""

    def lower(d):
        for layer in d["layers"]:
            for h in layer["heads"]:
                h["temperature"]["coef"] = 15.0

    _edit_model(art, "soft_model.json", lower)
    _rehash(art)
    text = _reasons(art)
    assert "soft_model.json: at n = 1 (N = 2): β(N) ≥ 10.39" in text
    assert "temperature is too low" in text
    assert "is not model.json with softmax heads" not in text  # only the temperature differs
    assert "proof.json: lengths[n = 1].beta: recorded '14.27" in text


def test_weight_changed_in_the_soft_model_only_is_rejected(art: Path) -> None:
    col = _coord(art, "pe:1*[i]")

    def bump(d):
        li, hi = NEAREST
        d["layers"][li]["heads"][hi]["w_k"][1][col] = 2.0

    _edit_model(art, "soft_model.json", bump)
    _rehash(art)
    text = _reasons(art)
    assert (
        f"soft_model.json is not model.json with softmax heads: layers[3].heads[0].w_k[1][{col}]"
        ": 2.0 in soft_model.json, 1.0 in model.json"
    ) in text


def test_dropping_the_tie_break_in_both_models_is_a_tie(art: Path) -> None:
    """Without the +j key term the nearest-same-depth head ties among all earlier positions
    of the same depth: the exact check names the tie."""
    col = _coord(art, "pe:1*[i]")

    def drop(d):
        li, hi = NEAREST
        assert d["layers"][li]["heads"][hi]["w_k"][1][col] == 1.0
        d["layers"][li]["heads"][hi]["w_k"][1][col] = 0.0

    _edit_model(art, "model.json", drop)
    _edit_model(art, "soft_model.json", drop)
    _rehash(art)
    text = _reasons(art)
    assert "model.json: not uniform–tieless: layer 3 head 0 ties at position" in text
    assert "is not model.json with softmax heads" not in text  # a consistent edit


@pytest.mark.slow
def test_consistent_change_that_breaks_the_language_is_rejected(art: Path) -> None:
    """Readout bias −½ → +½ in both models: still tieless with margin ½, but it accepts
    everything, so the exact decision on '(' contradicts Dyck-2."""

    def accept_all(d):
        d["readout"]["bias"] = 0.5

    _edit_model(art, "model.json", accept_all)
    _edit_model(art, "soft_model.json", accept_all)
    _rehash(art)
    text = _reasons(art)
    assert (
        "model.json: the exact decision on '(' (n = 1) is accept, but '(' is not in dyck2" in text
    )
    assert "tieless" not in text.replace("tieless_simulation", "")


@pytest.mark.slow
def test_edited_recorded_gap_is_rejected(art: Path) -> None:
    _edit_json(art, "proof.json", lambda d: d["lengths"][3]["gaps"].__setitem__("2.0", "2"))
    _rehash(art)
    text = _reasons(art)
    assert (
        "proof.json: lengths[n = 4].gaps.2.0: recorded gap of layer 2 head 0 is '2', recomputed '1'"
    ) in text


@pytest.mark.slow
@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("1E-9", "recorded '1E-9', recomputed certified bound 1.85702E-8"),  # not a bound
        ("0.5", "recorded '0.5', recomputed certified bound"),  # a bound, but not this one
    ],
)
def test_edited_error_bound_is_rejected(art: Path, value: str, reason: str) -> None:
    _edit_json(art, "proof.json", lambda d: d["lengths"][3].__setitem__("error_bound", value))
    _rehash(art)
    assert f"proof.json: lengths[n = 4].error_bound: {reason}" in _reasons(art)


@pytest.mark.slow
def test_edited_activation_bound_and_margin_are_rejected(art: Path) -> None:
    def edit(d):
        d["lengths"][2]["activation_bound"] = "63"
        d["lengths"][0]["margin"] = "1"

    _edit_json(art, "proof.json", edit)
    _rehash(art)
    text = _reasons(art)
    assert "proof.json: lengths[n = 3].activation_bound: recorded '63', recomputed '64'" in text
    assert "proof.json: lengths[n = 1].margin: recorded '1', recomputed '1/2'" in text


@pytest.mark.parametrize(
    ("language", "reason"),
    [
        ("dyck1", "its alphabet '()' is not the model's '()[]'"),
        ("parity", "its alphabet '01' is not the model's '()[]'"),
        ("dyck-2", "unknown language 'dyck-2'"),
    ],
)
def test_edited_language_name_is_rejected(art: Path, language: str, reason: str) -> None:
    _edit_json(art, "manifest.json", lambda d: d["parameters"].__setitem__("language", language))
    text = _reasons(art)
    assert f"manifest.json: parameters.language = {language!r}: {reason}" in text
    assert f"proof.json: language is 'dyck2', the manifest says {language!r}" in text


def test_edited_language_in_both_files_is_still_rejected(art: Path) -> None:
    _edit_json(art, "proof.json", lambda d: d.__setitem__("language", "dyck1"))
    _edit_json(art, "manifest.json", lambda d: d["parameters"].__setitem__("language", "dyck1"))
    _rehash(art)
    text = _reasons(art)
    assert "parameters.language = 'dyck1': its alphabet '()' is not the model's" in text
    assert "proof.json: language" not in text  # consistent: only the language check fails


def test_tampered_soft_model_without_rehash_is_caught(art: Path) -> None:
    path = art / "soft_model.json"
    path.write_text(path.read_text().replace('"coef": 20.59375', '"coef": 15.0'))
    r = check_artifact(art, NAME)
    assert r.status == "tampered"
    text = " ".join(r.reasons)
    assert f"{NAME}: tampered: soft_model.json has sha256" in text
    assert "soft_model.json: does not load" in text  # its own content hash no longer matches


# ----- helpers -------------------------------------------------------------------------------


def test_first_difference_names_the_first_differing_field() -> None:
    soft = load_model(ART / "soft_model.json")
    hard = load_model(ART / "model.json")
    h, s = model_to_dict(hard), model_to_dict(soft)
    assert first_difference(h, s) is None  # only name, meta, kind and temperature differ
    s["layers"][2]["heads"][0]["mask"] = "none"
    assert first_difference(h, s) == "layers[2].heads[0].mask: 'none' in soft_model.json, " + (
        repr(h["layers"][2]["heads"][0]["mask"]) + " in model.json"
    )
    s = model_to_dict(soft)
    s["embedding"]["word"][1][1] = 0.5
    assert first_difference(h, s).startswith("embedding.word[1][1]: 0.5 in soft_model.json")
    s = model_to_dict(soft)
    s["layers"] = s["layers"][:-1]
    assert first_difference(h, s) == "layers: 4 entries in soft_model.json, 5 in model.json"


def test_decimal_upper_bound_is_the_smallest_six_digit_decimal_above() -> None:
    rng = random.Random(0)
    for _ in range(300):
        x = Fraction(rng.randrange(1, 10**12), rng.randrange(1, 10**12)) * Fraction(10) ** (
            rng.randrange(-12, 6)
        )
        s = _decimal_up(x)
        d = Fraction(s)
        assert d >= x
        digits = s.replace("-", "").split("E")[0].replace(".", "").lstrip("0")
        assert len(digits) <= 6
        # one unit in the sixth significant digit less is below x
        k = 0
        while Fraction(10) ** (k + 1) <= d:
            k += 1
        while Fraction(10) ** k > d:
            k -= 1
        assert d - Fraction(10) ** (k - 5) < x
    assert _decimal_up(Fraction(1, 2)) == "0.500000"


@pytest.mark.slow
def test_regeneration_reproduces_committed_bytes(tmp_path: Path) -> None:
    from attncert.proofcheck import regenerate

    # the prefix selects this artifact and its all-length sibling: both must reproduce
    written, skipped = regenerate(tmp_path, only=[NAME])
    names = [w.relative_to(tmp_path).as_posix() for w in written]
    assert names == [NAME, f"{NAME}-all-lengths"] and not skipped
    for name in names:
        committed = ART.parent / name.rsplit("/", 1)[1]
        for f in sorted(committed.iterdir()):
            assert (tmp_path / name / f.name).read_bytes() == f.read_bytes(), (name, f.name)


def test_committed_models_are_the_zoo_models() -> None:
    """The artifact is about the bundled models: if dyck.py changes them, regenerate."""
    from attncert.model import zoo_model

    for file, name in (("model.json", "dyck2_program"), ("soft_model.json", "dyck2_program_soft")):
        assert load_model(ART / file).digest == zoo_model(name).digest, (
            f"{file} is not zoo:{name}: run attncert proofs regenerate --only {NAME}"
        )


@pytest.mark.slow
def test_edited_uniform_heads_record_is_rejected(art: Path) -> None:
    _edit_json(art, "proof.json", lambda d: d["uniform_heads"].append("3.0"))
    _rehash(art)
    assert "proof.json: uniform_heads is ['0.0', '0.1', '0.2', '3.0']" in _reasons(art)


@pytest.mark.slow
def test_edited_expected_string_count_is_rejected(art: Path) -> None:
    _edit_json(art, "manifest.json", lambda d: d["expect"].__setitem__("strings", 341))
    assert "manifest.json: expect.strings is 341, recomputed 340" in _reasons(art)
