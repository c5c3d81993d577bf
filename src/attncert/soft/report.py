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

import numpy as np

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
    bound_capped: tuple[bool, ...] = ()  # the Lemma 5 number at this n is a cap (label it)
    n_below_cap: int | None = None  # input length from which it is Lemma 5, not a cap
    single_key: tuple[float, ...] = ()  # the witness's changed key's largest weight at the readout

    def regime(self) -> str:
        """The fit's regime in words (issue 19: a fit is shown with where it was made)."""
        ns = [r.n for r in self.profile.results]
        where = f"fitted on n = {min(ns)}…{max(ns)}" if ns else "no lengths"
        if self.single_key and max(self.single_key) >= 0.5:
            k = int(np.argmax(self.single_key))
            return (
                f"{where}, far from the asymptotic regime: at n = {ns[k]} a single differing "
                f"key takes weight {self.single_key[k]:.2f} of the readout query's softmax"
            )
        if self.bound_capped and any(self.bound_capped):
            return f"{where}; Lemma 5's bound is still a cap at these n"
        return f"{where} (Lemma 5: ≤ −1 asymptotically)"

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
                    "bound_is_cap": bool(self.bound_capped[k]) if self.bound_capped else None,
                    "single_key_weight": self.single_key[k] if self.single_key else None,
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
            "n_below_cap": self.n_below_cap,
            "regime": self.regime(),
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
    keys = tuple(single_key_weight(model, r.witness) for r in prof.results)
    try:
        consts = B.lemma5_constants(model, norm=norm)
    except AttncertError as err:
        return SensitivityReport(prof, None, nan, nan, nan, str(err), None, single_key=keys)
    bnd, unc, closed, capped = [], [], [], []
    for n in ns:
        n_tok = model.n_tokens(n)
        capped.append(B.induction_bounds(consts, n_tok).capped)
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
    below = B.n_below_cap(consts)
    return SensitivityReport(
        prof,
        consts,
        tuple(bnd),
        tuple(unc),
        tuple(closed),
        None,
        B.n0_corrected(consts),
        tuple(capped),
        None if below is None else max(1, below - consts.tokens_extra),
        keys,
    )


def single_key_weight(model: Model, witness) -> float:
    """The largest weight the witness's changed position gets at the readout query of the
    last layer, in x or x′ (max over heads): ≥ ½ means one key decides the softmax."""
    if not model.layers or not model.layers[-1].heads or len(witness.x) > 4096:
        return 0.0
    from attncert.model.forward import forward

    tr = forward(model, [witness.x, witness.x_prime])
    n_tok = tr.tokens.shape[1]
    i = witness.position - 1 + model.input_offset()
    w = tr.layers[-1].weights  # (2, H, N, N)
    rows = range(n_tok) if model.readout.pooled else [model.readout.index(n_tok)]
    return float(max(w[:, :, r, i].max() for r in rows))


def _log(x: float, width: int) -> str:
    """A log10 column: "—" where Lemma 5 gives no number (not ``nan``)."""
    return f"{'—':>{width}}" if x is None or x != x else f"{x:>{width}.2f}"


def format_table(report: SensitivityReport) -> str:
    """A plain-text table of :meth:`SensitivityReport.rows`."""
    head = f"{'n':>6}  {'method':<10} {'max change':>11} {'|Δprob|':>10} {'log10 L5':>14} "
    head += f"{'(published)':>11}  witness"
    lines = [f"model {report.profile.model_name}   metric {report.profile.metric}", head]
    for r in report.rows():
        x = r["witness_x"]
        x = x if len(x) <= 24 else x[:10] + "…" + x[-10:]
        cap = " (cap)" if r["bound_is_cap"] else "      "
        lines.append(
            f"{r['n']:>6}  {r['method']:<10} {r['max_change']:>11.4e} "
            f"{r['probability_change']:>10.3e} {_log(r['bound_log10'], 8)}{cap} "
            f"{_log(r['bound_uncorrected_log10'], 11)}  i={r['witness_position']}→"
            f"{r['witness_symbol']} x={x}"
        )
    if len({r.n for r in report.profile.results}) < 2:
        lines.append("fitted decay exponent: not fitted (it needs at least two lengths)")
    else:
        lines.append(f"fitted decay exponent: {report.profile.exponent:.3f}, {report.regime()}")
    if report.not_applicable:
        lines.append(f"Lemma 5 bound not applicable: {report.not_applicable}")
    elif report.constants is not None:
        c = report.constants
        if any(report.bound_capped):
            lines.append(
                "(cap): the number is the trivial cap (a weight bound e^{2A}/n clipped to 1, or "
                "2·F·‖w‖), not Lemma 5's O(1/n) bound; "
                + (
                    f"it is below the cap only from n ≥ {_big(report.n_below_cap)}"
                    if report.n_below_cap is not None
                    else "it stays a cap for every n ≤ 2^8192"
                )
            )
        lines.append(
            "Lemma 5 constants: "
            + ", ".join(
                f"{k}={v}" for k, v in c.as_dict().items() if k in ("D", "F", "A", "L_fact", "C")
            )
            + f"; the published induction's steps hold from n ≥ {c.n0_original} (a condition "
            "on the steps, not on the size of the bound); its closed forms dominate the "
            f"corrected recurrence from n ≥ {report.n0_corrected}"
        )
    return "\n".join(lines)


def _big(n: int | None) -> str:
    """An integer in words: exact when short, else ≈ 10^k."""
    if n is None:
        return "never"
    if n < 10**9:
        return str(n)
    return f"≈ 10^{math.log10(n):.1f}"


def plot_sensitivity(report: SensitivityReport, path=None, ax=None, certified=None):
    """Log–log plot of the measured maximum, the certified B(n) (``certified``: rows of
    :func:`attncert.soft.certified.table.certified_rows`) and Lemma 5's bounds (finite,
    < 10^300; hollow markers where the number is a cap) against n. ``path``'s extension
    picks the format (.png, .pdf, .svg)."""
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
    if certified:
        pts = [(r.n, r.bound) for r in certified if r.certified is not None]
        if pts:
            ax.loglog(*zip(*pts, strict=True), "D-", label="certified B(n)")
    for key, label, style in (
        ("bound_log10", "Lemma 5 bound (with S2 term)", "s--"),
        ("bound_uncorrected_log10", "published inequality (no S2 term)", "^:"),
    ):
        vals = [r[key] for r in rows]
        if all(math.isfinite(v) and v < 300 for v in vals):
            caps = [bool(r["bound_is_cap"]) for r in rows]
            if any(caps) and key == "bound_log10":
                label += " — hollow: cap"
            line = ax.loglog(ns, [10**v for v in vals], style, label=label)[0]
            hollow = [(n, 10**v) for n, v, c in zip(ns, vals, caps, strict=True) if c]
            if hollow and key == "bound_log10":
                ax.plot(*zip(*hollow, strict=True), "s", mfc="white", color=line.get_color())
    ax.set_xlabel("input length n")
    ax.set_ylabel("largest change of the logit")
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
