"""The report as a value: :class:`Report`, its :class:`Section` s and the summary a person
reads first, built from the bound cells (:func:`build_report`).

Each section instantiates one result and says its verdict (by the rule written next to it,
from its rows), the language it is about, the theorem and its limits; a section whose
analysis does not apply to the model says why, and a cell that failed or ran out of time
is named in its section with its budget and the flag that raises it. The summary
(:mod:`attncert.report.summary`) is derived from the verdicts and the bound data. The
renderings (:meth:`Report.to_html`, :meth:`Report.to_markdown`, :meth:`Report.to_json`)
carry the same content and are a deterministic function of the cells, the model's
description, the language and the lengths (``attncert check DIR`` rebuilds them and
compares them byte for byte).

The sections live one family per module: :mod:`~attncert.report.sections.model`,
:mod:`~attncert.report.sections.hard` (hardening agreement, Theorem 1),
:mod:`~attncert.report.sections.verify`, :mod:`~attncert.report.sections.horizon`,
:mod:`~attncert.report.sections.lemma5`,
:mod:`~attncert.report.sections.soft`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from attncert.report.section import Section
from attncert.report.sections.common import INFO, NOT_APPLICABLE, section_verdict
from attncert.report.sections.model import describe_model
from attncert.report.text import Inline, plain

__all__ = [
    "INFO",
    "NOT_APPLICABLE",
    "Report",
    "Section",
    "build_report",
    "describe_model",
    "section_verdict",
]


@dataclass(frozen=True)
class Report:
    """A model's report: every analysis that applies, at every n (issue 33), and the
    paragraph that says what the theory says about it (``lead``, issue 42)."""

    model: Mapping[str, Any]
    language: str
    ns: tuple[int, ...]
    sections: tuple[Section, ...]
    cells: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    plots: Mapping[str, str] = field(default_factory=dict)  # name → SVG text
    directory: str | None = None
    where: str = ""
    ran: int = 0
    seconds: float = 0.0
    lead: tuple[Inline, ...] = ()  # the summary's sentences (inline text with links)

    def section(self, key: str) -> Section:
        return next(s for s in self.sections if s.key == key)

    @property
    def complete(self) -> bool:
        """Every cell finished (ok or not applicable): none failed, timed out or missing."""
        return all(c.get("status") in ("ok", "not-applicable") for c in self.cells.values())

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(
            k for k, c in self.cells.items() if c.get("status") not in ("ok", "not-applicable")
        )

    @property
    def exit_code(self) -> int:
        """0 when every cell finished (whatever its verdict), 1 when one failed or timed out."""
        return 0 if self.complete else 1

    @property
    def summary_text(self) -> str:
        """The summary paragraph in plain text (marks as ``[x]``)."""
        return " ".join(plain(s) for s in self.lead)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "attncert-report-summary",
            "version": 1,
            "model": dict(self.model),
            "language": self.language,
            "ns": list(self.ns),
            "complete": self.complete,
            "summary": [plain(s) for s in self.lead],
            "sections": [s.to_dict() for s in self.sections],
            "cells": {k: dict(v) for k, v in self.cells.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False, allow_nan=False) + "\n"

    def to_markdown(self) -> str:
        from attncert.report.markdown import render_markdown

        return render_markdown(self)

    def to_html(self) -> str:
        from attncert.report.html import render_html

        return render_html(self)

    def short(self) -> str:
        """The summary paragraph for a terminal: ``In short:`` and one sentence a line."""
        return "\n".join(["In short:", *(f"  {plain(s)}" for s in self.lead)])

    def summary(self, short: bool = True) -> str:
        """What ``attncert report`` prints: each section's verdict, the cells, and last
        (``short``) the summary paragraph."""
        lines = [f"report of {self.model['name']} on {self.language}, n = {list(self.ns)}"]
        for s in self.sections:
            lines.append(f"  {s.title}: {s.verdict} — {s.summary}")
        bad = self.failed
        lines.append(
            f"{len(self.cells)} cells: {len(self.cells) - len(bad)} finished, {len(bad)} failed "
            f"or timed out ({self.ran} run now; {self.where}, {self.seconds:.1f} s)"
        )
        if short:
            lines += ["", self.short()]
        return "\n".join(lines)


def build_report(
    model_info: Mapping[str, Any],
    language: str,
    ns,
    cells: Mapping[str, Mapping[str, Any]],
    *,
    directory: str | None = None,
    where: str = "",
    ran: int = 0,
    seconds: float = 0.0,
) -> Report:
    """The report from the bound cells' records (missing cells make sections say so)."""
    from attncert.report.constancy import constancy
    from attncert.report.plots import accuracy_plot, horizon_plot, lemma5_plot
    from attncert.report.sections.hard import certify_section, harden_section
    from attncert.report.sections.horizon import horizon_section
    from attncert.report.sections.lemma5 import lemma5_section
    from attncert.report.sections.model import model_section
    from attncert.report.sections.soft import soft_section
    from attncert.report.sections.verify import verify_section
    from attncert.report.summary import lead

    ns = tuple(sorted(set(ns)))
    const = constancy(model_info, cells, ns)
    sections = (
        model_section(model_info),
        harden_section(cells, ns, const),
        certify_section(cells, ns, language, const),
        verify_section(cells, ns, language, const),
        horizon_section(cells, ns, language),
        lemma5_section(cells, ns, language, const),
        soft_section(cells, ns, language, const),
    )
    plots = {}
    for name, fn in (
        ("accuracy", accuracy_plot),
        ("horizon", horizon_plot),
        ("lemma5", lemma5_plot),
    ):
        svg = fn(cells, ns, language)
        if svg is not None:
            plots[name] = svg
    sections = tuple(
        s if s.plot is None or s.plot in plots else replace(s, plot=None) for s in sections
    )
    return Report(
        dict(model_info), language, ns, sections, dict(cells), plots, directory, where, ran,
        seconds, lead(model_info, language, ns, sections, cells, const),
    )  # fmt: skip
