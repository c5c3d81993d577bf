"""One section of a report page: an analysis across the report's lengths (a value)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attncert.report.text import Text, plain


@dataclass(frozen=True)
class Section:
    """One analysis across n: its verdict (by :attr:`rule` from its rows), the language it
    is about, its theorem and limits, a table, notes, a plot. Cells of ``rows`` and
    ``notes`` are strings or inline text (:mod:`attncert.report.text`)."""

    key: str
    title: str
    verdict: str
    summary: str  # the verdict in words, derived from the rows
    theorem: str  # the result it instantiates, one sentence
    limits: str  # what it does not say, one sentence
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Text, ...], ...] = ()
    notes: tuple[Text, ...] = ()
    plot: str | None = None  # name of a plot in Report.plots
    certificates: tuple[str, ...] = ()  # paths relative to the report directory
    rule: str = ""  # how the verdict follows from the rows (shown next to the badge)
    about: str = ""  # the language (or none) the section is about, in words

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "verdict": self.verdict,
            "rule": self.rule,
            "about": self.about,
            "summary": self.summary,
            "theorem": self.theorem,
            "limits": self.limits,
            "columns": list(self.columns),
            "rows": [[plain(c) for c in r] for r in self.rows],
            "notes": [plain(n) for n in self.notes],
            "plot": self.plot,
            "certificates": list(self.certificates),
        }


__all__ = ["Section"]
