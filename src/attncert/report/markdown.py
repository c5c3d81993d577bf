"""The report as Markdown (``report.md``): the summary first, then the same sections,
tables and notes as the HTML page, and the terms; plots are referenced as the SVG files
``plots/<name>.svg`` beside it. Anchors (``<a id="…">``) match the page's, so the
summary's links work in both."""

from __future__ import annotations

from typing import Any

from attncert.report.terms import TERMS, VERDICTS
from attncert.report.text import markdown as md

# a Report of attncert.report.document (not imported: document imports this)
Report = Any


def _cell(v) -> str:
    if isinstance(v, str) and v.startswith("certs/"):
        return f"[`{v}`]({v})"
    return md(v)


def render_markdown(report: Report) -> str:
    m = report.model
    out = [
        f"# attncert report: {m['name']}",
        "",
        "**In short.** " + " ".join(md(s) for s in report.lead),
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
            f'<a id="{s.key}"></a>',
            "",
            f"## {s.title}",
            "",
            f"- **Verdict**: `{s.verdict}` — {md(s.summary)}",
            *([f"- **Rule**: {md(s.rule)}"] if s.rule else []),
            *([f"- **Language**: {md(s.about)}"] if s.about else []),
            f"- **Theorem**: {md(s.theorem)}",
            f"- **Limits**: {md(s.limits)}",
            "",
        ]
        if s.rows:
            out.append("| " + " | ".join(md(c) for c in s.columns) + " |")
            out.append("|" + "---|" * len(s.columns))
            for row in s.rows:
                out.append("| " + " | ".join(_cell(v) for v in row) + " |")
            out.append("")
        if s.plot and s.plot in report.plots:
            out += [f"![{s.title}](plots/{s.plot}.svg)", ""]
        out += [f"- {md(n)}" for n in s.notes]
        if s.notes:
            out.append("")
        if s.certificates:
            out += ["Certificates: " + ", ".join(f"[`{c}`]({c})" for c in s.certificates), ""]
    out += ['<a id="terms"></a>', "", "## Terms used on this page", ""]
    out += [f'- <a id="term-{key}"></a>**{name}**: {text}' for key, (name, text) in TERMS.items()]
    out += [""] + [f"- `{word}`: {text}" for word, text in VERDICTS.items()] + [""]
    return "\n".join(out)
