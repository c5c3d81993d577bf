"""The notebook's horizon-beside-Lemma-5 helpers (:mod:`attncert.soft.horizon.lemma5`):
the closed-form weight says where the test bed is right, checked against the model's own
float forward pass on its worst string, and a row brackets the prediction only when the
certified lengths do."""

from __future__ import annotations

import math

import numpy as np

from attncert.model import forward
from attncert.model.testbeds import first_symbol_model
from attncert.soft.horizon.lemma5 import HorizonRow, first_key_weight, format_rows


def test_the_closed_form_weight_is_the_models_own():
    """w(n) > 1/2 exactly where the model is right on 0·1ⁿ⁻¹ (its worst string), for a
    fixed β and for β = log n; and w(n) is the attention weight the forward pass puts on
    position 1 (attention output a = 1 − 2w on that string)."""
    for delta, log in ((2.0, False), (math.log(6.5), False), (1.5, True)):
        model = first_symbol_model(delta, temperature="log" if log else 1.0)
        ns = np.arange(2, 40)
        w = first_key_weight(delta, ns, log_temperature=log)
        z = [float(forward(model, ["0" + "1" * (n - 1)]).logits[0]) for n in ns]
        right = np.asarray(z) <= 0  # first ≠ last: reject is right
        assert list(right) == list(w > 0.5), (delta, log)
    w = first_key_weight(2.0, [1, 5, 10**6])
    assert w[0] == 1.0 and math.isclose(w[1], math.exp(2) / (math.exp(2) + 4))
    assert math.isclose(w[2] * 10**6, math.exp(2), rel_tol=1e-4)  # K/n with K = e^Δ


def test_a_row_brackets_the_prediction_only_when_the_certified_lengths_do():
    pred = math.exp(5.0) + 1  # 149.41…
    ok = HorizonRow(5.0, False, pred, 149, 150, "REFUTED", 10**6, 1.0)
    assert ok.brackets
    for up, first in ((150, 151), (148, 149), (149, None), (None, 150), ("inf", None)):
        assert not HorizonRow(5.0, False, pred, up, first, "X", 10**6, 1.0).brackets
    assert HorizonRow(2.0, True, math.inf, "inf", None, "CERTIFIED", None, 1.0).brackets
    assert not HorizonRow(2.0, True, math.inf, 10**6, None, "UNDECIDED", None, 1.0).brackets
    text = format_rows([ok])
    assert "149.4" in text and "150" in text and "yes" in text
