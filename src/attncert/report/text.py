"""Text a report page prints: inline runs with marks and links, strings a person can
compare, exact counts and intervals.

* :class:`Span` / ``Inline`` — a piece of text with a style (``code``, ``mark`` for a
  position where two strings differ, ``sup``, ``strong``, ``br``) or a link to an anchor
  of the page; rendered by :func:`plain`, :func:`markdown` and :func:`html`. A table cell
  or a sentence is a ``str`` or an ``Inline``.
* :func:`pair` — two strings of one length with the positions where they differ marked;
  a long string in run-length form (``1^32·(10)^15·1``, the common parts written once per
  string with the same tokens, so the two lines line up token by token).
* :func:`fraction`, :func:`share`, :func:`wilson` — an exact count as a fraction, a
  sampled one with its 95 % Wilson score interval.

Everything here is a pure function of its arguments (the pages are rebuilt byte for byte
by ``attncert check DIR``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape

#: strings up to this length are shown in full; longer ones in run-length form
SHORT = 32
#: positions listed by number (more: the first ones and how many)
LISTED = 6
#: z for a 95 % two-sided interval
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Span:
    """A run of text: ``style`` one of "", "code", "mark", "sup", "strong", "br"; ``href``
    a link (``#anchor`` on the page, or a relative file)."""

    text: str
    style: str = ""
    href: str = ""


Inline = tuple[Span, ...]
Text = str | Inline


def inline(*parts: str | Span | Inline) -> Inline:
    """Concatenate strings, spans and inlines into one inline."""
    out: list[Span] = []
    for p in parts:
        if isinstance(p, str):
            if p:
                out.append(Span(p))
        elif isinstance(p, Span):
            out.append(p)
        else:
            out.extend(p)
    return tuple(out)


def link(text: str, anchor: str) -> Span:
    """``text`` linked to ``#anchor`` on the page."""
    return Span(text, href=f"#{anchor}")


def code(text: str) -> Span:
    return Span(text, "code")


def join(items: Iterable[Text], sep: str = ", ") -> Inline:
    out: list[str | Span | Inline] = []
    for k, it in enumerate(items):
        if k:
            out.append(sep)
        out.append(it)
    return inline(*out)


# ----- rendering -------------------------------------------------------------------------------


def plain(t: Text) -> str:
    """The text with marks as ``[x]`` and superscripts as ``^k`` (CLI, report.json)."""
    if isinstance(t, str):
        return t
    out = []
    for s in t:
        if s.style == "mark":
            out.append(f"[{s.text}]")
        elif s.style == "sup":
            out.append(f"^{s.text}")
        elif s.style == "br":
            out.append(" / ")
        else:
            out.append(s.text)
    return "".join(out)


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]|<>"})


def markdown(t: Text) -> str:
    """Markdown: marks bold, links ``[text](#anchor)``, special characters escaped."""
    if isinstance(t, str):
        return t.replace("|", "\\|").replace("\n", " ")
    out = []
    for s in t:
        text = s.text.translate(_MD_SPECIAL)
        if s.style == "br":
            out.append(" / ")
        elif s.style == "mark" or s.style == "strong":
            out.append(f"**{text}**")
        elif s.style == "sup":
            out.append(f"^{text}")
        elif s.href:
            out.append(f"[{text}]({s.href})")
        else:
            out.append(text)
    return "".join(out)


def html(t: Text) -> str:
    """HTML: ``<mark>``, ``<sup>``, ``<code>``, ``<strong>``, ``<br>``, ``<a href>``."""
    if isinstance(t, str):
        return escape(t)
    out = []
    for s in t:
        text = escape(s.text)
        if s.style == "br":
            out.append("<br>")
            continue
        if s.style in ("mark", "sup", "code", "strong"):
            text = f"<{s.style}>{text}</{s.style}>"
        if s.href:
            text = f'<a href="{escape(s.href)}">{text}</a>'
        out.append(text)
    return "".join(out)


# ----- strings ---------------------------------------------------------------------------------


def runs(s: str) -> list[tuple[str, int]]:
    """``s`` as (block, repeats): greedily the repeated block of 1–4 symbols covering the
    most symbols (at least 4, repeated at least twice), else single symbols merged into
    literal blocks (repeats 1)."""
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(s):
        best = (0, 0)  # (covered, period)
        for p in range(1, 5):
            block = s[i : i + p]
            if len(block) < p:
                break
            k = 1
            while s[i + k * p : i + (k + 1) * p] == block:
                k += 1
            if k >= 2 and p * k >= 4 and p * k > best[0]:
                best = (p * k, p)
        if best[0]:
            cov, p = best
            out.append((s[i : i + p], cov // p))
            i += cov
        else:
            if out and out[-1][1] == 1:
                out[-1] = (out[-1][0] + s[i], 1)
            else:
                out.append((s[i], 1))
            i += 1
    return out


def _rle(s: str) -> list[Span]:
    """Run-length spans of ``s``: ``1^32`` as code "1" and sup "32"; tokens joined by ·."""
    out: list[Span] = []
    for k, (block, rep) in enumerate(runs(s)):
        if k:
            out.append(Span("·"))
        if rep == 1:
            out.append(code(block))
        else:
            out.append(code(block if len(block) == 1 else f"({block})"))
            out.append(Span(str(rep), "sup"))
    return out


def string(s: str) -> Inline:
    """One string: in full up to :data:`SHORT` symbols, else in run-length form with its
    length."""
    if len(s) <= SHORT or len(plain(tuple(_rle(s)))) >= len(s):
        return (code(s),)
    return inline(*_rle(s), f" (length {len(s)})")


def positions(ps: Sequence[int]) -> str:
    """1-based positions in words: "position 3", "positions 3, 5 and 9", or the first
    :data:`LISTED` of many."""
    if len(ps) == 1:
        return f"position {ps[0]}"
    if len(ps) <= LISTED:
        return "positions " + ", ".join(map(str, ps[:-1])) + f" and {ps[-1]}"
    return f"{len(ps)} positions ({', '.join(map(str, ps[:LISTED]))}, …)"


def differing(x: str, y: str) -> list[int]:
    """The 1-based positions where ``x`` and ``y`` (same length) differ."""
    return [i + 1 for i, (a, b) in enumerate(zip(x, y, strict=True)) if a != b]


def pair(x: str, y: str, *, labels: tuple[str, str] = ("", "")) -> Inline:
    """Two strings one above the other with the positions where they differ marked, and
    those positions named; long strings in run-length form, the common parts tokenised
    alike in both. ``labels`` prefix each line (e.g. "✗ " for the misclassified one)."""
    if len(x) != len(y):
        return inline(labels[0], string(x), Span("", "br"), labels[1], string(y))
    diff = differing(x, y)
    full = len(x) <= SHORT or len(plain(tuple(_rle(x)))) >= len(x)
    lines = []
    for s in (x, y):
        parts: list[Span] = []
        if full:  # short, or no shorter in run-length form: the strings themselves
            start = 0
            for p in diff:
                if p - 1 > start:
                    parts.append(code(s[start : p - 1]))
                parts.append(Span(s[p - 1], "mark"))
                start = p
            if start < len(s):
                parts.append(code(s[start:]))
        else:
            start = 0
            for p in diff:
                if p - 1 > start:
                    parts += [*_rle(s[start : p - 1]), Span("·")]
                parts.append(Span(s[p - 1], "mark"))
                start = p
                if start < len(s):
                    parts.append(Span("·"))
            if start < len(s):
                parts += _rle(s[start:])
        lines.append(tuple(parts))
    where = f"differ at {positions(diff)}" if diff else "identical"
    tail = f" ({where}" + (f"; length {len(x)})" if len(x) > SHORT else ")")
    return inline(labels[0], lines[0], Span("", "br"), labels[1], lines[1], tail)


# ----- numbers ---------------------------------------------------------------------------------


def number(x, digits: int = 4) -> str:
    """A number as text: ints exactly, floats to ``digits`` significant digits, strings as
    they are (exact digits kept elsewhere), None as "—"."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, str):
        return x
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float) and not math.isfinite(x):
        return "—"
    return f"{x:.{digits}g}"


def fraction(k: int, total: int, digits: int = 6) -> str:
    """An exact count: ``251/256 = 0.980469`` (the decimal rounded to ``digits``
    significant digits; ``1`` and ``0`` exactly)."""
    if total <= 0:
        return "—"
    from fractions import Fraction

    dec = f"{k / total:.{digits}g}"
    exact = Fraction(k, total) == Fraction(dec)
    return f"{k}/{total} {'=' if exact else '≈'} {dec}"


def wilson(k: int, m: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``k`` of ``m`` (95 % by default)."""
    if m <= 0:
        return 0.0, 1.0
    p = k / m
    den = 1 + z * z / m
    mid = (p + z * z / (2 * m)) / den
    half = z * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def share(k: int, m: int, *, exact: bool, percent: bool = True) -> str:
    """A measured proportion: over every string (``exact``: "187/256 = 73.05 %, all
    strings") or sampled, with its 95 % Wilson interval."""
    if m <= 0:
        return "—"

    def f(v: float) -> str:
        return f"{100 * v:.2f} %" if percent else f"{v:.4f}"

    if exact:
        return f"{k}/{m} = {f(k / m)} (all {m} strings)"
    lo, hi = wilson(k, m)
    return f"{k}/{m} = {f(k / m)} (sampled; 95 % Wilson [{f(lo)}, {f(hi)}])"


def seconds(x) -> str:
    """A duration in seconds, e.g. ``4.7 s``."""
    if x is None or isinstance(x, str):
        return "—"
    return f"{x:.2g} s" if x < 10 else f"{x:.0f} s"


__all__ = [
    "Inline",
    "Span",
    "Text",
    "code",
    "differing",
    "fraction",
    "html",
    "inline",
    "join",
    "link",
    "markdown",
    "number",
    "pair",
    "plain",
    "positions",
    "runs",
    "seconds",
    "share",
    "string",
    "wilson",
]
