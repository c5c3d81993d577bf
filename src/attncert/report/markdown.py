"""The report as Markdown (``report.md``): the same sections, tables and notes as the HTML
page; plots are referenced as the SVG files ``plots/<name>.svg`` beside it."""

from __future__ import annotations

from typing import Any

# a Report of attncert.report.document (not imported: document imports this)
Report = Any


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    m = report.model
    out = [
        f"# attncert report: {m['name']}",
        "",
        f"Language `{report.language}`, lengths n = {', '.join(map(str, report.ns))}; "
        f"model hash `{m['sha256'][:16]}…`. "
        + (
            "Every cell finished."
            if report.complete
            else f"Incomplete: {', '.join(report.failed)}."
        ),
        "",
    ]
    for s in report.sections:
        out += [
            f"## {s.title}",
            "",
            f"- **Verdict**: `{s.verdict}` — {s.summary}",
            *([f"- **Rule**: {s.rule}"] if s.rule else []),
            f"- **Theorem**: {s.theorem}",
            f"- **Limits**: {s.limits}",
            "",
        ]
        if s.rows:
            out.append("| " + " | ".join(_esc(c) for c in s.columns) + " |")
            out.append("|" + "---|" * len(s.columns))
            for row in s.rows:
                cells = [f"[`{v}`]({v})" if v.startswith("certs/") else _esc(v) for v in row]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
        if s.plot and s.plot in report.plots:
            out += [f"![{s.title}](plots/{s.plot}.svg)", ""]
        out += [f"- {_esc(n)}" for n in s.notes]
        if s.notes:
            out.append("")
        if s.certificates:
            out += ["Certificates: " + ", ".join(f"[`{c}`]({c})" for c in s.certificates), ""]
    return "\n".join(out)
