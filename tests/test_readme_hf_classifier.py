"""The README's sequence-classifier example (issue 42 item 9), beyond what the block itself
asserts: the block's own code — up to its report, which tests/test_readme.py runs — trains a
``LlamaForSequenceClassification`` and imports it with ``bos="<s>"``; here the imported
model must decide every string of length 1..10 (2,046 strings) as transformers' logits do,
and the trained model must be what the README says it is: right on first_last at every
training length (1..8), so that the report's verify cell at n = 8 is CERTIFIED."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from lazy_import import lazy_importorskip

from attncert.model import forward

torch = lazy_importorskip("torch")  # imported at first use
transformers = lazy_importorskip("transformers")  # imported at first use

README = Path(__file__).resolve().parents[1] / "README.md"
REPORT_LINE = "rep = attncert.report("


def _block() -> str:
    """The README's Python block that trains the Llama classifier, up to its report."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    (block,) = [b for b in blocks if "LlamaForSequenceClassification" in b]
    assert REPORT_LINE in block  # the README reports on the model it trained
    return block.split(REPORT_LINE, 1)[0]


@pytest.mark.slow
def test_readme_classifier_decides_every_short_string_as_transformers():
    ns: dict = {}
    exec(compile(_block(), "README.md", "exec"), ns)
    clf, model, ids = ns["clf"], ns["model"], ns["ids"]
    assert model.bos == "^" and model.meta["hf"]["tokens"]["bos"]["token"] == "<s>"
    for n in range(1, 11):
        strings = ["".join(p) for p in itertools.product("01", repeat=n)]
        with torch.no_grad():
            out = clf(torch.tensor([[ids["<s>"]] + [ids[c] for c in s] for s in strings]))
        want = (out.logits[:, 1] - out.logits[:, 0]).numpy()
        got = forward(model, strings).logits
        tol = 1e-4 * np.abs(want).max()  # transformers' float32 rope, softmax, RMSNorm
        assert np.abs(got - want).max() <= tol, n
        assert np.abs(want).min() > tol, n  # every decision determined: none left out
        assert np.array_equal(got > 0, want > 0), n
        truth = np.array([s[0] == s[-1] for s in strings])
        if n <= 8:  # the training lengths
            assert np.array_equal(got > 0, truth), (n, float(np.mean((got > 0) == truth)))
