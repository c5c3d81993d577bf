"""Pictures of a restriction certificate (Hahn 2020, §5, Figures 1–3, redrawn from data).

Each function takes a model and a :class:`~attncert.hard.certificate.Certificate` (or
the chain of restrictions ρ₀ ≼ … ≼ ρ_L) and returns a matplotlib ``Figure``; nothing
is shown or saved. Figures are built without pyplot (``matplotlib.figure.Figure``), so
they need no GUI backend and run headless (``fig.savefig`` renders with Agg).

* :func:`plot_restrictions` — ρ₀ … ρ_L over the string (rows), fixed symbols vs free,
  with the output's dependency set marked.
* :func:`plot_dependencies` — Figure 1: which inputs each activation of each layer
  depends on after the collapse.
* :func:`plot_capture_lines` — Figure 2: where each layer-ℓ head may attend once ρ_ℓ
  is applied — the blocker (solid) and the positions still above it (dashed).
* :func:`plot_capture_matrix` — the same for every (query position, query value) at
  once: blocker / tied / above / ignored / masked.
* :func:`plot_max_attention` — Figure 3(a): the maximum attention value (7) of one
  query value against every key position, the blocker's score as a threshold.
* :func:`plot_free_fraction` — free positions per layer and stage, against the
  proof's bound (1−2η)(1−(1+δ)q)·C·n.
* :func:`invariant_table` — the trace's invariants as text.

Display only: captures come from :func:`attncert.hard.collapse.collapse_all` (the
checker's exact collapse); the attention *values* drawn by :func:`plot_max_attention`
are float64 and decide nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from attncert.certificates.hard import Certificate
from attncert.errors import InputError
from attncert.hard.collapse import LayerCollapse, collapse_all
from attncert.hard.tables import Table
from attncert.model.forward import layer_norm
from attncert.model.spec import Model
from attncert.restriction import Restriction

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FREE_COLOR = "#f4f4f4"
SYMBOL_COLORS = ("#3b6fb6", "#e08a2c", "#4c9a5a", "#b54a8f", "#7a6a4f", "#5aa7b8")
BLOCKER_COLOR = "#c0392b"
ABOVE_COLOR = "#2e86de"
TIED_COLOR = "#f39c12"
IGNORED_COLOR = "#dcdcdc"
MASKED_COLOR = "#ffffff"


def _restrictions(source: Certificate | Sequence[Restriction]) -> tuple[Restriction, ...]:
    if isinstance(source, Certificate):
        return source.restrictions
    rs = tuple(source)
    if not rs:
        raise InputError("expected at least one restriction", where="restrictions")
    return rs


def _new_figure(width: float, height: float) -> Figure:
    # Figure() directly (not pyplot): no global state, safe in threads and headless
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig


def _token_labels(model: Model, n: int) -> list[str]:
    """1-based input positions; BOS/EOS tokens by name."""
    off = model.input_offset()
    labels = []
    for t in range(model.n_tokens(n)):
        u = t - off
        labels.append(str(u + 1) if 0 <= u < n else ("BOS" if t < off else "EOS"))
    return labels


def _ticks(ax: Axes, count: int, labels: Sequence[str] | None = None, axis: str = "x") -> None:
    step = max(1, int(np.ceil(count / 32)))
    idx = list(range(0, count, step))
    set_ticks = ax.set_xticks if axis == "x" else ax.set_yticks
    set_labels = ax.set_xticklabels if axis == "x" else ax.set_yticklabels
    set_ticks(idx)
    set_labels([labels[i] if labels is not None else str(i + 1) for i in idx], fontsize=7)


# ----- (a) the restriction over the string ------------------------------------------------
def plot_restrictions(
    source: Certificate | Sequence[Restriction],
    *,
    output_dependency: Sequence[int] | None = None,
    title: str | None = None,
) -> Figure:
    """ρ₀ … ρ_L as a strip per row: each input position coloured by its fixed symbol,
    light grey when free. The output's dependency set (0-based input positions; taken
    from the certificate by default) is outlined on the last row."""
    rs = _restrictions(source)
    if output_dependency is None and isinstance(source, Certificate):
        output_dependency = source.output_dependency
    alphabet = rs[0].alphabet
    n = rs[0].n
    index = {s: k + 1 for k, s in enumerate(alphabet)}
    grid = np.array([[0 if s is None else index[s] for s in r.fixed] for r in rs])
    colors = [FREE_COLOR, *[SYMBOL_COLORS[k % len(SYMBOL_COLORS)] for k in range(len(alphabet))]]
    fig = _new_figure(min(14.0, 3 + 0.12 * n), 0.9 + 0.45 * len(rs))
    ax = fig.add_subplot()
    ax.imshow(
        grid,
        cmap=ListedColormap(colors),
        vmin=-0.5,
        vmax=len(alphabet) + 0.5,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_yticks(range(len(rs)))
    ax.set_yticklabels(
        [f"ρ{_sub(k)}  ({r.num_free}/{n} free)" for k, r in enumerate(rs)], fontsize=8
    )
    _ticks(ax, n)
    ax.set_xlabel("input position")
    if n <= 80:
        for k, r in enumerate(rs):
            for i, s in enumerate(r.fixed):
                if s is not None:
                    ax.text(i, k, s, ha="center", va="center", fontsize=6, color="white")
    for u in output_dependency or ():
        ax.add_patch(
            Rectangle((u - 0.5, len(rs) - 1.5), 1, 1, fill=False, edgecolor="black", linewidth=1.5)
        )
    handles = [Patch(facecolor=FREE_COLOR, edgecolor="grey", label="free (*)")]
    handles += [
        Patch(facecolor=colors[k + 1], label=f"fixed to {s!r}") for k, s in enumerate(alphabet)
    ]
    if output_dependency:
        handles.append(Patch(facecolor="none", edgecolor="black", label="output dependency set"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    ax.set_title(title or "Restrictions ρ₀ ≼ … ≼ ρ_L over the input")
    return fig


def _sub(k: int) -> str:
    return str(k).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


# ----- collapse data ----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class LayerView:
    """What one layer's collapse looked at: the layer-(ℓ−1) tables under ρ_ℓ (query and
    key values are rows of these) and the exact captures."""

    layer: int
    inputs: tuple[Table, ...]
    step: LayerCollapse


def layer_views(
    model: Model, source: Certificate | Sequence[Restriction], *, max_deps: int | None = None
) -> tuple[LayerView, ...]:
    """Re-run the exact collapse of every layer (as the checker does) and keep the inputs."""
    rs = _restrictions(source)
    if max_deps is None:
        max_deps = source.max_deps if isinstance(source, Certificate) else 16
    if len(rs) != model.num_layers + 1:
        raise InputError(
            f"{len(rs)} restrictions for a {model.num_layers}-layer model",
            where="restrictions",
            expected=f"{model.num_layers + 1} (ρ₀ … ρ_L)",
        )
    _, steps = collapse_all(model, rs, max_deps=max_deps)
    return tuple(LayerView(ell, step.inputs, step) for ell, step in enumerate(steps, start=1))


def _view(views: Sequence[LayerView], layer: int) -> LayerView:
    if not 1 <= layer <= len(views):
        raise InputError(f"layer {layer} outside 1..{len(views)}", where="layer")
    return views[layer - 1]


def _check_head(model: Model, layer: int, head: int) -> None:
    heads = len(model.layers[layer - 1].heads)
    if not 0 <= head < heads:
        raise InputError(f"head {head} outside 0..{heads - 1}", where="head")


# ----- Figure 1: dependency sets per layer ------------------------------------------------
def plot_dependencies(model: Model, cert: Certificate) -> Figure:
    """Figure 1 (d), from the certificate: the inputs (bottom row, coloured by ρ_L) and,
    for each layer ℓ, a line from every token position j to each input of its claimed
    dependency set S_j⁽ˡ⁾; the decision's set is drawn in black at the top."""
    n = cert.n
    L = len(cert.dependency_sets)
    off = model.input_offset()
    fig = _new_figure(min(14.0, 3 + 0.15 * n), 1.6 + 1.1 * L)
    ax = fig.add_subplot()
    rho = cert.final_restriction
    index = {s: k for k, s in enumerate(rho.alphabet)}
    xs = np.arange(n)
    cols = [
        FREE_COLOR if s is None else SYMBOL_COLORS[index[s] % len(SYMBOL_COLORS)] for s in rho.fixed
    ]
    ax.scatter(xs, np.zeros(n), c=cols, edgecolors="grey", s=40, zorder=3)
    for ell, layer in enumerate(cert.dependency_sets, start=1):
        for j, deps in enumerate(layer):
            x = j - off
            for u in deps:
                ax.plot(
                    [x, u],
                    [ell, ell - 1 if ell == 1 else 0],
                    color=ABOVE_COLOR,
                    alpha=0.25 if ell > 1 else 0.6,
                    linewidth=0.8,
                    zorder=1,
                )
        toks = np.arange(len(layer)) - off
        sizes = [8 + 12 * len(d) for d in layer]
        ax.scatter(toks, np.full(len(layer), ell), s=sizes, color="#888888", zorder=3)
    top = L + 0.8
    x_out = cert.output_position - off
    ax.scatter([x_out], [top], marker="s", color="black", zorder=4)
    for u in cert.output_dependency:
        ax.plot([x_out, u], [top, 0], color="black", linewidth=1.2, zorder=2)
    ax.set_yticks([0, *range(1, L + 1), top])
    ax.set_yticklabels(["input (ρ_L)", *[f"layer {ell}" for ell in range(1, L + 1)], "decision"])
    _ticks(ax, n)
    ax.set_xlabel("position (marker size: |S_j|)")
    ax.set_title(
        f"Dependency sets after collapsing every layer (n = {n}; decision depends on "
        f"{len(cert.output_dependency)} input position(s))"
    )
    return fig


# ----- Figure 2: attention captured by blockers -------------------------------------------
def plot_capture_lines(
    model: Model,
    source: Certificate | Sequence[Restriction],
    layer: int = 1,
    head: int = 0,
    *,
    views: Sequence[LayerView] | None = None,
    positions: Sequence[int] | None = None,
) -> Figure:
    """Figure 2 (b), from the exact collapse: bottom row = layer-(ℓ−1) activations
    under ρ_ℓ (filled when constant, i.e. every input they read is fixed), top row = head
    ``head`` of layer ``layer`` at each token position. For every value z of the query's
    own activation, a solid line goes to its blocker (the best constant position) and a
    dashed line to each non-constant position that could still beat it. ``positions``
    (0-based token indices) limits the queries drawn."""
    _check_head(model, layer, head)
    views = views if views is not None else layer_views(model, source)
    v = _view(views, layer)
    caps = v.step.captures[head]
    n_tok = len(v.inputs)
    labels = _token_labels(model, _restrictions(source)[0].n)
    queries = range(n_tok) if positions is None else positions
    fig = _new_figure(min(14.0, 3 + 0.18 * n_tok), 3.6)
    ax = fig.add_subplot()
    const = np.array([t.is_constant for t in v.inputs])
    xs = np.arange(n_tok)
    ax.scatter(xs[const], np.zeros(const.sum()), s=40, color="#555555", zorder=3)
    ax.scatter(
        xs[~const], np.zeros((~const).sum()), s=40, facecolor="white", edgecolor="#555555", zorder=3
    )
    ax.scatter(xs, np.ones(n_tok), s=30, marker="s", color="#999999", zorder=3)
    n_above = 0
    for i in queries:
        for z, cap in enumerate(caps[i]):
            shade = 0.55 + 0.45 * (z / max(1, len(caps[i]) - 1)) if len(caps[i]) > 1 else 1.0
            if cap.blocker is not None:
                ax.plot([i, cap.blocker], [1, 0], color=BLOCKER_COLOR, alpha=shade, lw=1.0)
            for m in cap.tied:
                if m != cap.blocker:
                    ax.plot([i, m], [1, 0], color=TIED_COLOR, alpha=shade, lw=1.0)
            for m in cap.above:
                n_above += 1
                ax.plot([i, m], [1, 0], color=ABOVE_COLOR, ls="--", alpha=shade, lw=1.0)
    ax.set_yticks([0, 1])
    ax.set_yticklabels([f"layer {layer - 1} activations", f"layer {layer}, head {head}"])
    ax.set_ylim(-0.3, 1.3)
    _ticks(ax, n_tok, labels)
    ax.set_xlabel("token position")
    ax.legend(
        handles=[
            Line2D([], [], color=BLOCKER_COLOR, label="→ blocker (captured)"),
            Line2D([], [], color=TIED_COLOR, label="→ tied with blocker (average-hard)"),
            Line2D([], [], color=ABOVE_COLOR, ls="--", label="→ may still win (above)"),
            Line2D([], [], marker="o", color="#555555", ls="", label="constant under ρ"),
            Line2D(
                [],
                [],
                marker="o",
                mfc="white",
                color="#555555",
                ls="",
                label="depends on free inputs",
            ),
        ],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=7,
    )
    ax.set_title(
        f"Attention captured by blockers: layer {layer}, head {head} under ρ{_sub(layer)} "
        f"({n_above} uncaptured line(s))"
    )
    return fig


CAPTURE_CODES = {"masked": 0, "ignored": 1, "above": 2, "tied": 3, "blocker": 4}


def capture_matrix(
    model: Model, view: LayerView, head: int
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Rows = (token position i, value index z of y_i), columns = key positions; entries
    are :data:`CAPTURE_CODES` (masked / ignored / above / tied / blocker)."""
    caps = view.step.captures[head]
    n_tok = len(view.inputs)
    vis = model.layers[view.layer - 1].heads[head].mask.matrix(n_tok)
    rows = []
    keys = []
    for i in range(n_tok):
        for z, cap in enumerate(caps[i]):
            r = np.where(vis[i], CAPTURE_CODES["ignored"], CAPTURE_CODES["masked"])
            r[list(cap.above)] = CAPTURE_CODES["above"]
            r[list(cap.tied)] = CAPTURE_CODES["tied"]
            if cap.blocker is not None:
                r[cap.blocker] = CAPTURE_CODES["blocker"]
            rows.append(r)
            keys.append((i, z))
    return np.array(rows).reshape(len(rows), n_tok), keys


def plot_capture_matrix(
    model: Model,
    source: Certificate | Sequence[Restriction],
    layer: int = 1,
    head: int = 0,
    *,
    views: Sequence[LayerView] | None = None,
) -> Figure:
    """Every (query position, query value) of one head against every key position:
    which key is the blocker, which are tied with it (average-hard), which may still
    beat it (above), which are ignored and which are masked."""
    _check_head(model, layer, head)
    views = views if views is not None else layer_views(model, source)
    v = _view(views, layer)
    mat, keys = capture_matrix(model, v, head)
    labels = _token_labels(model, _restrictions(source)[0].n)
    colors = [MASKED_COLOR, IGNORED_COLOR, ABOVE_COLOR, TIED_COLOR, BLOCKER_COLOR]
    fig = _new_figure(min(14.0, 3 + 0.12 * mat.shape[1]), min(12.0, 1.5 + 0.06 * len(keys)))
    ax = fig.add_subplot()
    ax.imshow(
        mat,
        cmap=ListedColormap(colors),
        vmin=-0.5,
        vmax=4.5,
        aspect="auto",
        interpolation="nearest",
    )
    _ticks(ax, mat.shape[1], labels)
    row_labels = [f"{labels[i]}:z{z}" for i, z in keys]
    _ticks(ax, len(keys), row_labels, axis="y")
    ax.set_xlabel("key position")
    ax.set_ylabel("query position : value of y_i")
    ax.legend(
        handles=[
            Patch(facecolor=c, edgecolor="grey", label=name)
            for name, c in zip(CAPTURE_CODES, colors, strict=True)
        ],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=7,
    )
    captured = sum(1 for r in mat if not (r == CAPTURE_CODES["above"]).any())
    ax.set_title(
        f"Layer {layer}, head {head}: {captured}/{len(keys)} query values captured by a blocker"
    )
    return fig


# ----- Figure 3: maximum attention values -------------------------------------------------
def max_attention(
    model: Model, view: LayerView, head: int, position: int, value: int
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 maximum attention value (7) M(i, h, z, m) of query value ``value`` at token
    position ``position`` against every key position m (−inf where masked), and a boolean
    per m: m is constant under ρ. Display only."""
    layer = model.layers[view.layer - 1]
    hd = layer.heads[head]
    t = view.inputs[position]
    if not 0 <= value < len(t.values):
        raise InputError(f"value {value} outside 0..{len(t.values) - 1}", where="value")

    def heads_input(floats: np.ndarray) -> np.ndarray:
        pre = layer.pre_norm and layer.norm1 is not None
        return layer_norm(layer.norm1, floats) if pre else floats

    q = hd.w_q @ heads_input(t.floats[value : value + 1])[0] + hd.bias("b_q")
    vis = hd.mask.matrix(len(view.inputs))[position]
    m_best = np.array(
        [
            ((heads_input(key.floats) @ hd.w_k.T + hd.bias("b_k")) @ q).max() if vis[m] else -np.inf
            for m, key in enumerate(view.inputs)
        ]
    )
    const = np.array([key.is_constant for key in view.inputs])
    return m_best, const


def plot_max_attention(
    model: Model,
    source: Certificate | Sequence[Restriction],
    layer: int = 1,
    head: int = 0,
    position: int | None = None,
    value: int = 0,
    *,
    views: Sequence[LayerView] | None = None,
) -> Figure:
    """Figure 3 (a): for one query (token ``position``, default the decision position;
    value index ``value`` of its activation), the maximum attention value against every
    key position. The blocker's score is the threshold: only positions above it (blue)
    can still be attended to; everything below is ignored whatever the free inputs are."""
    _check_head(model, layer, head)
    views = views if views is not None else layer_views(model, source)
    v = _view(views, layer)
    rs = _restrictions(source)
    if position is None:
        position = model.readout.index(model.n_tokens(rs[0].n))
    if not 0 <= position < len(v.inputs):
        raise InputError(f"position {position} outside 0..{len(v.inputs) - 1}", where="position")
    m_best, const = max_attention(model, v, head, position, value)
    cap = v.step.captures[head][position][value]
    labels = _token_labels(model, rs[0].n)
    colors = np.array([IGNORED_COLOR] * len(m_best), dtype=object)
    colors[const] = "#888888"
    colors[list(cap.above)] = ABOVE_COLOR
    colors[list(cap.tied)] = TIED_COLOR
    if cap.blocker is not None:
        colors[cap.blocker] = BLOCKER_COLOR
    finite = np.isfinite(m_best)
    fig = _new_figure(min(14.0, 3 + 0.12 * len(m_best)), 3.4)
    ax = fig.add_subplot()
    xs = np.arange(len(m_best))
    lo = m_best[finite].min() if finite.any() else 0.0
    hi = m_best[finite].max() if finite.any() else 1.0
    lo -= 0.05 * (hi - lo) + 1e-12  # every bar visible, the lowest too
    ax.bar(xs[finite], m_best[finite] - lo, bottom=lo, color=list(colors[finite]), width=0.8)
    if cap.blocker is not None:
        ax.axhline(m_best[cap.blocker], color=BLOCKER_COLOR, ls=":", lw=1)
    ax.axvline(position, color="black", lw=0.6, alpha=0.5)
    _ticks(ax, len(m_best), labels)
    ax.set_xlabel("key position m")
    ax.set_ylabel("max over values of m of score(z, ·)")
    ax.legend(
        handles=[
            Patch(facecolor=BLOCKER_COLOR, label="blocker b (its score: dotted)"),
            Patch(facecolor=TIED_COLOR, label="tied with b"),
            Patch(facecolor=ABOVE_COLOR, label="above b: may be attended"),
            Patch(facecolor="#888888", label="other constant positions"),
            Patch(facecolor=IGNORED_COLOR, label="non-constant, below b"),
        ],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=7,
    )
    ax.set_title(
        f"Maximum attention values (7): layer {layer}, head {head}, query "
        f"{labels[position]} with value z{value} (float, display only)"
    )
    return fig


# ----- (c) free positions per stage -------------------------------------------------------
def _invariant(layer_trace: dict, name: str) -> dict | None:
    return next((i for i in layer_trace.get("invariants", []) if i["name"] == name), None)


def plot_free_fraction(cert: Certificate) -> Figure:
    """Free fraction of the input per layer and stage (before; after Stages 1, 2, 3),
    from the proof trace, with the proof's lower bound after Stage 3 marked."""
    layers = cert.trace.get("layers", [])
    if not layers:
        raise InputError("the certificate has no proof trace", where="trace.layers")
    n = cert.n
    stages = ["before", "Stage 1", "Stage 2", "Stage 3"]
    data = np.full((len(layers), 4), np.nan)
    bounds = np.full(len(layers), np.nan)
    for k, lt in enumerate(layers):
        s1 = _invariant(lt, "free after Stage 1")
        s3 = _invariant(lt, "free after Stage 3")
        data[k] = [
            lt["free_before"],
            s1["value"] if s1 else np.nan,
            lt.get("free_after_stage2", np.nan),
            lt["free_after"],
        ]
        if s3:
            bounds[k] = s3["bound"]
    data = data / n
    fig = _new_figure(4.5 + 1.4 * len(layers), 3.4)
    ax = fig.add_subplot()
    width = 0.2
    shades = ["#bbbbbb", "#8fb3de", "#3b6fb6", "#1b3f76"]
    for s, name in enumerate(stages):
        ax.bar(
            np.arange(len(layers)) + (s - 1.5) * width,
            data[:, s],
            width,
            label=name,
            color=shades[s],
        )
    for k, b in enumerate(bounds):
        if np.isfinite(b):
            ax.hlines(
                b / n,
                k + 0.5 * width,
                k + 2.5 * width,
                color=BLOCKER_COLOR,
                lw=2,
                label="bound (1−2η)(1−(1+δ)q)C" if k == 0 else None,
            )
    ax.set_xticks(range(len(layers)))
    ax.set_xticklabels([f"layer {lt['layer']}" for lt in layers])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("free fraction of the input")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    ax.set_title(
        f"Free positions per stage\n(n = {n}, {cert.trace.get('method', '?')}; "
        f"final {cert.final_restriction.num_free}/{n} free)"
    )
    return fig


def invariant_table(cert: Certificate) -> str:
    """The trace's invariants per layer as aligned text: value, relation, bound, holds."""
    lines = [f"{'layer':>5}  {'invariant':<52} {'value':>8}    {'bound':>9}  holds  source"]
    for lt in cert.trace.get("layers", []):
        for inv in lt.get("invariants", []):
            lines.append(
                f"{lt['layer']:>5}  {inv['name']:<52} {inv['value']:>8g} {inv['relation']:>3} "
                f"{inv['bound']:>9.4g}  {'yes' if inv['holds'] else 'NO ':<5}  {inv['source']}"
            )
        s3 = lt.get("stage3")
        if s3:
            extra = ", ".join(f"{k}={v}" for k, v in s3.items())
            lines.append(f"{lt['layer']:>5}  Stage 3: {extra}")
        else:
            lines.append(f"{lt['layer']:>5}  Stage 3: not needed (no open tuple after Stage 2)")
    return "\n".join(lines)
