"""Render the executed notebooks as Markdown with their figures, for reading on the page.

    python docs/render_notebooks.py              # every notebooks/*.ipynb
    python docs/render_notebooks.py 03_soft      # those whose name contains 03_soft

Each notebook is executed from a clean kernel (as ``tests/test_notebooks.py`` does) and
written to ``docs/notebooks/<name>.md``: markdown cells as they are, code cells as
Python blocks, text outputs as text blocks, figures as PNG files in
``docs/notebooks/<name>_files/``. The first line records the sha256 of the notebook's
*source* (its cells without outputs); ``tests/test_notebook_rendering.py`` fails when a
notebook changed and its rendering was not regenerated. Outputs (timings, searched
values) may differ from run to run; the source may not.

The notebooks themselves stay committed without outputs (``tests/test_notebooks.py``).
Needs ``nbclient``, ``nbformat`` and ``ipykernel`` (the ``dev`` or ``notebooks`` extra).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "docs" / "notebooks"
TIMEOUT = 600  # seconds per cell
HEADER = re.compile(r"^<!-- rendered from (\S+) by docs/render_notebooks\.py; source sha256 (\w+)")
MAX_TEXT = 4000  # characters of one text output shown; longer ones are cut in the middle


def source_digest(nb: Any) -> str:
    """sha256 of the notebook's cells (type and source), outputs and metadata excluded."""
    cells = [[c["cell_type"], c["source"]] for c in nb["cells"]]
    return hashlib.sha256(json.dumps(cells, ensure_ascii=False).encode()).hexdigest()


def _text(text: str) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # ANSI colours of tracebacks
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT // 2] + "\n… (output shortened) …\n" + text[-MAX_TEXT // 2 :]
    return text.rstrip("\n")


def _fence(body: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in body:
        ticks += "`"
    return f"{ticks}{lang}\n{body}\n{ticks}"


def render(nb: Any, name: str, out_dir: Path) -> str:
    """The Markdown of an executed notebook; figures are written to ``<name>_files/``."""
    files = out_dir / f"{name}_files"
    parts = [
        f"<!-- rendered from notebooks/{name}.ipynb by docs/render_notebooks.py; source sha256 "
        f"{source_digest(nb)}; do not edit: change the notebook and re-run the script -->"
    ]
    figure = 0
    for index, cell in enumerate(nb["cells"], start=1):
        if cell["cell_type"] == "markdown":
            parts.append(cell["source"])
            continue
        if cell["cell_type"] != "code":
            continue
        parts.append(_fence(cell["source"], "python"))
        for out in cell.get("outputs", []):
            kind = out["output_type"]
            if kind == "stream":
                parts.append(_fence(_text(out["text"]), "text"))
            elif kind == "error":
                tb = "\n".join(out.get("traceback", [])) or f"{out['ename']}: {out['evalue']}"
                parts.append(_fence(_text(tb), "text"))
            elif kind in ("execute_result", "display_data"):
                data = out.get("data", {})
                if "image/png" in data:
                    figure += 1
                    files.mkdir(parents=True, exist_ok=True)
                    png = f"cell{index:02d}-{figure}.png"
                    (files / png).write_bytes(base64.b64decode(data["image/png"]))
                    parts.append(f"![figure {figure}]({name}_files/{png})")
                elif "text/markdown" in data:
                    parts.append(data["text/markdown"])
                elif "text/plain" in data:
                    parts.append(_fence(_text(data["text/plain"]), "text"))
    return "\n\n".join(parts) + "\n"


def execute(path: Path) -> Any:
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return nb


def title(md: str) -> str:
    """The first heading of a rendering (its notebook's title)."""
    m = re.search(r"^#\s+(.+)$", md, flags=re.M)
    return m.group(1).strip() if m else ""


def write_index(out_dir: Path) -> None:
    rows = []
    for md in sorted(out_dir.glob("*.md")):
        if md.name == "README.md":
            continue
        rows.append(f"- [{md.stem}]({md.name}) — {title(md.read_text(encoding='utf-8'))}")
    (out_dir / "README.md").write_text(
        "# The notebooks, executed\n\n"
        "Rendered by `python docs/render_notebooks.py` from `notebooks/` (which are committed\n"
        "without outputs and executed in CI by `tests/test_notebooks.py`). Open them live with\n"
        '`pip install -e ".[notebooks]"` and `jupyter lab notebooks/`.\n\n'
        + "\n".join(rows)
        + "\n",
        encoding="utf-8",
    )


def main(argv: list[str]) -> int:
    chosen = [
        p for p in sorted(NOTEBOOKS.glob("*.ipynb")) if not argv or any(a in p.stem for a in argv)
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    for path in chosen:
        print(f"executing {path.name} …", file=sys.stderr)
        nb = execute(path)
        shutil.rmtree(OUT / f"{path.stem}_files", ignore_errors=True)
        (OUT / f"{path.stem}.md").write_text(render(nb, path.stem, OUT), encoding="utf-8")
        print(f"wrote docs/notebooks/{path.stem}.md", file=sys.stderr)
    write_index(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
