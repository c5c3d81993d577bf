"""Accuracy by length of a classifier and of its hardened version, measured by attncert.

The strings of each length come from the language's ``eval`` distribution
(:mod:`attncert.train.data`) with a seeded generator, so the table is reproducible.
Decisions are attncert's float64 forward pass (:func:`attncert.model.forward`) of the
imported model — what attncert certifies — not the PyTorch network's. For each length
the table gives the soft model's accuracy, the hardened model's
(:func:`attncert.model.harden`: every softmax head → leftmost argmax over the same
scores), how often the two decide alike, and whether the hardened model gave one
answer on every string of that length (a constant function there).

Needs no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attncert.model.forward import forward
from attncert.model.harden import harden
from attncert.model.spec import Model
from attncert.train.data import EVAL_DESCRIPTION, sample

# Largest number of attention-matrix entries (B·H·N²) one forward batch may hold.
_CELLS = 4_000_000


@dataclass(frozen=True)
class LengthRow:
    """One length's measurements (``strings`` strings, of which ``members`` in L)."""

    n: int
    strings: int
    members: int
    soft_accuracy: float
    hard_accuracy: float
    agreement: float
    hard_constant: bool

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "strings": self.strings,
            "members": self.members,
            "soft_accuracy": self.soft_accuracy,
            "hard_accuracy": self.hard_accuracy,
            "agreement": self.agreement,
            "hard_constant": self.hard_constant,
        }


@dataclass(frozen=True)
class Evaluation:
    """Accuracy by length of a soft model and its hardened version."""

    language: str
    distribution: str
    seed: int
    rows: tuple[LengthRow, ...]
    hardened_constant: bool  # the hardened model gave one answer on every string measured

    def to_dict(self) -> dict:
        return {
            "language": self.language,
            "distribution": self.distribution,
            "seed": self.seed,
            "hardened_constant": self.hardened_constant,
            "by_length": [r.to_dict() for r in self.rows],
        }


def decisions(model: Model, strings: Sequence[str]) -> np.ndarray:
    """Float decisions for equal-length ``strings``, in batches small enough for n = 4096."""
    strings = list(strings)
    if not strings:
        return np.zeros(0, dtype=bool)
    n_tok = model.n_tokens(len(strings[0]))
    heads = max(1, sum(len(layer.heads) for layer in model.layers))
    size = max(1, _CELLS // (heads * n_tok * n_tok))
    out = [forward(model, strings[k : k + size]).accept for k in range(0, len(strings), size)]
    return np.concatenate(out)


def evaluate(
    model: Model,
    language: str,
    lengths: Sequence[int],
    count: int,
    seed: int = 0,
    hard: Model | None = None,
) -> Evaluation:
    """Accuracy by length of ``model`` and its hardened version (module docstring)."""
    hard = harden(model) if hard is None else hard
    rows = []
    answers: set[bool] = set()
    for n in lengths:
        rng = np.random.default_rng([seed, n])
        strings, labels = sample(language, rng, n, count, "eval")
        soft = decisions(model, strings)
        hardd = decisions(hard, strings)
        answers |= set(hardd.tolist())
        rows.append(
            LengthRow(
                n=n,
                strings=count,
                members=int(labels.sum()),
                soft_accuracy=float((soft == labels).mean()),
                hard_accuracy=float((hardd == labels).mean()),
                agreement=float((soft == hardd).mean()),
                hard_constant=bool(np.all(hardd == hardd[0])),
            )
        )
    return Evaluation(
        language, EVAL_DESCRIPTION.get(language, "eval"), seed, tuple(rows), len(answers) <= 1
    )


def markdown_table(evaluation: dict) -> str:
    """The accuracy table of ``Evaluation.to_dict()`` as Markdown, lengths as columns:
    soft, hardened ("(c)": the hardened model gave one answer on every string of that
    length) and agreement (the tables of ``docs/trained-models.md``)."""
    rows = evaluation["by_length"]
    head = "| n | " + " | ".join(str(r["n"]) for r in rows) + " |"
    rule = "|---|" + "---:|" * len(rows)

    def line(label: str, key: str, mark: bool = False) -> str:
        cells = [
            f"{100 * r[key]:.1f}%" + (" (c)" if mark and r["hard_constant"] else "") for r in rows
        ]
        return f"| {label} | " + " | ".join(cells) + " |"

    return "\n".join(
        [
            head,
            rule,
            line("soft", "soft_accuracy"),
            line("hardened", "hard_accuracy", True),
            line("agree", "agreement"),
        ]
    )
