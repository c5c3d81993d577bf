"""The report as one self-contained HTML page: inline CSS, plots as inline SVG, no script,
no font, image or style sheet fetched from anywhere (readable offline)."""

from __future__ import annotations

from html import escape
from typing import Any

# a Report / Section of attncert.report.document (not imported: document imports this)
Report = Section = Any

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #d0d0d0; padding: 0.25em 0.6em; text-align: left;
         vertical-align: top; }
th { background: #f3f3f3; }
.verdict { display: inline-block; padding: 0.1em 0.55em; border-radius: 0.3em;
           font-weight: 600; font-family: ui-monospace, monospace; font-size: 0.95em; }
.v-CERTIFIED { background: #d8f3dc; } .v-CERTIFIED-TRIVIAL { background: #fff3bf; }
.v-OUTSIDE-THEOREM { background: #ffe8cc; } .v-REFUTED { background: #ffd6d6; }
.v-UNDECIDED { background: #e7e7e7; } .v-MEASURED, .v-INFO { background: #dbe9ff; }
.v-NOT-APPLICABLE, .v-FAILED, .v-MISSING, .v-TIMEOUT, .v-LOST { background: #eeeeee; }
dd.rule { font-size: 0.88em; color: #444; }
dl { margin: 0.4em 0; } dt { font-weight: 600; float: left; width: 7em; }
dd { margin-left: 7.5em; margin-bottom: 0.3em; }
ul.notes { font-size: 0.9em; color: #333; }
.plot svg { max-width: 100%; height: auto; }
code { font-family: ui-monospace, monospace; font-size: 0.92em; }
"""


def _verdict(v: str) -> str:
    cls = "v-" + v.replace(" ", "-")
    return f'<span class="verdict {escape(cls)}">{escape(v)}</span>'


def _cell(text: str) -> str:
    if text.startswith("certs/") and text.endswith(".json"):
        return f'<a href="{escape(text)}"><code>{escape(text)}</code></a>'
    return escape(text)


def _section(s: Section, plots) -> str:
    out = [f'<section id="{escape(s.key)}">', f"<h2>{escape(s.title)}</h2>"]
    out.append(
        "<dl>"
        f"<dt>Verdict</dt><dd>{_verdict(s.verdict)} {escape(s.summary)}</dd>"
        + (f'<dt>Rule</dt><dd class="rule">{escape(s.rule)}</dd>' if s.rule else "")
        + f"<dt>Theorem</dt><dd>{escape(s.theorem)}</dd>"
        f"<dt>Limits</dt><dd>{escape(s.limits)}</dd>"
        "</dl>"
    )
    if s.rows:
        out.append("<table><thead><tr>")
        out.extend(f"<th>{escape(c)}</th>" for c in s.columns)
        out.append("</tr></thead><tbody>")
        for row in s.rows:
            tds = []
            for i, v in enumerate(row):
                tds.append(f"<td>{_verdict(v) if s.columns[i] == 'verdict' else _cell(v)}</td>")
            out.append("<tr>" + "".join(tds) + "</tr>")
        out.append("</tbody></table>")
    if s.plot and s.plot in plots:
        out.append(f'<div class="plot">{plots[s.plot]}</div>')
    if s.notes:
        out.append('<ul class="notes">')
        out.extend(f"<li>{escape(n)}</li>" for n in s.notes)
        out.append("</ul>")
    if s.certificates:
        links = ", ".join(_cell(c) for c in s.certificates)
        out.append(f"<p>Certificates (re-check with <code>attncert check</code>): {links}</p>")
    out.append("</section>")
    return "\n".join(out)


def render_html(report: Report) -> str:
    m = report.model
    title = f"attncert report: {m['name']}"
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
    )
    intro = (
        f"<h1>{escape(title)}</h1>\n<p>Language <code>{escape(report.language)}</code>, "
        f"lengths n = {escape(', '.join(map(str, report.ns)))}; model hash "
        f"<code>{escape(m['sha256'][:16])}…</code>. "
        + (
            "Every cell finished."
            if report.complete
            else f"Incomplete: {escape(', '.join(report.failed))} did not finish."
        )
        + " Every verdict below is backed by a certificate the trusted kernel re-derived, "
        "except MEASURED (sampled, not proved) and INFO (a description).</p>\n"
    )
    toc = (
        "<ul>"
        + "".join(
            f'<li><a href="#{escape(s.key)}">{escape(s.title)}</a> {_verdict(s.verdict)}</li>'
            for s in report.sections
        )
        + "</ul>\n"
    )
    body = "\n".join(_section(s, report.plots) for s in report.sections)
    return head + intro + toc + body + "\n</body>\n</html>\n"
