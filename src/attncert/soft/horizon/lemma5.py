"""The certified length horizon beside Lemma 5's mechanism (issue 40; notebook 03).

Lemma 5 (Hahn 2020): with bounded positions and a fixed inverse temperature, one
symbol's effect on a softmax head decays like K/n. Its mechanism in one line: a key whose
score beats the n − 1 others by Δ gets weight

    w(n) = e^Δ / (e^Δ + n − 1),                                    (≈ K/n, K = e^Δ)

so a model that must find that one position (the first-symbol test bed
:func:`attncert.model.testbeds.first_symbol_model`: right on every string of length n iff
w(n) > 1/2) is right exactly while n − 1 < e^Δ, i.e. for n < e^Δ + 1. With Yang et al.'s
scaling β(n) = log n the weight is n^Δ / (n^Δ + n − 1), above 1/2 at every n for Δ > 1.

:func:`horizon_rows` certifies the horizon of the test bed for several Δ
(:func:`attncert.soft.horizon.verify_lengths`, every number re-derived by the kernel),
:func:`log_temperature_row` the log-temperature model over [1, ∞), and
:func:`plot_horizon` draws both beside the closed forms: the weight against n with the
certified lengths on it, and the certified horizon against e^Δ with the prediction
e^Δ + 1 — one log–log figure. The closed forms are drawn for comparison; only the
kernel's numbers are certified.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from attncert.model.testbeds import first_symbol_model


@dataclass(frozen=True)
class HorizonRow:
    """One model's certified horizon over [1, hi] beside the prediction."""

    delta: float
    log_temperature: bool
    predicted: float  # where w(n) = 1/2: e^Δ + 1 (∞ for β = log n)
    proved_up_to: int | str | None
    first_refuted: int | None
    verdict: str
    hi: int | None
    seconds: float

    @property
    def brackets(self) -> bool:
        """The certified lengths bracket the prediction: proved_up_to < e^Δ + 1 ≤
        first_refuted (or, for β = log n, proved at every length)."""
        if self.log_temperature:
            return self.proved_up_to == "inf"
        up, first = self.proved_up_to, self.first_refuted
        return isinstance(up, int) and first is not None and up < self.predicted <= first


def first_key_weight(delta: float, n, *, log_temperature: bool = False) -> np.ndarray:
    """w(n) = e^{βΔ}/(e^{βΔ} + n − 1), β = 1 or log n, in floats (for drawing)."""
    n = np.asarray(n, dtype=float)
    if log_temperature:
        # n^Δ / (n^Δ + n − 1) = 1 / (1 + (n − 1)·n^{−Δ})
        return 1.0 / (1.0 + (n - 1.0) * np.power(n, -delta))
    return 1.0 / (1.0 + (n - 1.0) * math.exp(-delta))


def _row(delta, log_temperature, hi, time_limit, small) -> HorizonRow:
    from attncert.soft.horizon import verify_lengths

    model = first_symbol_model(delta, temperature="log" if log_temperature else 1.0)
    t0 = time.perf_counter()
    out = verify_lengths(model, "first_last", 1, hi, time_limit=time_limit, small=small)
    r = out.report
    if not r.accepted:
        raise AssertionError(f"the kernel rejected the horizon of {model.name}: {r.failures}")
    return HorizonRow(
        delta,
        log_temperature,
        math.inf if log_temperature else math.exp(delta) + 1.0,
        r.proved_up_to,
        r.first_refuted,
        out.verdict,
        hi,
        time.perf_counter() - t0,
    )


def horizon_rows(
    deltas, hi: int = 10**6, *, time_limit: float = 120.0, small: int = 8
) -> list[HorizonRow]:
    """The certified horizon of ``first_symbol_model(Δ)`` over [1, hi] for each Δ
    (``small``: lengths decided string by string)."""
    return [_row(float(d), False, hi, time_limit, small) for d in deltas]


def log_temperature_row(
    delta: float = 2.0, *, time_limit: float = 120.0, small: int = 8
) -> HorizonRow:
    """The certified horizon of ``first_symbol_model(Δ, temperature="log")`` over [1, ∞)."""
    return _row(float(delta), True, None, time_limit, small)


def format_rows(rows) -> str:
    """A text table: Δ, e^Δ + 1, proved_up_to, first_refuted, verdict, seconds."""
    out = [
        f"{'model':<22} {'lengths':<12} {'e^Δ + 1':>12} {'proved_up_to':>13} "
        f"{'first_refuted':>14} {'verdict':<10} {'brackets':<9} {'s':>6}"
    ]
    for r in rows:
        name = f"Δ = {r.delta:g}" + (", β = log n" if r.log_temperature else "")
        span = f"[1, {'∞' if r.hi is None else f'{r.hi:.0e}'.replace('+0', '')}]"
        pred = "∞" if r.log_temperature else f"{r.predicted:,.1f}"
        out.append(
            f"{name:<22} {span:<12} {pred:>12} {r.proved_up_to!s:>13} "
            f"{r.first_refuted if r.first_refuted is not None else '–'!s:>14} "
            f"{r.verdict:<10} {'yes' if r.brackets else 'NO':<9} {r.seconds:>6.1f}"
        )
    return "\n".join(out)


def plot_horizon(rows, log_row: HorizonRow, axes, *, one: int | None = None) -> None:
    """Two log–log panels on ``axes`` (a pair of matplotlib axes):

    left — the first key's weight w(n) against n for the fixed-β model ``rows[one]``
    (default: the middle row) and for the log-temperature model, the asymptote K/n,
    the threshold 1/2, and the lengths the kernel certified (proved: shaded; the first
    refuted: a red mark); right — the certified horizon (proved_up_to, first_refuted)
    of every row against e^Δ, with the prediction e^Δ + 1."""
    left, right = axes
    row = rows[len(rows) // 2 if one is None else one]
    top = 10 ** math.ceil(math.log10(max(row.predicted, 10.0) * 100))
    n = np.unique(np.geomspace(1, top, 400).round())
    k = math.exp(row.delta)
    left.plot(
        n, first_key_weight(row.delta, n), color="C0", label=f"w(n), Δ = {row.delta:g}, β = 1"
    )
    tail = n[n > k / 4]
    left.plot(tail, k / tail, color="C0", ls=":", label=f"K/n, K = e^Δ ≈ {k:,.0f} (Lemma 5)")
    left.plot(
        n,
        first_key_weight(log_row.delta, n, log_temperature=True),
        color="C2",
        label=f"w(n), Δ = {log_row.delta:g}, β = log n",
    )
    left.axhline(0.5, color="0.4", lw=0.8, ls="--")
    left.text(top / 400, 0.56, "w = 1/2: right iff above", fontsize=8, color="0.3")
    if isinstance(row.proved_up_to, int):
        left.axvspan(1, row.proved_up_to, color="C0", alpha=0.12, label="certified: right (β = 1)")
    if row.first_refuted is not None:
        left.axvline(
            row.first_refuted,
            color="C3",
            lw=1.2,
            label=f"certified: wrong from n = {row.first_refuted:,}",
        )
    if log_row.proved_up_to == "inf":
        left.annotate(
            "certified right for every n ≥ 1 (β = log n)",
            xy=(top, 0.97),
            xytext=(3, 0.08),
            fontsize=8,
            color="C2",
            arrowprops={"arrowstyle": "->", "color": "C2"},
        )
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_ylim(min(1e-4, k / top / 2), 1.5)
    left.set_xlabel("length n")
    left.set_ylabel("weight of the first key")
    left.set_title("one key's weight and the certified lengths")
    left.legend(fontsize=7, loc="lower left")

    x = np.geomspace(1, max(math.exp(r.delta) for r in rows) * 10, 200)
    right.plot(x, x + 1, color="0.4", ls="--", label="prediction e^Δ + 1 (w = 1/2)")
    ex = [math.exp(r.delta) for r in rows]
    right.scatter(ex, [r.proved_up_to for r in rows], color="C0", zorder=3, label="proved_up_to")
    right.scatter(
        ex,
        [r.first_refuted for r in rows],
        facecolors="none",
        edgecolors="C3",
        s=60,
        zorder=3,
        label="first_refuted",
    )
    for r, e in zip(rows, ex, strict=True):
        right.annotate(
            f"Δ = {r.delta:g}",
            (e, r.proved_up_to),
            textcoords="offset points",
            xytext=(6, -10),
            fontsize=8,
        )
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("e^Δ (the first key's score advantage, as a weight ratio)")
    right.set_ylabel("length n")
    right.set_title("certified horizon against the prediction")
    right.text(
        0.98,
        0.04,
        "proved_up_to = ⌊e^Δ⌋ + 1, first_refuted one more:\nthe two marks coincide at this scale",
        transform=right.transAxes,
        ha="right",
        fontsize=7,
        color="0.3",
    )
    right.legend(fontsize=7, loc="upper left")


__all__ = [
    "HorizonRow",
    "first_key_weight",
    "format_rows",
    "horizon_rows",
    "log_temperature_row",
    "plot_horizon",
]
