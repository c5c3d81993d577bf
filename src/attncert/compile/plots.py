"""Figures for notebook 04 (matplotlib, headless-safe: figures are built without pyplot).

* :func:`attention_heatmaps` — one head's attention weights on a few strings;
* :func:`target_weight` / :func:`plot_sharpening` — the smallest attention weight a head
  puts on its intended key, over all strings of a length, as n grows;
* :func:`failure_lengths` / :func:`plot_failures` — fraction of strings on which a model
  disagrees with the interpreter, per length (e.g. with a fixed temperature).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from attncert.compile.agreement import all_strings, disagreements
from attncert.model.forward import forward
from attncert.model.spec import Model


def attention_heatmaps(model: Model, strings: Sequence[str], layer: int, head: int) -> Figure:
    """Heatmaps (query row i, key column j) of one head on each string."""
    fig = Figure(figsize=(3.2 * len(strings), 3.0))
    for k, w in enumerate(strings):
        ax = fig.add_subplot(1, len(strings), k + 1)
        wts = forward(model, [w]).layers[layer].weights[0, head]
        ax.imshow(wts, vmin=0, vmax=1, cmap="viridis")
        labels = [a for a in (model.bos, *w, model.eos) if a is not None]
        ax.set_xticks(range(len(labels)), labels)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_title(f"{w!r}", fontsize=9)
        ax.set_xlabel("key j")
        if k == 0:
            ax.set_ylabel("query i")
    rec = next(
        (r for r in model.meta.get("heads", ()) if (r["layer"], r["head"]) == (layer, head)), None
    )
    if rec:
        fig.suptitle(f"layer {layer + 1}, head {head}: {rec['pattern']}", fontsize=9)
    fig.tight_layout()
    return fig


def target_weight(model: Model, layer: int, head: int, strings: Sequence[str]) -> float:
    """min over strings and queries of the largest attention weight (the weight the head
    puts on the key it is meant to pick), ignoring queries with no visible key."""
    wts = forward(model, list(strings)).layers[layer].weights[:, head]
    peak = wts.max(axis=-1)
    peak = peak[wts.sum(axis=-1) > 0.5]
    return float(peak.min()) if peak.size else 1.0


def plot_sharpening(curves: dict[str, tuple[Sequence[int], Sequence[float]]]) -> Figure:
    fig = Figure(figsize=(5.5, 3.2))
    ax = fig.add_subplot(1, 1, 1)
    for label, (ns, ws) in curves.items():
        ax.plot(ns, ws, marker="o", ms=3, label=label)
    ax.axhline(0.75, color="grey", ls=":", lw=1)
    ax.set_xlabel("string length n")
    ax.set_ylabel("min weight on intended key")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def failure_lengths(model: Model, alphabet: str, max_len: int) -> list[float]:
    """Fraction of strings of each length 1..max_len on which some node disagrees."""
    out = []
    for n in range(1, max_len + 1):
        ws = all_strings(alphabet, n)
        bad = {d.string for d in disagreements(model, ws, limit=len(ws) * n * 10)}
        out.append(len(bad) / len(ws))
    return out


def plot_failures(curves: dict[str, Sequence[float]]) -> Figure:
    fig = Figure(figsize=(5.5, 3.2))
    ax = fig.add_subplot(1, 1, 1)
    for label, fr in curves.items():
        ax.plot(np.arange(1, len(fr) + 1), fr, marker="o", ms=3, label=label)
    ax.set_xlabel("string length n")
    ax.set_ylabel("fraction of strings wrong")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
