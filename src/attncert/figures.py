"""Saving matplotlib figures to files: the format follows the file's extension.

``plot.pdf`` gets PDF, ``plot.svg`` SVG, ``plot.png`` PNG; an extension outside
:data:`FORMATS` (or none) is refused before anything is computed or written, so a
file never holds data of another format than its name says. Files are written
atomically (:func:`attncert.io.write_atomic`).

    >>> figure_format("out/profile.PDF")
    'pdf'
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from attncert.errors import InputError
from attncert.io import check_output_path, write_atomic

#: Extensions attncert writes: matplotlib's Agg, PDF, SVG and PS back-ends and Pillow
#: (a dependency of matplotlib) render them without a display or LaTeX (so not ``.pgf``).
FORMATS = ("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


def figure_format(path: str | os.PathLike[str], where: str | None = None) -> str:
    """The file format named by ``path``'s extension; InputError if it is not in FORMATS."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        shown = f"extension '.{suffix}'" if suffix else "no extension"
        raise InputError(
            f"{str(path)!r} has {shown}, so its image format is unknown",
            where=where,
            expected="a file name ending in " + ", ".join("." + f for f in FORMATS),
        )
    return suffix


def check_figure_path(path: str | os.PathLike[str], where: str | None = None) -> str:
    """:func:`figure_format` plus :func:`attncert.io.check_output_path`; creates nothing."""
    fmt = figure_format(path, where)
    check_output_path(path, where)
    return fmt


def save_figure(fig: Any, path: str | os.PathLike[str], *, dpi: int = 120) -> Path:
    """Render ``fig`` in the format of ``path``'s extension and write it atomically."""
    fmt = check_figure_path(path)
    buf = io.BytesIO()
    fig.savefig(buf, format="jpeg" if fmt == "jpg" else fmt, dpi=dpi, bbox_inches="tight")
    return write_atomic(path, buf.getvalue())
