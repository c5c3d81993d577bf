"""Every notebook executes from a clean kernel without errors, and its figures render
(issue 8). Marked ``notebooks``; part of the default run (``.ci/run``).

A notebook "has plots" if its code uses matplotlib or an ``attncert`` plotting helper
(``plot``/``plt.``/``figure``); then at least one ``image/png`` output is required.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
TIMEOUT = 300  # seconds per cell and per notebook
PLOTS = re.compile(r"\bplt\.|matplotlib|\bplot\w*\(|\.figure\(")


def _outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield from cell.get("outputs", [])


def notebook_problems(path: Path) -> list[str]:
    """Execute ``path`` from a clean kernel; the problems found (empty = clean)."""
    nb = nbformat.read(path, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    problems = []
    if any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
        problems.append(f"{path.name} is committed with outputs (save it with outputs cleared)")
    client = nbclient.NotebookClient(
        nb,
        timeout=TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=True,
    )
    client.execute()
    outputs = list(_outputs(nb))
    problems.extend(
        f"{path.name}: {o.ename}: {o.evalue}" for o in outputs if o.output_type == "error"
    )
    problems.extend(
        f"{path.name}: traceback on stderr: {o.text[:300]}"
        for o in outputs
        if o.output_type == "stream" and o.name == "stderr" and "Traceback" in o.text
    )
    if PLOTS.search(code) and not any(
        o.output_type in ("display_data", "execute_result") and "image/png" in o.get("data", {})
        for o in outputs
    ):
        problems.append(f"{path.name} draws figures but no image/png output rendered")
    return problems


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_cleanly(path: Path) -> None:
    assert notebook_problems(path) == []


@pytest.mark.notebooks
def test_the_notebook_check_catches_errors_and_missing_figures(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import matplotlib\nmatplotlib.use('Agg')\nx = 1"),
        nbformat.v4.new_code_cell("1 / 0"),
    ]
    path = tmp_path / "bad.ipynb"
    nbformat.write(nb, path)
    problems = notebook_problems(path)
    assert any("ZeroDivisionError" in p for p in problems)
    assert any("no image/png" in p for p in problems)


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "notebooks/ holds no .ipynb"
