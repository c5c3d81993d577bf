"""The report's plots, drawn with matplotlib (Agg) as SVG text to inline in the page.

* :func:`accuracy_plot` — certified accuracy interval by ``verify`` at each n (a bar from
  the lower to the upper bound; a zero-width interval — an exact count — as a large
  outlined diamond drawn above everything else) beside the measured accuracy with its 95 %
  Wilson interval (none when every string was run);
* :func:`lemma5_plot` — two panels, each with its own unit: **logit units** (log₁₀ axis):
  the measured largest change, the certified B(n) (hollow where it is only the range cap),
  the logit's range Z and the uniform K/n (a K/n more than :data:`OFF_CHART` decades above
  the rest is marked at the top with its order of magnitude); **nats** (linear axis):
  Theorem 6's floor and the measured cross-entropy beside log 2 — titled with the language
  they are about ("PARITY, for comparison" when the report's language is another);
* :func:`horizon_plot` — the length horizon over its own range of lengths: the intervals
  proved right on every string as a shaded band (certified; refuted and undecided lengths
  in their own shading), the first refuted length marked, and the accuracy sampled in
  floating point as points (measured) — the y axis is the sampled accuracy only.

Every plot of a page has the same n axis: the report's lengths, log₂ scale, the same
limits and ticks — the horizon's too, over its range [A, B] (powers of two as ticks; an
unbounded range drawn to the right edge, marked → ∞). The SVG has no external reference
(glyphs are paths).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping

from attncert.report.sections.common import FLOOR_LANGUAGES
from attncert.report.text import wilson

_HEADER = re.compile(r"^.*?(?=<svg)", re.DOTALL)
OFF_CHART = 6.0  # decades above the other curves beyond which K/n is marked, not drawn
LOG2 = math.log(2.0)


def _figure(panels: int = 1):
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4 if panels == 1 else 10.0, 3.6), dpi=100)
    axes = [fig.add_subplot(1, panels, k + 1) for k in range(panels)]
    return fig, axes


def _svg(fig) -> str:
    import matplotlib

    buf = io.StringIO()
    fig.tight_layout()
    with matplotlib.rc_context({"svg.hashsalt": "attncert-report", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return _HEADER.sub("", buf.getvalue(), count=1)  # drop the XML header and DOCTYPE


def _ok(cells: Mapping, name: str) -> Mapping | None:
    rec = cells.get(name)
    return rec.get("data") if rec and rec.get("status") == "ok" else None


def _legend(ax) -> None:
    """The legend under the axes, never over the data."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7, frameon=False)


def n_axis(ax, ns) -> None:
    """The page's one n axis: log₂ scale, the report's lengths as ticks, the same limits
    on every plot."""
    lo, hi = min(ns), max(ns)
    ax.set_xscale("log", base=2)
    ax.set_xlim(lo / 1.6, hi * 1.6)
    ax.set_xticks(list(ns))
    ax.set_xticklabels([str(n) for n in ns])
    ax.minorticks_off()
    ax.set_xlabel("n")
    ax.grid(alpha=0.3)


def accuracy_plot(cells: Mapping, ns, language: str = "") -> str | None:
    """:func:`accuracy_figure` as SVG text (None: nothing to draw)."""
    fig = accuracy_figure(cells, ns, language)
    return None if fig is None else _svg(fig)


def lemma5_plot(cells: Mapping, ns, language: str = "") -> str | None:
    """:func:`lemma5_figure` as SVG text (None: nothing to draw)."""
    fig = lemma5_figure(cells, ns, language)
    return None if fig is None else _svg(fig)


def accuracy_figure(cells: Mapping, ns, language: str = ""):
    """The accuracy plot (module docstring) as a matplotlib Figure, or None."""
    pts = [(n, _ok(cells, f"verify-n{n}")) for n in ns]
    pts = [(n, d) for n, d in pts if d]
    if not pts:
        return None
    fig, (ax,) = _figure()
    xs = [n for n, _ in pts]
    lo = [d["lower"] for _, d in pts]
    hi = [d["upper"] for _, d in pts]
    ax.vlines(xs, lo, hi, colors="tab:blue", linewidth=8, alpha=0.6, zorder=3)
    # an exact count is an interval of width 0: a diamond above every other mark
    ax.scatter(xs, lo, color="tab:blue", marker="_", s=300, zorder=4)
    ax.scatter(xs, hi, color="tab:blue", marker="_", s=300, zorder=4)
    exact = [(n, a) for n, a, b in zip(xs, lo, hi, strict=True) if a == b]
    if exact:
        ax.scatter(
            [n for n, _ in exact], [a for _, a in exact], marker="D", s=90, zorder=6,
            facecolor="tab:blue", edgecolor="black", linewidth=1.2,
        )  # fmt: skip
    ax.plot([], [], "D", color="tab:blue", mec="black", label="certified (verify; ◆ exact)")
    meas = [(n, d["sampled"]) for n, d in pts if d.get("sampled", {}).get("strings")]
    if meas:
        mx = [n * 1.12 for n, _ in meas]  # beside the certified mark, not on it
        my = [s["right"] / s["strings"] for _, s in meas]
        err = [(0.0, 0.0) if s.get("exact") else wilson(s["right"], s["strings"]) for _, s in meas]
        yerr = [
            [0.0 if s.get("exact") else y - e[0] for (_, s), y, e in zip(meas, my, err, strict=True)],
            [0.0 if s.get("exact") else e[1] - y for (_, s), y, e in zip(meas, my, err, strict=True)],
        ]  # fmt: skip
        ax.errorbar(
            mx, my, yerr=yerr, fmt="o", mfc="none", color="tab:orange", capsize=3, zorder=5,
            label="measured (float; 95 % Wilson where sampled)",
        )  # fmt: skip
    n_axis(ax, ns)
    ax.set_ylim(-0.04, 1.04)
    ax.set_ylabel(f"accuracy on {language}" if language else "accuracy")
    ax.set_title("certified accuracy over all strings vs measured accuracy")
    _legend(ax)
    return fig


def _log10(x) -> float | None:
    if x is None or isinstance(x, (str, bool)):
        return None
    return math.log10(x) if x > 0 else None


def _logit_panel(ax, sens, urows) -> None:
    shown: list[float] = []
    meas = [(n, _log10(d.get("measured"))) for n, d in sens]
    meas = [(n, y) for n, y in meas if y is not None]
    if meas:
        ax.plot([n for n, _ in meas], [y for _, y in meas], "o-", color="tab:orange",
                label="measured largest change")  # fmt: skip
        shown += [y for _, y in meas]
    bound = [(n, _log10(d.get("certified_bound")), d.get("source") == "range cap") for n, d in sens]
    bound = [(n, y, cap) for n, y, cap in bound if y is not None]
    if bound:
        ax.plot([n for n, _, _ in bound], [y for _, y, _ in bound], "-", color="tab:blue")
        for n, y, cap in bound:
            ax.plot([n], [y], "s", ms=8, color="tab:blue", mfc="none" if cap else "tab:blue")
        ax.plot([], [], "s-", color="tab:blue", label="certified B(n) (hollow: range cap)")
        shown += [y for _, y, _ in bound]
    rng = [(n, _log10(d.get("range_cap"))) for n, d in sens]
    rng = [(n, y) for n, y in rng if y is not None]
    if rng:
        ax.plot([n for n, _ in rng], [y for _, y in rng], ":", color="gray",
                label="logit's range Z (the cap)")  # fmt: skip
        shown += [y for _, y in rng]
    if shown:  # half a decade of room around the curves, however close they are
        ax.set_ylim(min(shown) - 0.5, max(shown) + 0.5)
    kn = [(r["n"], r["K_over_n_log10"]) for r in urows if r.get("K_over_n_log10") is not None]
    if kn and (not shown or max(y for _, y in kn) <= max(shown) + OFF_CHART):
        ax.set_ylim(min(shown + [y for _, y in kn]) - 0.5, max(shown + [y for _, y in kn]) + 0.5)
        ax.plot([n for n, _ in kn], [y for _, y in kn], "^-", color="tab:red", label="uniform K/n")
    elif kn:  # K/n of order 10^400 would flatten every other curve: marked at the top
        lo, hi = ax.get_ylim()
        y = hi + 0.15 * max(hi - lo, 1.0)
        ax.plot(
            [n for n, _ in kn], [y] * len(kn), "^", color="tab:red",
            label=f"uniform K/n ≥ 10^{min(v for _, v in kn):.0f} (off the chart)",
        )  # fmt: skip
        ax.set_ylim(lo, y + 0.15 * max(hi - lo, 1.0))
    ax.set_ylabel("log₁₀ (logit units)")
    ax.set_title("one symbol's effect on the logit")
    _legend(ax)


def _nats_panel(ax, sens, language: str) -> None:
    fl = [(n, d.get("floor")) for n, d in sens if d.get("floor") is not None]
    top = LOG2
    if fl:
        ax.plot([n for n, _ in fl], [f for _, f in fl], "v-", color="tab:green",
                label="Theorem 6 floor (certified)")  # fmt: skip
    ce = []
    for n, d in sens:
        c = d.get("ce") if isinstance(d.get("ce"), Mapping) else None
        mean = c.get("mean") if c else d.get("measured_ce")
        if mean is not None:
            ce.append((n * 1.12, mean, (c or {}).get("half_width") or 0.0))
    if ce:
        ax.errorbar([n for n, _, _ in ce], [m for _, m, _ in ce], yerr=[h for _, _, h in ce],
                    fmt="o", mfc="none", color="tab:purple", capsize=3,
                    label="measured cross-entropy (float)")  # fmt: skip
        top = max(top, max(m + h for _, m, h in ce))
    ax.axhline(LOG2, color="gray", linestyle="--", linewidth=1, label="log 2 (a coin)")
    ax.set_ylim(-0.03 * top, 1.1 * top)
    ax.set_ylabel("nats")
    on = language if language in FLOOR_LANGUAGES else "PARITY, for comparison"
    ax.set_title(f"Theorem 6: cross-entropy on {on}")
    _legend(ax)


def lemma5_figure(cells: Mapping, ns, language: str = ""):
    """The Lemma 5 / Theorem 6 plot (module docstring) as a matplotlib Figure, or None."""
    sens = [(n, _ok(cells, f"sensitivity-n{n}")) for n in ns]
    sens = [(n, d) for n, d in sens if d]
    uni = next((rec for k, rec in cells.items() if k.startswith("uniform-")), None)
    urows = (uni.get("data") or {}).get("rows", []) if uni and uni.get("status") == "ok" else []
    urows = [r for r in urows if r.get("K_over_n_log10") is not None]
    if not sens and not urows:
        return None
    floors = any(d.get("floor") is not None for _, d in sens)
    fig, axes = _figure(2 if floors else 1)
    _logit_panel(axes[0], sens, urows)
    n_axis(axes[0], ns)
    if floors:
        _nats_panel(axes[1], sens, language)
        n_axis(axes[1], ns)
    return fig


#: ticks on the horizon's n axis: at most this many powers of two
HORIZON_TICKS = 8


def horizon_plot(cells: Mapping, ns, language: str = "") -> str | None:
    """:func:`horizon_figure` as SVG text (None: nothing to draw)."""
    fig = horizon_figure(cells, ns, language)
    return None if fig is None else _svg(fig)


def _end(b) -> float | None:
    return None if b == "inf" else float(b)


def horizon_figure(cells: Mapping, ns, language: str = ""):
    """The length-horizon plot (module docstring) as a matplotlib Figure, or None when the
    horizon cell certified nothing."""
    from matplotlib.patches import Patch

    d = next((_ok(cells, k) for k in sorted(cells) if k.startswith("horizon-")), None)
    if not d or not d.get("accepted") or not d.get("lengths"):
        return None
    lo, hi = d["lengths"]
    runs = {kind: d.get(kind) or [] for kind in ("proved", "refuted", "undecided")}
    sampled = d.get("sampled") or []
    seen = [float(lo)] + [float(s["n"]) for s in sampled]
    seen += [x for rs in runs.values() for a, b in rs for x in (a, _end(b)) if x is not None]
    top = float(hi) if hi != "inf" else 4.0 * max(seen)
    right = top * 1.6
    fig, (ax,) = _figure()
    style = {
        "proved": dict(color="tab:green", alpha=0.3, lw=0),
        "refuted": dict(color="tab:red", alpha=0.12, lw=0),
        "undecided": dict(facecolor="none", edgecolor="gray", hatch="//", alpha=0.5, lw=0),
    }
    label = {
        "proved": "proved right on every string (certified)",
        "refuted": "a wrong string at each length (certified)",
        "undecided": "undecided (not every string decided)",
    }
    for kind, rs in runs.items():
        for a, b in rs:  # the lengths a..b as [a, b + 1): adjacent intervals meet
            end = _end(b)
            ax.axvspan(a, right if end is None else end + 1, zorder=1, **style[kind])
    handles = [Patch(label=label[k], **style[k]) for k, rs in runs.items() if rs]
    first = d.get("first_refuted")
    if first is not None:
        handles.append(
            ax.axvline(first, color="tab:red", lw=1.5, ls="--", zorder=3,
                       label=f"first refuted: n = {first}")
        )  # fmt: skip
    if sampled:
        xs = [s["n"] for s in sampled]
        ys = [s["right"] / s["strings"] for s in sampled]
        err = [(y, y) if s.get("exact") else wilson(s["right"], s["strings"])
               for s, y in zip(sampled, ys, strict=True)]  # fmt: skip
        yerr = [[max(0.0, y - e[0]) for y, e in zip(ys, err, strict=True)],
                [max(0.0, e[1] - y) for y, e in zip(ys, err, strict=True)]]  # fmt: skip
        handles.append(
            ax.errorbar(xs, ys, yerr=yerr, fmt="o", mfc="none", color="tab:orange", capsize=3,
                        zorder=5, label="sampled accuracy (float, measured; 95 % Wilson)")
        )  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xlim(lo / 1.6, right)
    ticks = [1 << k for k in range(int(top).bit_length()) if lo <= 1 << k <= top]
    step = -(-len(ticks) // HORIZON_TICKS) if ticks else 1
    ticks = ticks[::-1][::step][::-1]
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("n" + (" (the band runs on to ∞)" if hi == "inf" else ""))
    ax.grid(alpha=0.3)
    ax.set_ylim(-0.04, 1.04)
    ax.set_ylabel(f"sampled accuracy on {language}" if language else "sampled accuracy")
    ax.set_title(f"length horizon over n ∈ [{lo}, {'∞' if hi == 'inf' else hi}]: certified "
                 "lengths (bands), sampled accuracy (points)", fontsize=9)  # fmt: skip
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
              fontsize=7, frameon=False)  # fmt: skip
    return fig


__all__ = [
    "accuracy_figure",
    "accuracy_plot",
    "horizon_figure",
    "horizon_plot",
    "lemma5_figure",
    "lemma5_plot",
    "n_axis",
]
