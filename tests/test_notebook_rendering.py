"""The executed notebooks are readable on the page (issue 19, item 6): ``docs/notebooks/``
holds a Markdown rendering of each notebook with its figures, made by
``docs/render_notebooks.py``, and it is current — each rendering records the sha256 of
its notebook's source, so editing a notebook without re-rendering fails here. (Outputs
themselves may vary between runs; the notebooks' execution is checked by
``tests/test_notebooks.py``.)"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
RENDERED = ROOT / "docs" / "notebooks"


def _renderer():
    spec = importlib.util.spec_from_file_location(
        "render_notebooks", ROOT / "docs" / "render_notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


R = _renderer()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_rendering_is_current(path: Path) -> None:
    md_path = RENDERED / f"{path.stem}.md"
    assert md_path.exists(), f"no rendering of {path.name}: run python docs/render_notebooks.py"
    md = md_path.read_text(encoding="utf-8")
    m = R.HEADER.match(md)
    assert m and m.group(1) == f"notebooks/{path.name}", md[:200]
    nb = nbformat.read(path, as_version=4)
    assert m.group(2) == R.source_digest(nb), (
        f"docs/notebooks/{path.stem}.md is stale: {path.name} changed since it was rendered; "
        f"run python docs/render_notebooks.py {path.stem}"
    )
    for cell in nb.cells:  # every code cell is shown, and it ran without error
        if cell.cell_type == "code" and cell.source.strip():
            assert cell.source in md
    assert "Traceback (most recent call last)" not in md
    for link in re.findall(r"\]\(([^)]+\.png)\)", md):
        assert (RENDERED / link).is_file(), link
    index = (RENDERED / "README.md").read_text(encoding="utf-8")
    assert f"({path.stem}.md)" in index


def test_notebooks_with_figures_show_them() -> None:
    figures = [p.stem for p in NOTEBOOKS if "![figure" in (RENDERED / f"{p.stem}.md").read_text()]
    assert len(figures) >= 3, figures


def test_the_renderer_on_a_small_executed_notebook(tmp_path: Path) -> None:
    import base64

    nb = nbformat.v4.new_notebook()
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    code = nbformat.v4.new_code_cell("print('hi')\n1 + 1")
    code.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="hi\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1),
        nbformat.v4.new_output("display_data", data={"image/png": png}),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title\ntext"), code]
    md = R.render(nb, "demo", tmp_path)
    assert R.HEADER.match(md).group(2) == R.source_digest(nb)
    assert "# Title" in md and "```python\nprint('hi')\n1 + 1\n```" in md
    assert "```text\nhi\n```" in md and "```text\n2\n```" in md
    assert "![figure 1](demo_files/cell02-1.png)" in md
    assert (tmp_path / "demo_files" / "cell02-1.png").read_bytes().startswith(b"\x89PNG")
    assert R.title(md) == "Title"
    # the digest follows the source, not the outputs
    before = R.source_digest(nb)
    code.outputs = []
    assert R.source_digest(nb) == before
    code.source += "\n2 + 2"
    assert R.source_digest(nb) != before
