"""The report's plots, drawn with matplotlib (Agg) as SVG text to inline in the page.

* :func:`accuracy_plot` — certified accuracy interval by ``verify`` at each n (a bar from
  the lower to the upper bound) beside the sampled accuracy;
* :func:`lemma5_plot` — Lemma 5 / Theorem 6 on one log–log plot: the measured largest
  change, the certified B(n) (hollow where it is only the range cap), the uniform K/n
  and the cross-entropy floor. The y axis is log₁₀ of the value (K/n of order 10⁴⁰⁰ is
  far beyond float64); a K/n more than :data:`OFF_CHART` decades above every other curve
  is marked at the top with its order of magnitude instead of flattening the rest.

The SVG has no external reference (glyphs are paths, no fonts or images are linked).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping

_HEADER = re.compile(r"^.*?(?=<svg)", re.DOTALL)
OFF_CHART = 6.0  # decades above the other curves beyond which K/n is marked, not drawn


def _figure():
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.6), dpi=100)
    return fig, fig.add_subplot(1, 1, 1)


def _svg(fig) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "attncert-report", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return _HEADER.sub("", buf.getvalue(), count=1)  # drop the XML header and DOCTYPE


def _ok(cells: Mapping, name: str) -> Mapping | None:
    rec = cells.get(name)
    return rec.get("data") if rec and rec.get("status") == "ok" else None


def accuracy_plot(cells: Mapping, ns) -> str | None:
    pts = [(n, _ok(cells, f"verify-n{n}")) for n in ns]
    pts = [(n, d) for n, d in pts if d]
    if not pts:
        return None
    fig, ax = _figure()
    xs = [n for n, _ in pts]
    lo = [d["lower"] for _, d in pts]
    hi = [d["upper"] for _, d in pts]
    ax.vlines(xs, lo, hi, colors="tab:blue", linewidth=6, alpha=0.6, label="certified (verify)")
    ax.scatter(xs, lo, color="tab:blue", marker="_", s=200)
    ax.scatter(xs, hi, color="tab:blue", marker="_", s=200)
    ax.plot(
        xs,
        [d["sampled"]["accuracy"] for _, d in pts],
        "o--",
        color="tab:orange",
        label="sampled (uniform strings)",
    )
    ax.set_xscale("log", base=2)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("n")
    ax.set_ylabel("accuracy")
    ax.set_title("certified accuracy over all strings vs sampled accuracy")
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(alpha=0.3)
    return _svg(fig)


def _log10(x) -> float | None:
    if x is None or isinstance(x, str):
        return None
    return math.log10(x) if x > 0 else None


def lemma5_plot(cells: Mapping, ns) -> str | None:
    sens = [(n, _ok(cells, f"sensitivity-n{n}")) for n in ns]
    sens = [(n, d) for n, d in sens if d]
    uni = next((rec for k, rec in cells.items() if k.startswith("uniform-")), None)
    urows = (uni.get("data") or {}).get("rows", []) if uni and uni.get("status") == "ok" else []
    if not sens and not urows:
        return None
    fig, ax = _figure()
    series = []
    if sens:
        series.append(
            (
                "measured largest change",
                [(n, _log10(d["measured"])) for n, d in sens],
                "o-",
                "tab:orange",
            )
        )
        bound = [(n, _log10(d["certified_bound"]), d.get("source") == "range cap") for n, d in sens]
        ax.plot(
            [n for n, y, _ in bound if y is not None],
            [y for _, y, _ in bound if y is not None],
            "-",
            color="tab:blue",
        )
        for n, y, cap in bound:
            if y is not None:
                ax.plot([n], [y], "s", color="tab:blue", mfc="none" if cap else "tab:blue")
        ax.plot([], [], "s-", color="tab:blue", label="certified B(n) (hollow: range cap)")
        series.append(
            (
                "Theorem 6 floor (nats)",
                [(n, _log10(d.get("floor"))) for n, d in sens],
                "v-",
                "tab:green",
            )
        )
    shown = [y for _, pts, _, _ in series for _, y in pts if y is not None]
    for label, pts, style, color in series:
        pts = [(n, y) for n, y in pts if y is not None]
        if pts:
            ax.plot([n for n, _ in pts], [y for _, y in pts], style, color=color, label=label)
    kn = [(r["n"], r["K_over_n_log10"]) for r in urows if r.get("K_over_n_log10") is not None]
    if kn and (not shown or max(y for _, y in kn) <= max(shown) + OFF_CHART):
        ax.plot([n for n, _ in kn], [y for _, y in kn], "^-", color="tab:red", label="uniform K/n")
    elif kn:  # K/n of order 10^400 would flatten every other curve: marked at the top
        lo, hi = ax.get_ylim()
        y = hi + 0.1 * (hi - lo)
        ax.plot(
            [n for n, _ in kn],
            [y] * len(kn),
            "^",
            color="tab:red",
            label=f"uniform K/n ≥ 10^{min(v for _, v in kn):.0f} (off the chart)",
        )
        ax.set_ylim(lo, y + 0.1 * (hi - lo))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n")
    ax.set_ylabel("log₁₀ value")
    ax.set_title("Lemma 5 / Theorem 6 (log–log)")
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    return _svg(fig)
