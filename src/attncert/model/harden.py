"""Hardening a softmax model: each softmax head becomes unique-hard (argmax) attention.

Hahn's Theorem 1 is about hard attention; a trained model uses softmax. Replacing
every softmax head by leftmost-hard attention over the *same* scores gives the
model's β → ∞ limit (for β(N) > 0 the softmax concentrates on the argmax), to which
Theorem 1 and the restriction certificates apply. How close the hardened model is
to the soft one is an empirical question, so :func:`hardening_agreement` measures
it on a distribution of strings instead of assuming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from attncert.errors import UnsupportedError
from attncert.model.forward import accepts
from attncert.model.spec import AttentionKind, Model


def harden(model: Model, kind: AttentionKind | str = AttentionKind.LEFTMOST) -> Model:
    """``model`` with every softmax head replaced by hard attention of ``kind``
    (leftmost by default) over the same scores; everything else unchanged.

    Refuses a head whose inverse temperature can be ≤ 0 (then the softmax does not
    approach the argmax). The result's ``meta["hardened"]`` names the soft model
    (name and content hash) and the heads that changed."""
    kind = AttentionKind(kind)
    if not kind.is_hard:
        raise UnsupportedError(
            "harden needs a hard attention kind", expected="leftmost, rightmost or average"
        )
    changed = []
    layers = []
    for li, layer in enumerate(model.layers):
        heads = []
        for hi, h in enumerate(layer.heads):
            if h.kind is AttentionKind.SOFTMAX:
                t = h.temperature
                if t is not None and t.coef <= 0:
                    raise UnsupportedError(
                        f"inverse temperature {t} is not positive: the softmax does not "
                        "approach the argmax",
                        where=f"layers[{li}].heads[{hi}].temperature",
                        expected="a positive coefficient",
                    )
                h = replace(h, kind=kind, temperature=None)
                changed.append(f"layers[{li}].heads[{hi}]")
            heads.append(h)
        layers.append(replace(layer, heads=tuple(heads)))
    if not changed:
        return model
    meta = dict(model.meta)
    meta["hardened"] = {
        "from": model.name,
        "from_sha256": model.digest,
        "kind": kind.value,
        "heads": changed,
    }
    return replace(model, layers=tuple(layers), name=f"{model.name}-hard", meta=meta)


@dataclass(frozen=True)
class Agreement:
    """How often the hardened and the soft model decide alike on some strings."""

    strings: int
    agree: int
    by_length: tuple[tuple[int, int, int], ...]  # (length, strings, agree)

    @property
    def rate(self) -> float:
        return self.agree / self.strings if self.strings else float("nan")

    def to_dict(self) -> dict:
        return {
            "strings": self.strings,
            "agree": self.agree,
            "rate": self.rate,
            "by_length": [list(r) for r in self.by_length],
        }


def hardening_agreement(soft: Model, hard: Model, strings: Sequence[str]) -> Agreement:
    """Float decisions of ``soft`` and ``hard`` compared string by string."""
    strings = list(strings)
    a = accepts(soft, strings)
    b = accepts(hard, strings)
    same = a == b
    lengths = np.array([len(s) for s in strings])
    rows = tuple(
        (int(n), int((lengths == n).sum()), int(same[lengths == n].sum()))
        for n in sorted(set(lengths.tolist()))
    )
    return Agreement(len(strings), int(same.sum()), rows)
