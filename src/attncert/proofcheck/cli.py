"""The table ``attncert check DIR`` prints after re-verifying every proof artifact under
DIR (artifact, result, status, time); the command itself is in
:mod:`attncert.cli.commands.check`.
"""

from __future__ import annotations

from attncert.proofcheck.tree import TreeReport

__all__ = ["render"]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render(report: TreeReport) -> str:
    """The table of a tree check, followed by one line per failure reason."""
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
