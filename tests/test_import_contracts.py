"""The import contracts of pyproject.toml (issue 18): the trusted kernel imports no solver,
no search code and no CLI; lower layers never import higher ones. Checked with
import-linter on the real import graph, and shown to fail on a planted violation."""

from __future__ import annotations

from pathlib import Path

import pytest

importlinter = pytest.importorskip("importlinter")

from importlinter.application import use_cases  # noqa: E402
from importlinter.application.app_config import settings  # noqa: E402
from importlinter.configuration import configure  # noqa: E402

configure()
use_cases._register_built_in_contract_types()  # what `lint-imports` does first

PYPROJECT = str(Path(__file__).resolve().parents[1] / "pyproject.toml")


def _report(plant: list[tuple[str, str]] = ()):
    user_options = use_cases.read_user_options(config_filename=PYPROJECT)
    builder = settings.GRAPH_BUILDER
    original = builder.build

    def build(*args, **kwargs):
        graph = original(*args, **kwargs)
        for importer, imported in plant:
            graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="")
        return graph

    builder.build = build
    try:
        return use_cases.create_report(user_options, cache_dir=None)
    finally:
        builder.build = original


def _broken(report) -> set[str]:
    assert not report.could_not_run and not report.invalid_contract_options
    return {c.name for c, check in report.get_contracts_and_checks() if not check.kept}


def test_the_contracts_hold_on_the_code():
    report = _report()
    assert len(report.contracts) >= 2
    assert not _broken(report), _broken(report)


@pytest.mark.parametrize(
    ("importer", "imported", "contract"),
    [
        ("attncert.kernel.hard", "attncert.hard.pipeline", "trusted kernel"),
        ("attncert.kernel.forward", "pysat", "trusted kernel"),
        ("attncert.arith.field", "z3", "trusted kernel"),
        ("attncert.model.spec", "attncert.kernel.forward", "Layers"),
        ("attncert.logic.syntax", "attncert.compile.compiler", "Layers"),
        ("attncert.kernel.hard", "attncert.cli.main", "trusted kernel"),
    ],
)
def test_a_planted_violation_is_caught(importer, imported, contract):
    broken = _broken(_report([(importer, imported)]))
    assert any(contract in name for name in broken), broken
