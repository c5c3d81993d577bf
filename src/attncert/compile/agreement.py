"""Compare a compiled model with the reference interpreter on many strings.

Float evaluation (numpy) of the model; a node's value is read from its designated
output coordinate and rounded at ½. Every node of the formula is compared at every
position, not only the decision at the last position.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from attncert.errors import InputError
from attncert.logic.interpreter import evaluate_nodes
from attncert.logic.parser import parse
from attncert.model.forward import forward_tokens
from attncert.model.spec import Model


@dataclass(frozen=True)
class Disagreement:
    string: str
    position: int  # 1-based
    node: str  # printed subformula
    expected: bool
    got: float  # the model's (unrounded) coordinate value


def all_strings(alphabet: Sequence[str], n: int) -> list[str]:
    return ["".join(p) for p in itertools.product(alphabet, repeat=n)]


def node_outputs(model: Model, strings: Sequence[str]) -> np.ndarray:
    """(B, n, k) float values of the designated output coordinates (equal lengths)."""
    tokens = np.array([model.encode(w) for w in strings], dtype=np.int64)
    return forward_tokens(model, tokens).outputs


def disagreements(
    model: Model, strings: Iterable[str], *, limit: int = 10, batch: int = 4096
) -> list[Disagreement]:
    """Positions where a node's rounded output differs from the interpreter (≤ ``limit``)."""
    meta = model.meta
    if meta.get("compiler") != "attncert.compile":
        raise InputError("model was not compiled from a formula (no compiler record)")
    nodes = sorted(meta["nodes"], key=lambda r: r["output_index"])
    formulas = [parse(nd["formula"]) for nd in nodes]
    root = parse(meta["formula"])
    by_len: dict[int, list[str]] = {}
    for w in strings:
        by_len.setdefault(len(w), []).append(w)
    found: list[Disagreement] = []
    for n in sorted(by_len):
        ws = by_len[n]
        for start in range(0, len(ws), batch):
            chunk = ws[start : start + batch]
            got = node_outputs(model, chunk)
            truth = evaluate_nodes(root, chunk, formulas)
            for k, f in enumerate(formulas):
                bad = np.argwhere((got[:, :, k] > 0.5) != truth[f])
                for b, i in bad[: max(0, limit - len(found))]:
                    found.append(
                        Disagreement(
                            chunk[b],
                            int(i) + 1,
                            nodes[k]["formula"],
                            bool(truth[f][b, i]),
                            float(got[b, i, k]),
                        )
                    )
                if len(found) >= limit:
                    return found
    return found
