"""Measured sensitivity next to Lemma 5's bound: one table, one plot.

:func:`sensitivity_report` runs :func:`attncert.soft.sensitivity.sensitivity_profile`
and, if the model satisfies Lemma 5's hypotheses, the rigorous induction bound
(with the supplement's term) and the published (uncorrected) one per n; otherwise
it records which hypothesis fails.  :func:`plot_sensitivity` draws the log–log
plot (matplotlib, Agg).  Used by ``attncert sensitivity`` and the notebook.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from attncert.errors import AttncertError
from attncert.model.spec import Model
from attncert.soft import bounds as B
from attncert.soft.sensitivity import SensitivityProfile, sensitivity_profile


@dataclass(frozen=True)
class SensitivityReport:
    """Measured maxima and (log₁₀) bounds per n."""

    profile: SensitivityProfile
    constants: B.Lemma5Constants | None
    bound_log10: tuple[float, ...]  # rigorous, corrected; NaN if not applicable
    bound_uncorrected_log10: tuple[float, ...]  # published inequality (not sound)
    closed_form_log10: tuple[float, ...]  # ‖w‖·H^L C^{2L} D / n
    not_applicable: str | None  # why Lemma 5 does not apply, if it does not
    n0_corrected: int | None

    def rows(self) -> list[dict]:
        out = []
        for k, r in enumerate(self.profile.results):
            out.append(
                {
                    "n": r.n,
                    "method": r.method,
                    "metric": r.metric,
                    "max_change": r.value,
                    "logit_change": r.witness.logit,
                    "probability_change": r.witness.probability,
                    "activation_change": r.witness.activation,
                    "witness_x": r.witness.x,
                    "witness_position": r.witness.position,
                    "witness_symbol": r.witness.symbol,
                    "evaluations": r.evaluations,
                    "seconds": r.seconds,
                    "bound_log10": self.bound_log10[k],
                    "bound_uncorrected_log10": self.bound_uncorrected_log10[k],
                    "closed_form_log10": self.closed_form_log10[k],
                }
            )
        return out

    def as_dict(self) -> dict:
        return {
            "model": self.profile.model_name,
            "metric": self.profile.metric,
            "exponent": self.profile.exponent,
            "lemma5": None if self.constants is None else self.constants.as_dict(),
            "n0_corrected": self.n0_corrected,
            "not_applicable": self.not_applicable,
            "rows": self.rows(),
        }


def sensitivity_report(
    model: Model,
    ns: Sequence[int],
    *,
    metric: str = "logit",
    seed: int = 0,
    restarts: int = 8,
    candidates: int = 32,
    time_budget: float | None = None,
    norm: str = "certified",
    progress: bool = False,
) -> SensitivityReport:
    """Measure and bound (module docstring).  The bound is on |Δlogit| for
    ``metric="logit"``, ‖Δy‖ for ``"activation"`` and |Δσ| for ``"probability"``."""
    prof = sensitivity_profile(
        model,
        ns,
        metric,
        seed=seed,
        restarts=restarts,
        candidates=candidates,
        time_budget=time_budget,
        progress=progress,
    )
    nan = tuple(math.nan for _ in ns)
    try:
        consts = B.lemma5_constants(model, norm=norm)
    except AttncertError as err:
        return SensitivityReport(prof, None, nan, nan, nan, str(err), None)
    bnd, unc, closed = [], [], []
    for n in ns:
        n_tok = model.n_tokens(n)
        for corrected, acc in ((True, bnd), (False, unc)):
            ib = B.induction_bounds(consts, n_tok, corrected=corrected)
            value = {
                "logit": ib.readout_change,
                "activation": ib.activation_change,
                "probability": ib.probability_change,
            }[metric]
            acc.append(B.log10(value))
        _, co = consts.closed_form(consts.L, n_tok)
        factor = {
            "logit": consts.readout_norm,
            "activation": 1,
            "probability": consts.readout_norm / 4,
        }
        closed.append(B.log10(co * factor[metric]))
    return SensitivityReport(
        prof, consts, tuple(bnd), tuple(unc), tuple(closed), None, B.n0_corrected(consts)
    )


def format_table(report: SensitivityReport) -> str:
    """A plain-text table of :meth:`SensitivityReport.rows`."""
    head = f"{'n':>6}  {'method':<10} {'max change':>11} {'|Δprob|':>10} {'log10 bound':>11} "
    head += f"{'(published)':>11}  witness"
    lines = [f"model {report.profile.model_name}   metric {report.profile.metric}", head]
    for r in report.rows():
        x = r["witness_x"]
        x = x if len(x) <= 24 else x[:10] + "…" + x[-10:]
        lines.append(
            f"{r['n']:>6}  {r['method']:<10} {r['max_change']:>11.4e} "
            f"{r['probability_change']:>10.3e} {r['bound_log10']:>11.2f} "
            f"{r['bound_uncorrected_log10']:>11.2f}  i={r['witness_position']}→"
            f"{r['witness_symbol']} x={x}"
        )
    lines.append(
        f"fitted decay exponent: {report.profile.exponent:.3f} (Lemma 5: ≤ −1 asymptotically)"
    )
    if report.not_applicable:
        lines.append(f"Lemma 5 bound not applicable: {report.not_applicable}")
    elif report.constants is not None:
        c = report.constants
        lines.append(
            "Lemma 5 constants: "
            + ", ".join(
                f"{k}={v}" for k, v in c.as_dict().items() if k in ("D", "F", "A", "L_fact", "C")
            )
            + f"; published steps valid from n ≥ {c.n0_original}; closed forms dominate the "
            f"corrected recurrence from n ≥ {report.n0_corrected}"
        )
    return "\n".join(lines)


def plot_sensitivity(report: SensitivityReport, path=None, ax=None):
    """Log–log plot of the measured maximum and the bounds (finite, < 10^300) vs n."""
    import matplotlib

    if ax is None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(6, 4))
    rows = report.rows()
    ns = [r["n"] for r in rows]
    ax.loglog(
        ns, [r["max_change"] for r in rows], "o-", label=f"measured max |Δ{report.profile.metric}|"
    )
    for key, label, style in (
        ("bound_log10", "Lemma 5 bound (with S2 term)", "s--"),
        ("bound_uncorrected_log10", "published inequality (no S2 term)", "^:"),
    ):
        vals = [r[key] for r in rows]
        if all(math.isfinite(v) and v < 300 for v in vals):
            ax.loglog(ns, [10**v for v in vals], style, label=label)
    ax.set_xlabel("input length n")
    ax.set_ylabel("largest change")
    ax.set_title(f"{report.profile.model_name}: fitted exponent {report.profile.exponent:.2f}")
    ax.legend(fontsize=8)
    if own and path is not None:
        from attncert.figures import save_figure

        try:
            save_figure(fig, path)  # the format follows the extension
        finally:
            plt.close(fig)
    return ax


def plot_cross_entropy(points, ax, title: str, gap_constant: float | None = None):
    """Model / optimal / unigram cross-entropy (nats) vs n on a log-x axis; for 2DYCK,
    ``gap_constant`` draws Hahn's asymptotic lower bound optimal + P₀(1 − p)·log 2."""
    ns = [p.n for p in points]
    ax.errorbar(
        ns,
        [p.model_ce for p in points],
        yerr=[p.half_width for p in points],
        fmt="o-",
        label="model",
        capsize=2,
    )
    ax.plot(ns, [p.optimal for p in points], "k--", label="optimal (Bayes)")
    ax.plot(ns, [p.unigram for p in points], "r:", label="unigram chance")
    if gap_constant is not None:
        ax.plot(
            ns,
            [p.optimal + gap_constant for p in points],
            "g-.",
            label="optimal + P₀(1−p)·log 2",
        )
    ax.set_xscale("log")
    ax.set_xlabel("prefix length n")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax


def plot_missing_term(rows, ax, title: str):
    """Extra term Σ|Δâ|‖y′‖ and original side Σâ‖Δy‖ (worst query j ≠ i) vs n, log–log."""
    by_layer: dict[tuple[int, int], list] = {}
    for r in rows:
        if r.query != "readout":
            by_layer.setdefault((r.layer, r.head), []).append(r)
    for (layer, head), rs in sorted(by_layer.items()):
        ns = [r.n for r in rs]
        ax.loglog(
            ns, [max(r.extra, 1e-300) for r in rs], "o-", label=f"extra, layer {layer} head {head}"
        )
        ax.loglog(
            ns,
            [max(r.original, 1e-300) for r in rs],
            "s--",
            label=f"original, layer {layer} head {head}",
        )
    ax.set_xlabel("input length n")
    ax.set_ylabel("size of term")
    ax.set_title(title)
    ax.legend(fontsize=7)
    return ax
