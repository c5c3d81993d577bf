"""How often an imported soft model and its hardened version decide alike.

Hahn's Theorem 1 and the restriction certificates are about hard attention; an
imported model uses softmax. :func:`hardening_report` hardens it
(:func:`attncert.model.harden`: every softmax head → argmax over the same scores) and
compares, string by string and length by length, every decision the model makes:

* the accept decision (readout logit > 0), as :func:`attncert.model.hardening_agreement`;
* for a model with a next-symbol head (GPT-2's LM head), the predicted next symbol
  (argmax of the LM logits) at every position — the decision a language model makes;
* for a model with output coordinates, each coordinate's Boolean (≥ ½) at every position.

Measured on the strings given (use the training distribution), never assumed.

Python::

    report = hardening_report(model, strings)
    report.accept.rate, report.next_symbol.rate if report.next_symbol else None
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attncert.errors import InputError
from attncert.model.forward import forward
from attncert.model.harden import Agreement, harden
from attncert.model.spec import AttentionKind, Model


@dataclass(frozen=True, eq=False)
class HardeningReport:
    """Agreement of ``soft`` and ``hard`` (its hardened version) on some strings."""

    soft: Model
    hard: Model
    accept: Agreement  # one decision per string
    next_symbol: Agreement | None  # one decision per position (LM head), counted per position
    outputs: Agreement | None  # one decision per position and output coordinate

    def to_dict(self) -> dict:
        return {
            "soft": self.soft.name,
            "hard": self.hard.name,
            "accept": self.accept.to_dict(),
            "next_symbol": None if self.next_symbol is None else self.next_symbol.to_dict(),
            "outputs": None if self.outputs is None else self.outputs.to_dict(),
        }


def hardening_report(
    model: Model, strings: Sequence[str], kind: AttentionKind | str = AttentionKind.LEFTMOST
) -> HardeningReport:
    """Harden ``model`` with ``kind`` and compare every decision on ``strings``."""
    if isinstance(strings, str):
        raise InputError("hardening_report takes a sequence of strings, not a bare string")
    strings = list(strings)
    if not strings:
        raise InputError("hardening_report needs at least one string")
    hard = harden(model, kind)
    by_len: dict[int, list[str]] = {}
    for s in strings:
        by_len.setdefault(len(s), []).append(s)
    acc_rows, lm_rows, out_rows = [], [], []
    for n in sorted(by_len):
        group = by_len[n]
        ts, th = forward(model, group), forward(hard, group)
        acc_rows.append((n, len(group), int((ts.accept == th.accept).sum())))
        if ts.lm_logits is not None:
            same = ts.lm_logits.argmax(-1) == th.lm_logits.argmax(-1)
            lm_rows.append((n, same.size, int(same.sum())))
        if ts.outputs.shape[-1]:
            same = (ts.outputs >= 0.5) == (th.outputs >= 0.5)
            out_rows.append((n, same.size, int(same.sum())))
    return HardeningReport(
        model, hard, _agreement(acc_rows), _agreement(lm_rows), _agreement(out_rows)
    )


def _agreement(rows: list[tuple[int, int, int]]) -> Agreement | None:
    if not rows:
        return None
    arr = np.array(rows)
    return Agreement(int(arr[:, 1].sum()), int(arr[:, 2].sum()), tuple(rows))
