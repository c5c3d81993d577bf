"""The end of a sweep: a Markdown table and a plot (free fraction and time against n).

:func:`markdown_report` groups records by (task, model, n) — seeds are summarised as
mean (min–max) — and lists every cell without a result with its reason. *seconds* is a
cell's wall time in its own process, start-up and imports included (what a cell costs
the sweep); a task's own timings, e.g. certify's search and check, are in its result.
:func:`plot_sweep` draws, per task and model, the free fraction (certify) or the measured
value (other tasks that report one) and the wall time of a cell against n; the file
format follows the extension (``.png``, ``.pdf``, ``.svg``, …; an unknown one is
refused), and the file is written atomically.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from attncert.sweep.results import CellRecord


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _groups(records: Iterable[CellRecord]) -> dict[tuple[str, str, int], list[CellRecord]]:
    out: dict[tuple[str, str, int], list[CellRecord]] = defaultdict(list)
    for r in records:
        out[(r.cell.task, r.cell.model, r.cell.n)].append(r)
    return dict(sorted(out.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])))


def _spread(xs: Sequence[float], fmt: str) -> str:
    if not xs:
        return "–"
    mean = sum(xs) / len(xs)
    if len(xs) == 1 or min(xs) == max(xs):
        return format(mean, fmt)
    return f"{format(mean, fmt)} ({format(min(xs), fmt)}–{format(max(xs), fmt)})"


def markdown_report(records: Sequence[CellRecord]) -> str:
    """One row per (task, model, n): cells with a result / recorded, verdicts, free
    fraction, measured value and seconds per cell (mean (min–max) over seeds); then the
    cells without a result and why."""
    lines = [
        "| task | model | n | ok/cells | verdicts | free fraction | value | seconds |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    for (task, model, n), rs in _groups(records).items():
        ok = [r for r in rs if r.ok]
        verdicts = Counter(r.verdict for r in rs)
        vtext = ", ".join(f"{v} ×{k}" if k > 1 else v for v, k in sorted(verdicts.items()))
        free = [x for r in ok if (x := _num((r.result or {}).get("free_fraction"))) is not None]
        vals = [x for r in ok if (x := _num((r.result or {}).get("value"))) is not None]
        secs = [r.seconds for r in ok]
        lines.append(
            f"| {task} | `{model}` | {n} | {len(ok)}/{len(rs)} | {vtext} | "
            f"{_spread(free, '.3f')} | {_spread(vals, '.3g')} | {_spread(secs, '.2f')} |"
        )
    bad = [r for r in records if not r.ok]
    if bad:
        lines += ["", "Cells without a result:", ""]
        for r in bad:
            reason = r.reason if len(r.reason) <= 300 else r.reason[:300] + "…"
            lines.append(f"- {r.cell.label()} — {r.status}: {reason}")
    measured = {r.cell.task for r in records if (r.result or {}).get("certified") is False}
    if measured:
        lines += [
            "",
            f"Measured, not certified: {', '.join(sorted(measured))} (values are measurements).",
        ]
    return "\n".join(lines)


def _series(records: Sequence[CellRecord], key: str) -> dict[str, tuple[list[int], list[float]]]:
    """Per "task model": the mean of ``key`` over a length's ok cells, against n."""
    acc: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if not r.ok:
            continue
        x = r.seconds if key == "seconds" else _num((r.result or {}).get(key))
        if x is not None:
            acc[f"{r.cell.task} {r.cell.model}"][r.cell.n].append(x)
    return {
        name: (sorted(by_n), [sum(by_n[n]) / len(by_n[n]) for n in sorted(by_n)])
        for name, by_n in sorted(acc.items())
    }


def sweep_figure(records: Sequence[CellRecord]):
    """The figure of :func:`plot_sweep` (matplotlib, Agg)."""
    from matplotlib.figure import Figure

    left_key, left_label = "free_fraction", "free fraction of ρ_L"
    left = _series(records, left_key)
    if not left:
        left_key, left_label = "value", "measured value"
        left = _series(records, left_key)
    panels = [(left_label, left, False)] if left else []
    panels.append(("seconds per cell", _series(records, "seconds"), True))
    fig = Figure(figsize=(5.2 * len(panels), 3.8), layout="constrained")
    for k, (label, series, logy) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), k + 1)
        for name, (ns, ys) in series.items():
            ax.plot(ns, ys, marker="o", label=name)
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        elif left_key == "free_fraction":
            ax.set_ylim(0, 1.02)
        ax.set_xlabel("n")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        if series and k == 0:
            ax.legend(fontsize=7)
    return fig


def save_figure(fig, path: str | os.PathLike[str]) -> Path:
    """Save ``fig`` in the format its file extension names (refusing unknown ones),
    atomically: :func:`attncert.figures.save_figure`."""
    from attncert.figures import save_figure as save

    return save(fig, path)


def plot_sweep(records: Sequence[CellRecord], path: str | os.PathLike[str]) -> Path:
    """Free fraction (or measured value) and time against n per model; see module doc."""
    return save_figure(sweep_figure(records), path)
