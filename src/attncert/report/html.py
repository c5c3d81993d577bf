"""The report as one self-contained HTML page: inline CSS, plots as inline SVG, no script,
no font, image or style sheet fetched from anywhere (readable offline).

Top to bottom: the title, the summary a person reads first (its terms linked to their
definitions at the foot of the page), what the report is about, a table of contents with
each section's badge, the sections, and the terms. Every badge word has a style
(:data:`BADGES`); tables scroll inside their own wrapper on a narrow screen, never the
page."""

from __future__ import annotations

from html import escape
from typing import Any

from attncert.report.terms import TERMS, VERDICTS
from attncert.report.text import html as inline_html

# a Report / Section of attncert.report.document (not imported: document imports this)
Report = Section = Any

#: every badge word the page can show → its background colour
BADGES = {
    "CERTIFIED": "#d8f3dc",
    "CERTIFIED-TRIVIAL": "#fff3bf",
    "OUTSIDE-THEOREM": "#ffe8cc",
    "REFUTED": "#ffd6d6",
    "UNDECIDED": "#e7e7e7",
    "MEASURED": "#dbe9ff",
    "INFO": "#e8e2ff",
    "NOT APPLICABLE": "#f1f1f1",
    "TIMEOUT": "#ffd8a8",
    "FAILED": "#ffc9c9",
    "LOST": "#ffc9c9",
    "MISSING": "#f1f1f1",
}


def badge_class(word: str) -> str:
    return "v-" + word.replace(" ", "-")


CSS = (
    """
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #1b1b1b; line-height: 1.45;
       overflow-wrap: anywhere; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
.lead { background: #f7f7f2; border-left: 4px solid #8a8a6a; padding: 0.6em 1em;
        margin: 1em 0; }
.lead p { margin: 0.3em 0; }
.scroll { overflow-x: auto; max-width: 100%; margin: 0.8em 0; }
table { border-collapse: collapse; font-size: 0.92em; }
th, td { border: 1px solid #d0d0d0; padding: 0.25em 0.6em; text-align: left;
         vertical-align: top; overflow-wrap: normal; }
td { min-width: 3em; }
th { background: #f3f3f3; }
.verdict { display: inline-block; padding: 0.1em 0.55em; border-radius: 0.3em;
           font-weight: 600; font-family: ui-monospace, monospace; font-size: 0.95em;
           white-space: nowrap; border: 1px solid #00000022; }
dl.facts { margin: 0.4em 0; display: grid; grid-template-columns: max-content minmax(0, 1fr);
           column-gap: 0.8em; row-gap: 0.3em; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
dd.rule { font-size: 0.88em; color: #444; }
dl.terms dt { font-weight: 600; margin-top: 0.4em; } dl.terms dd { margin-left: 1.5em; }
ul.notes { font-size: 0.9em; color: #333; }
.plot { max-width: 100%; overflow-x: auto; }
.plot svg { max-width: 100%; height: auto; }
code { font-family: ui-monospace, monospace; font-size: 0.92em; }
mark { background: #ffe066; font-family: ui-monospace, monospace; font-weight: 700;
       padding: 0 0.1em; }
sup { font-size: 0.75em; }
"""
    + "\n".join(f".{badge_class(w)} {{ background: {c}; }}" for w, c in BADGES.items())
    + "\n"
)


def badge(v: str) -> str:
    return f'<span class="verdict {escape(badge_class(v))}">{escape(v)}</span>'


def _cell(v) -> str:
    if isinstance(v, str) and v.startswith("certs/") and v.endswith(".json"):
        return f'<a href="{escape(v)}"><code>{escape(v)}</code></a>'
    return inline_html(v)


def _table(s: Section) -> str:
    out = ['<div class="scroll"><table><thead><tr>']
    out.extend(f"<th>{escape(c)}</th>" for c in s.columns)
    out.append("</tr></thead><tbody>")
    for row in s.rows:
        tds = [
            f"<td>{badge(v) if s.columns[i] == 'verdict' else _cell(v)}</td>"
            for i, v in enumerate(row)
        ]
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _section(s: Section, plots) -> str:
    out = [f'<section id="{escape(s.key)}">', f"<h2>{escape(s.title)}</h2>"]
    out.append(
        '<dl class="facts">'
        f"<dt>Verdict</dt><dd>{badge(s.verdict)} {escape(s.summary)}</dd>"
        + (f'<dt>Rule</dt><dd class="rule">{escape(s.rule)}</dd>' if s.rule else "")
        + (f"<dt>Language</dt><dd>{escape(s.about)}</dd>" if s.about else "")
        + f"<dt>Theorem</dt><dd>{escape(s.theorem)}</dd>"
        f"<dt>Limits</dt><dd>{escape(s.limits)}</dd>"
        "</dl>"
    )
    if s.rows:
        out.append(_table(s))
    if s.plot and s.plot in plots:
        out.append(f'<div class="plot">{plots[s.plot]}</div>')
    if s.notes:
        out.append('<ul class="notes">')
        out.extend(f"<li>{inline_html(n)}</li>" for n in s.notes)
        out.append("</ul>")
    if s.certificates:
        links = ", ".join(_cell(c) for c in s.certificates)
        out.append(f"<p>Certificates (re-check with <code>attncert check</code>): {links}</p>")
    out.append("</section>")
    return "\n".join(out)


def _terms() -> str:
    out = ['<section id="terms">', "<h2>Terms used on this page</h2>", '<dl class="terms">']
    for key, (name, text) in TERMS.items():
        out.append(f'<dt id="term-{escape(key)}">{escape(name)}</dt><dd>{escape(text)}</dd>')
    out.append("</dl>")
    out.append('<dl class="terms">')
    for word, text in VERDICTS.items():
        out.append(f"<dt>{badge(word)}</dt><dd>{escape(text)}</dd>")
    out.append("</dl>")
    out.append("</section>")
    return "\n".join(out)


def render_html(report: Report) -> str:
    m = report.model
    title = f"attncert report: {m['name']}"
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
    )
    lead = (
        '<div class="lead" id="summary"><p><strong>In short.</strong> '
        + "</p>\n<p>".join(inline_html(s) for s in report.lead)
        + "</p></div>\n"
    )
    intro = (
        f"<h1>{escape(title)}</h1>\n"
        + lead
        + f"<p>Language <code>{escape(report.language)}</code>, lengths n = "
        f"{escape(', '.join(map(str, report.ns)))}; model hash "
        f"<code>{escape(m['sha256'][:16])}…</code>. "
        + (
            "Every cell finished."
            if report.complete
            else f"Incomplete: {escape(', '.join(report.failed))} did not finish."
        )
        + " Every verdict below is backed by a certificate the trusted kernel re-derived, "
        'except MEASURED (<a href="#term-measured">measured</a>, not proved) and INFO (a '
        'description); the words are defined at the <a href="#terms">foot of the page</a>.'
        "</p>\n"
    )
    toc = (
        "<ul>"
        + "".join(
            f'<li><a href="#{escape(s.key)}">{escape(s.title)}</a> {badge(s.verdict)}</li>'
            for s in report.sections
        )
        + '<li><a href="#terms">Terms used on this page</a></li></ul>\n'
    )
    body = "\n".join(_section(s, report.plots) for s in report.sections)
    return head + intro + toc + body + "\n" + _terms() + "\n</body>\n</html>\n"
