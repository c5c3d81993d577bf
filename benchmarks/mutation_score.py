"""Mutation score of the trusted kernel (issue 25): how many wrong kernels the suite rejects.

For each trusted module (``kernel/{hard,soft,affine,...}.py``, ``arith/*.py``) this script
runs mutmut 3 (``pip install -e ".[mutation]"``) in a scratch project of its own under
``.mutation/<module>/`` (git-ignored): a copy of ``src/`` and ``tests/``, and a
``pyproject.toml`` whose ``[tool.mutmut]`` mutates that one module and whose test selection
is the module's few test files listed in :data:`MODULES`. mutmut records which tests call
each mutated function and runs only those (``-x``, one worker process, no xdist), so the
per-mutant cost is that of the tests that reach the mutated code.

Every mutant ends in one of four classes:

* **killed** — some test failed (or the run timed out / crashed) with the mutant in place;
* **equivalent** — listed in ``benchmarks/mutation_equivalent.toml`` with the reason it
  cannot be told apart from the original by any input (e.g. a rounding direction on a value
  that is discarded), or is *sound but looser* (a bound made wider, still sound) — which a
  soundness test cannot detect, and the table says so;
* **survived** — none of the above: a gap in the tests;
* (mutmut's "no tests": no selected test reaches the function — counted as survived.)

The score is killed / (mutants − equivalent). ``docs/mutation.md`` records the table.

Usage::

    python benchmarks/mutation_score.py                 # every module (hours on 1 core)
    python benchmarks/mutation_score.py arith/filter    # one module (resumes a cached run)
    python benchmarks/mutation_score.py --table         # the table from cached results
    python benchmarks/mutation_score.py --survivors arith/filter   # diff of each survivor
    python benchmarks/mutation_score.py --fresh ...     # discard the cached results first

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import tomllib
import zlib
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutation"
EQUIVALENT = ROOT / "benchmarks" / "mutation_equivalent.toml"

# module (relative to src/attncert, without .py) -> the test files (or node ids) that
# exercise it; chosen by coverage and run time (the cheapest set that reaches the module).
MODULES: dict[str, list[str]] = {
    # --- issue 34: core, soft box propagation, uniform, verify, counting (helper a)
    "kernel/core/bounds": [
        "tests/test_mutation_kills_core_bounds.py",
        "tests/test_soft_certified_arith.py",
        "tests/test_soft_certified_bounds.py",
        "tests/test_soft_certified_decoders.py",
    ],
    "kernel/core/failure": [
        "tests/test_mutation_kills_core_failure.py",
        "tests/test_kernel_soft_tamper.py",
    ],
    # the box propagation against every string, and the soft certificate's tamper tests
    **{
        module: [
            "tests/test_mutation_kills_soft_propagate.py",
            "tests/test_mutation_kills_soft_heads.py",
            "tests/test_mutation_kills_soft_readout.py",
            "tests/test_kernel_soft_tamper.py",
            "tests/test_soft_certified_bounds.py",
            "tests/test_soft_certified_decoders.py",
        ]
        for module in ("kernel/soft/propagate", "kernel/soft/heads", "kernel/soft/readout")
    },
    # the batched logit bounds against float and arb logits, and the verify trees that use
    # them (not the seconds-long proofs at n = 1024 or of a trained model)
    "kernel/soft/batch": [
        "tests/test_mutation_kills_soft_batch.py",
        "tests/test_verify.py",
        "-k",
        "batched or small_n or bound_leaves or bound_leaf or positive_exp or mutation_kills",
    ],
    # (not the committed proofs/ artifacts: the scratch project has none; not the CLI)
    "kernel/uniform/checker": [
        "tests/test_mutation_kills_uniform_checker.py",
        "tests/test_soft_uniform_kernel.py",
        "tests/test_soft_uniform_decoders.py",
        "tests/test_soft_uniform.py",
        "-k",
        "not committed and not artifact and not cli",
    ],
    "kernel/uniform/propagate": [
        "tests/test_mutation_kills_uniform_propagate.py",
        "tests/test_soft_uniform_decoders.py",
        "tests/test_soft_uniform_kernel.py",
        "tests/test_soft_uniform.py",
        "-k",
        "not committed and not artifact and not cli",
    ],
    "kernel/uniform/classes": [
        "tests/test_mutation_kills_uniform_classes.py",
        "tests/test_soft_uniform_kernel.py",
        "tests/test_soft_uniform.py",
        "-k",
        "not committed and not artifact and not cli",
    ],
    "kernel/uniform/dyadic": [
        "tests/test_mutation_kills_uniform_dyadic.py",
        "tests/test_soft_uniform_kernel.py",
        "-k",
        "not committed and not artifact and not cli",
    ],
    # the verify trees and their tamper tests (not the import policy, the CLI, nor the
    # seconds-long proofs of a trained model or at n = 1024)
    "kernel/verify/checker": [
        "tests/test_mutation_kills_verify.py",
        "tests/test_verify.py",
        "tests/test_verify_witness.py",
        "-k",
        "not imports and not cli and not theorem_1_6 and not n_1024 and not runs_no_witness"
        " and not overrun_the_time_limit",
    ],
    # the exact counts against enumeration and at large n
    "languages/counting": [
        "tests/test_mutation_kills_counting.py",
        "tests/test_verify.py",
        "-k",
        "counts or completions or small_n or bound_leaf or mutation_kills",
    ],
    "arith/field": [
        "tests/test_mutation_kills_arith_field.py",
        "tests/test_arith_field_decisions.py",
        "tests/test_arith_enclose.py",
    ],
    "arith/filter": [
        "tests/test_mutation_kills_arith_filter.py",
        "tests/test_arith_enclosure_soundness.py",
        "tests/test_scale_paths.py",
    ],
    # (and the RoPE / ALiBi / parallel-residual enclosures, through the soft batch bounds)
    "arith/enclose": [
        "tests/test_mutation_kills_arith_enclose.py",
        "tests/test_arith_enclosure_soundness.py",
        "tests/test_arith_enclose.py",
        "tests/test_model_v3.py::test_every_evaluator_agrees_on_every_kind",
    ],
    # moved out of the trusted base by issue 41 (untrusted now, still measured): the thread
    # count the search and the kernel's callers use (arith/threads before), and S1 on a
    # certified instance, printed after the verdict (kernel/hard/s1 before)
    "hard/threads": ["tests/test_ranking_threads.py"],
    "hard/s1_instance": [
        "tests/test_mutation_kills_hard_s1.py",
        "tests/test_kernel_s1_values.py",
        "tests/test_kernel_s1.py",
    ],
    # issue 41: the certificate readers the soft and length-uniform checkers read through,
    # and the JSON reader (the reading half of the former io)
    "certificates/soft": [
        "tests/test_kernel_soft_tamper.py",
        "tests/test_mutation_kills_soft_checker.py",
    ],
    "certificates/uniform": [
        "tests/test_soft_uniform_kernel.py",
        "-k",
        "not committed and not artifact and not cli",
    ],
    "jsonread": ["tests/test_io_files.py", "tests/test_cli_fuzz.py"],
    "kernel/hard/decide": [
        "tests/test_mutation_kills_hard_decide.py",
        "tests/test_kernel_forward_agreement.py",
        "tests/test_scale_paths.py",
        "tests/test_scale_agreement.py",
    ],
    "kernel/core/trace": [
        "tests/test_mutation_kills_core_trace.py",
        "tests/test_kernel_trace_agreement.py",
        "tests/test_float_ties.py",
        "tests/test_scale_paths.py",
        "tests/test_hard_checker.py",
        "tests/test_model_v3.py::test_every_evaluator_agrees_on_every_kind",
    ],
    "arith/positionwise": [
        "tests/test_mutation_kills_arith_positionwise.py",
        "tests/test_arith_enclosure_soundness.py",
        "tests/test_arith_enclose.py",
        "tests/test_scale_agreement.py",
        # RoPE, ALiBi, SwiGLU/SiLU and parallel residual in the rigorous forward pass
        "tests/test_model_v3.py::test_every_evaluator_agrees_on_every_kind",
    ],
    "arith/rows": [
        "tests/test_mutation_kills_arith_rows.py",
        "tests/test_kernel_forward_agreement.py",
        "tests/test_arith_enclosure_soundness.py",
        "tests/test_scale_paths.py",
        "tests/test_float_ties.py",
        "tests/test_scale_agreement.py",
        # a positional (ALiBi) model: rows keep their positions
        "tests/test_model_v3.py::test_hard_certificates_for_positional_scores_against_brute_force[leftmost-alibi]",
    ],
    "kernel/hard/checker": [
        "tests/test_mutation_kills_hard_checker.py",
        "tests/test_kernel_hard_tamper.py",
        "tests/test_witness.py",
        "tests/test_hard_checker.py",
        "tests/test_scale_agreement.py",
        # (not the stored-proof loading test: the scratch project has no proofs/)
        "-k",
        "not an_old_certificate",
    ],
    "kernel/hard/layers": [
        "tests/test_mutation_kills_hard_layers.py",
        "tests/test_kernel_layers_oracle.py",
        "tests/test_kernel_hard_tamper.py",
        "tests/test_hard_checker.py",
        "tests/test_scale_agreement.py",
        "tests/test_ranking_threads.py",
        # a positional average-hard model: projections at each row's position, two-way ties
        "tests/test_model_v3.py::test_hard_certificates_for_positional_scores_against_brute_force[average-alibi]",
    ],
    # (not the import-policy tests: they read the mutated source, where mutmut's
    # trampolines import mutmut itself)
    "kernel/soft/checker": [
        "tests/test_mutation_kills_soft_checker.py",
        "tests/test_kernel_soft_tamper.py",
        "tests/test_kernel_soft.py",
        "-k",
        "not imports",
    ],
    # Theorem 26 at every length (not the artifact and CLI tests: the scratch project has
    # no proofs/, and the CLI runs the untrusted search)
    **{
        module: [
            *kills,
            "tests/test_kernel_tieless_program.py",
            "tests/test_kernel_tieless_all_lengths.py",
            "-k",
            "not artifact and not cli",
        ]
        for module, kills in {
            "kernel/tieless/program": ["tests/test_mutation_kills_tieless_program.py"],
            "kernel/tieless/checker": ["tests/test_mutation_kills_tieless_checker.py"],
        }.items()
    },
    # the affine forms' operations against brute force (cheap), then as below
    **{
        module: [
            *kills,
            "tests/test_kernel_affine_forms.py",
            "tests/test_affine_decoders.py",
            "tests/test_kernel_soft_affine_mean.py",
            "tests/test_kernel_soft_affine.py",
            "-k",
            "not search and not re_derives and not verify_decides",
        ]
        for module, kills in {
            "kernel/soft/affine/forms": ["tests/test_mutation_kills_soft_affine_forms.py"],
            "kernel/soft/affine/rows": ["tests/test_mutation_kills_soft_affine_rows.py"],
        }.items()
    },
    # the affine modules: the brute-force soundness and tightness tests, not the ones that
    # run a restriction search first (7 s of untrusted search per mutant)
    "kernel/soft/affine/bound": [
        "tests/test_mutation_kills_soft_affine_bound.py",
        "tests/test_affine_decoders.py",
        "tests/test_kernel_soft_affine_mean.py",
        "tests/test_kernel_soft_affine.py",
        "-k",
        "not search and not re_derives and not verify_decides",
    ],
    **{
        module: [
            "tests/test_mutation_kills_soft_affine_heads.py",
            "tests/test_affine_decoders.py",
            "tests/test_kernel_soft_affine_mean.py",
            "tests/test_kernel_soft_affine.py",
            "-k",
            "not search and not re_derives and not verify_decides",
        ]
        for module in ("kernel/soft/affine/heads",)
    },
    # --- issue 34: all lengths, tieless polynomial (helper b)
    # the all-lengths checker and its closed forms (not the artifact tests: the scratch
    # project has no proofs/; not the CLI ones: they run the untrusted search)
    **{
        module: [
            *kills,
            "tests/test_all_lengths.py",
            "tests/test_all_lengths_constructions.py",
            "-k",
            "not artifact and not cli",
        ]
        for module, kills in {
            "kernel/all_lengths/closed_form": ["tests/test_mutation_kills_closed_form.py"],
            "kernel/all_lengths/view": ["tests/test_mutation_kills_all_lengths_view.py"],
            "kernel/all_lengths/heads": ["tests/test_mutation_kills_all_lengths_heads.py"],
            "kernel/all_lengths/gadgets": ["tests/test_mutation_kills_all_lengths_gadgets.py"],
            "kernel/all_lengths/counting": ["tests/test_mutation_kills_all_lengths_counting.py"],
            "kernel/all_lengths/checker": ["tests/test_mutation_kills_all_lengths_checker.py"],
        }.items()
    },
    # the polynomial algebra of Theorem 26's symbolic run (as kernel/tieless/program)
    "kernel/tieless/polynomial": [
        "tests/test_mutation_kills_polynomial.py",
        "tests/test_kernel_tieless_program.py",
        "tests/test_kernel_tieless_all_lengths.py",
        "-k",
        "not artifact and not cli",
    ],
}

# pytest options of every run: one process (no xdist), the default marker selection, and
# no cache (the scratch copies must not write into each other's state)
PYTEST_ARGS = ["-p", "no:xdist", "-p", "no:cacheprovider", "-m", "not slow", "-W", "ignore"]


def _mutmut_config(module: str) -> str:
    lines = [
        "[tool.mutmut]",
        'source_paths = ["src"]',
        'also_copy = ["benchmarks/"]',  # some tests import a benchmark's helpers
        f'only_mutate = ["src/attncert/{module}.py"]',
        f"pytest_add_cli_args_test_selection = {json.dumps(MODULES[module])}",
        f"pytest_add_cli_args = {json.dumps(PYTEST_ARGS)}",
        "timeout_multiplier = 10.0",
        # each mutant runs in a process forked from a server that has only collected the
        # tests: forking from mutmut's main process (the default) would hand every mutant
        # the caches (functools.cache: GELU tables, model maps) that the clean run filled
        # with the original code, and mutants of the code that fills them would never run
        'process_isolation = "forkserver"',
        'forkserver_warmup = "collect"',
        "use_git_change_detection = false",
        "",
        "[tool.pytest.ini_options]",
        'testpaths = ["tests"]',
        "markers = [",
        '    "slow: long-running tests",',
        '    "notebooks: executes the notebooks",',
        "]",
        "",
    ]
    return "\n".join(lines)


def _slug(module: str) -> str:
    return module.replace("/", ".")


def prepare(module: str, *, fresh: bool) -> Path:
    """The scratch project of ``module``: src/ and tests/ copied afresh, the config written."""
    work = WORK / _slug(module)
    if fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for sub in ("src", "tests", "benchmarks"):
        if (work / sub).exists():
            shutil.rmtree(work / sub)
        shutil.copytree(
            ROOT / sub, work / sub, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
    (work / "pyproject.toml").write_text(_mutmut_config(module))
    # mutmut re-traces only *new* tests: when the sources or the tests changed, the record
    # of which tests reach which function is stale (a new function would have "no tests"),
    # so it is discarded and collected again (the mutants' results are kept)
    stamp, now = work / "sources.crc", _fingerprint(work)
    stats = work / "mutants" / "mutmut-stats.json"
    if stats.exists() and (not stamp.exists() or stamp.read_text() != now):
        stats.unlink()
    stamp.write_text(now)
    conftest = work / "tests" / "conftest.py"
    conftest.write_text((conftest.read_text() if conftest.exists() else "") + CLEAR_CACHES)
    return work


def _fingerprint(work: Path) -> str:
    """A CRC-32 of every Python file under the scratch copy's src/, tests/ and benchmarks/."""
    crc = 0
    for sub in ("src", "tests", "benchmarks"):
        for path in sorted((work / sub).rglob("*.py")):
            crc = zlib.crc32(str(path.relative_to(work)).encode(), crc)
            crc = zlib.crc32(path.read_bytes(), crc)
    return f"{crc:08x}"


# appended to the scratch copy's tests/conftest.py: every test starts with attncert's
# function caches empty, so that mutmut records every test that runs the code filling
# them (the GELU tables, model maps) — not only the first one of the session — and runs
# those tests against each mutant of that code
CLEAR_CACHES = """

import sys as _mutation_sys

import pytest as _mutation_pytest


@_mutation_pytest.fixture(autouse=True)
def _mutation_clear_caches():
    for name, mod in list(_mutation_sys.modules.items()):
        if name.startswith("attncert."):
            for value in list(vars(mod).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear):
                    clear()
    yield
"""


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    # mutmut puts mutants/src first on its own sys.path; tests that start a subprocess
    # (`python -m attncert.cli.main …`) need it too, or they would run an installed copy
    env["PYTHONPATH"] = str(work / "mutants" / "src")
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    env["MKL_NUM_THREADS"] = "1"
    return env


def sample(names: list[str], size: int) -> list[str]:
    """The mutants a run tests: all of them if at most ``size``, else the ``size`` whose
    CRC-32 of the name is smallest — a fixed pseudo-random sample, the same on every run
    (mutmut numbers the mutants of each function in source order, so the names, and the
    sample, stay put while the module's source does). The CRC is of the name without its
    module path (``x_check__mutmut_12``), so moving a module keeps its sample."""
    if size <= 0 or len(names) <= size:
        return sorted(names)

    def key(name: str) -> tuple[int, str]:
        local = name.rsplit(".", 1)[-1]
        return zlib.crc32(local.encode()), name

    return sorted(sorted(names, key=key)[:size])


def _mutmut(work: Path, args: list[str], log: Path) -> int:
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", "1", *args]
    with log.open("a") as out:
        proc = subprocess.run(cmd, cwd=work, env=_env(work), stdout=out, stderr=subprocess.STDOUT)
    return proc.returncode


def run(module: str, *, fresh: bool, size: int, rerun: bool = False) -> float:
    """Run (or resume) mutmut on ``module``'s sample; returns the seconds this call took.

    With ``rerun``, only the sample's survivors (after new tests) and its untested mutants.
    """
    work = prepare(module, fresh=fresh)
    log = work / "run.log"
    start = time.perf_counter()
    # generate the mutants (again: mutmut regenerates a changed source file and forgets the
    # results of the functions whose text changed) and collect which tests reach which
    # function (only the new tests' when cached); the pattern matches no mutant, so mutmut
    # stops there (by an assertion) — the sample is drawn from the current names only
    _mutmut(work, ["attncert.no.such.module.*"], log)
    done = results(module)
    chosen = sample(list(done), size)
    (work / "sample.json").write_text(json.dumps({"size": size, "mutants": chosen}))
    todo = [n for n in chosen if done.get(n) is None]
    if rerun:
        todo += classify(module)["survived"]
    if todo:
        code = _mutmut(work, todo, log)
        if code != 0:
            print(f"{module}: mutmut exited {code}; see {log}", file=sys.stderr)
    seconds = time.perf_counter() - start
    spent = WORK / _slug(module) / "seconds.txt"
    before = float(spent.read_text()) if spent.exists() and not fresh else 0.0
    spent.write_text(f"{before + seconds:.1f}\n")
    return seconds


# mutants tested per module: the whole module when it has at most this many, else a fixed
# pseudo-random sample (see :func:`sample`); the ~20,000 mutants in all take days on one
# core. 50 per module since issue 34 (every kernel module measured, 37 of them); 100
# before, for the 18 modules then measured
SAMPLE = 50
SAMPLE_BY_MODULE: dict[str, int] = {}


def sample_size(module: str, size: int | None) -> int:
    """The sample size of ``module``: ``size`` if given, else its default."""
    return size if size is not None else SAMPLE_BY_MODULE.get(module, SAMPLE)


KILLED = {1, 3, 36, 24, -24, 152, 255, -11, -9}


def results(module: str) -> dict[str, int | None]:
    """mutant name -> mutmut's exit code (None: not run yet), from the scratch project."""
    meta = WORK / _slug(module) / "mutants" / "src" / "attncert" / f"{module}.py.meta"
    if not meta.exists():
        return {}
    return dict(json.loads(meta.read_text())["exit_code_by_key"])


def equivalent() -> dict[str, dict[str, str]]:
    """The documented equivalent mutants: name -> {kind, reason}."""
    if not EQUIVALENT.exists():
        return {}
    data = tomllib.loads(EQUIVALENT.read_text())
    return {name: entry for name, entry in data.get("mutant", {}).items()}


def chosen(module: str) -> list[str]:
    """The mutants of the module's last run (its sample)."""
    path = WORK / _slug(module) / "sample.json"
    return json.loads(path.read_text())["mutants"] if path.exists() else []


def classify(module: str) -> dict[str, list[str]]:
    eq = equivalent()
    out: dict[str, list[str]] = {"killed": [], "equivalent": [], "survived": [], "pending": []}
    codes = results(module)
    for name in chosen(module):
        code = codes.get(name)
        if code is None:
            out["pending"].append(name)
        elif code in KILLED:
            out["killed"].append(name)
        elif name in eq:
            out["equivalent"].append(name)
        else:
            out["survived"].append(name)
    return out


def table(modules: list[str]) -> str:
    rows = [
        "| module | mutants (all) | tested | killed | equivalent | survived | score | run time |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    totals = [0, 0, 0, 0]
    everything = 0
    for module in modules:
        c = classify(module)
        n = sum(len(v) for v in c.values())
        total = len(results(module))
        everything += total
        k, e, s = len(c["killed"]), len(c["equivalent"]), len(c["survived"]) + len(c["pending"])
        score = f"{100 * k / (n - e):.1f} %" if n > e else "—"
        seconds_file = WORK / _slug(module) / "seconds.txt"
        secs = f"{float(seconds_file.read_text()):.0f} s" if seconds_file.exists() else "—"
        rows.append(f"| {module}.py | {total} | {n} | {k} | {e} | {s} | {score} | {secs} |")
        for i, x in enumerate((n, k, e, s)):
            totals[i] += x
    n, k, e, s = totals
    score = f"{100 * k / (n - e):.1f} %" if n > e else "—"
    rows.append(f"| **total** | {everything} | {n} | {k} | {e} | {s} | {score} | |")
    return "\n".join(rows)


def equivalents_table(modules: list[str]) -> str:
    """The documented equivalent mutants of the modules' samples, as a markdown table."""
    eq = equivalent()
    rows = ["| module | mutant | kind | change | why |", "| --- | --- | --- | --- | --- |"]
    for module in modules:
        for name in classify(module)["equivalent"]:
            e = eq[name]
            short = name.split(".")[-1]
            rows.append(
                f"| {module}.py | `{short}` | {e['kind']} | {e.get('change', '')} | {e['reason']} |"
            )
    return "\n".join(rows)


def tests_table(modules: list[str]) -> str:
    rows = ["| module | tests run against its mutants |", "| --- | --- |"]
    for module in modules:
        args = MODULES[module]
        files = [a.removeprefix("tests/") for a in args if a.startswith("tests/")]
        extra = " ".join(a for a in args if not a.startswith("tests/"))
        text = ", ".join(f"`{f}`" for f in files) + (f" (`{extra}`)" if extra else "")
        rows.append(f"| {module}.py | {text} |")
    return "\n".join(rows)


def survivors_table(modules: list[str]) -> str:
    rows = ["| module | mutant | change | status |", "| --- | --- | --- | --- |"]
    for module in modules:
        c = classify(module)
        for name in c["survived"] + c["pending"]:
            diff = _diff(module, name)
            lines = [
                ln for ln in diff.splitlines() if ln[:1] in "-+" and ln[:3] not in ("---", "+++")
            ]
            old = " ".join(ln[1:].strip() for ln in lines if ln.startswith("-"))
            new = " ".join(ln[1:].strip() for ln in lines if ln.startswith("+"))
            status = "not run" if name in c["pending"] else "survived"
            old, new = old.replace("|", "\\|"), new.replace("|", "\\|")
            rows.append(f"| {module}.py | `{name.split('.')[-1]}` | `{old}` → `{new}` | {status} |")
    return "\n".join(rows)


def _cpu() -> str:
    """The processor's model name (Linux), else the platform's."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_docs(modules: list[str]) -> None:
    """Fill the generated parts of docs/mutation.md (between <!-- name --> markers)."""
    doc = ROOT / "docs" / "mutation.md"
    text = doc.read_text()
    sizes = sorted(
        {
            json.loads((WORK / _slug(m) / "sample.json").read_text())["size"]
            for m in modules
            if (WORK / _slug(m) / "sample.json").exists()
        }
    )
    header = (
        f"Run of {date.today().isoformat()} on a {os.cpu_count()}-core {_cpu()} VM (shared "
        f"with other jobs; Python {platform.python_version()}, mutmut 3.8.1); sample sizes "
        f"{' and '.join(map(str, sizes))} (see *tested*)."
    )
    parts = {
        "results": header + "\n\n" + table(modules),
        "tests": tests_table(modules),
        "equivalents": equivalents_table(modules),
        "survivors": survivors_table(modules),
    }
    for name, body in parts.items():
        start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
        a, b = text.index(start) + len(start), text.index(end)
        text = text[:a] + "\n" + body + "\n" + text[b:]
    doc.write_text(text)


def _diff(module: str, name: str) -> str:
    work = WORK / _slug(module)
    proc = subprocess.run(
        [sys.executable, "-m", "mutmut", "show", name],
        cwd=work,
        env=_env(work),
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip()


def survivors(module: str, *, markdown: bool = False) -> None:
    c = classify(module)
    for name in c["survived"] + c["pending"]:
        diff = _diff(module, name)
        if not markdown:
            print(diff + "\n")
            continue
        lines = [ln for ln in diff.splitlines() if ln[:1] in "-+" and ln[:3] not in ("---", "+++")]
        old = " ".join(ln[1:].strip() for ln in lines if ln.startswith("-"))
        new = " ".join(ln[1:].strip() for ln in lines if ln.startswith("+"))
        status = "not run" if name in c["pending"] else "survived"
        print(f"| {module}.py | `{name.split('.')[-1]}` | `{old}` → `{new}` | {status} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "modules", nargs="*", help="e.g. arith/filter kernel/hard/checker (default: all)"
    )
    parser.add_argument("--table", action="store_true", help="print the table from the cache")
    parser.add_argument("--survivors", action="store_true", help="show each survivor's diff")
    parser.add_argument(
        "--equivalents", action="store_true", help="the equivalent mutants as a markdown table"
    )
    parser.add_argument("--markdown", action="store_true", help="--survivors as table rows")
    parser.add_argument(
        "--docs", action="store_true", help="rewrite the generated parts of docs/mutation.md"
    )
    parser.add_argument("--fresh", action="store_true", help="discard cached results first")
    parser.add_argument(
        "--size",
        type=int,
        default=None,
        help=f"mutants tested per module (default {SAMPLE}; 0: all)",
    )
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="run the sample's survivors again (after new tests); with one module only",
    )
    args = parser.parse_args(argv)
    modules = args.modules or list(MODULES)
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        print(f"unknown module(s) {unknown}; expected some of {list(MODULES)}", file=sys.stderr)
        return 2
    if args.survivors:
        for module in modules:
            survivors(module, markdown=args.markdown)
        return 0
    if args.equivalents:
        print(equivalents_table(modules))
        return 0
    if args.docs:
        # always the whole table: a run of one module must not drop the others' rows
        write_docs(list(MODULES))
        return 0
    if args.rerun:
        for module in modules:
            seconds = run(module, fresh=False, size=sample_size(module, args.size), rerun=True)
            print(f"{module}: survivors and untested mutants run in {seconds:.0f} s", flush=True)
    elif not args.table:
        for module in modules:
            seconds = run(module, fresh=args.fresh, size=sample_size(module, args.size))
            print(f"{module}: {seconds:.0f} s", flush=True)
    print(
        f"{date.today().isoformat()}, {platform.node()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}"
    )
    print(table(modules))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
