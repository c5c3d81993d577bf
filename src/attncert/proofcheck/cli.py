"""``attncert check DIR``: re-verify every proof artifact under DIR and print a table
(artifact, result, status, time); exit 0 if all are verified, 1 otherwise (2 bad input).
"""

from __future__ import annotations

import sys
from pathlib import Path

from attncert.proofcheck.tree import TreeReport, check_tree

__all__ = ["render", "run_tree"]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render(report: TreeReport) -> str:
    """The table of :func:`run_tree`, followed by one line per failure reason."""
    rows = [
        (r.artifact, r.result, r.status.upper() if not r.ok else "ok", f"{r.seconds:.2f}s")
        for r in report.results
    ]
    head = ("artifact", "result", "status", "time")
    widths = [
        min(max(len(h), *(len(row[i]) for row in rows)), cap)
        for i, (h, cap) in enumerate(zip(head, (56, 48, 9, 8), strict=True))
    ]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(_clip(c, w).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [line(head), line(tuple("-" * w for w in widths))]
    out.extend(line(row) for row in rows)
    failed = report.failed
    out.append(
        f"{len(report.results) - len(failed)}/{len(report.results)} artifacts verified "
        f"in {report.seconds:.1f} s"
    )
    for r in failed:
        out.extend(f"FAIL {reason}" for reason in r.reasons)
    return "\n".join(out)


def run_tree(path: str | Path, as_json: bool = False) -> int:
    """Check the tree at ``path``; print the table (or JSON); return the exit code."""
    interactive = not as_json and sys.stderr.isatty()
    report = check_tree(
        path, progress=(lambda name: print(f"… {name}", file=sys.stderr)) if interactive else None
    )
    if as_json:
        from attncert.cli.common import print_json

        print_json(report.as_dict())
    else:
        print(render(report))
    return 0 if report.ok else 1
