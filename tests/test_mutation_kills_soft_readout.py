"""The readout back-substitution (:mod:`attncert.kernel.soft.readout`) through a GELU
feed-forward block — the sweep's models that reach it all use ReLU: every completion's
logit inside, the change bound above the true one, the certifier's numbers (issue 34:
mutation score)."""

from __future__ import annotations

import dataclasses

from test_soft_certified_bounds import _check_model

from attncert.kernel.soft import propagate as KP
from attncert.kernel.soft import readout as KR
from attncert.model import random_model
from attncert.model.spec import Activation


def test_the_back_substitution_through_a_gelu_block_holds_on_every_string(monkeypatch):
    base = random_model(1, 1, 6, kind="softmax", seed=3)
    layers = tuple(
        dataclasses.replace(layer, ffn=dataclasses.replace(layer.ffn, activation=Activation.GELU))
        for layer in base.layers
    )
    model = dataclasses.replace(base, layers=layers)
    assert KP.split_by_symbol(model, KP.readout_index(model, 4))  # the back-substitution runs
    kinds = []
    chord = KR._chord
    monkeypatch.setattr(
        KR, "_chord", lambda kind, lo, hi: kinds.append(kind) or chord(kind, lo, hi)
    )
    _check_model(model, 4)
    assert kinds and set(kinds) == {"gelu"}
