"""Yang, Strobl, Chiang, Angluin, Proposition 11: a softmax transformer whose positional
encoding contains (−1)^i marks (a) the first position with future masking and (b) the last
position with past masking — and, as the paper notes after the proof, 1/i from (a).

Construction (one uniform head per mark: W_Q = W_K = 0, so every visible key gets the same
weight — exactly, for any temperature):

- (a) a_i = mean_{j ≤ i} (−1)^j equals −1 at i = 1 and lies in [−1/3, 0] for i > 1, so the
  FFN [i=1] = 2·ReLU(−a − ½) is exact;
- (b) a_i = mean_{j ≥ i} (−1)^j equals (−1)^n = ±1 at i = n and lies in [−1/3, 1/3] for
  i < n, so [i=n] = 2·ReLU(a − ½) + 2·ReLU(−a − ½) is exact;
- a second layer averages [j=1] over j ≤ i: exactly 1/i ("a PE including (−1)^i can
  compute 1/i using uniform future-masked attention on the output of the above").

The model is an ordinary :class:`~attncert.model.spec.Model`; ``attncert prove first
--model M --coord C`` proves the mark on every string up to a length with z3 (the proof
artifact ``proofs/yang2024/proposition11/…``), independently of this construction.

    >>> from attncert.compile.first_last import first_last_model, MARK_COORD
    >>> from attncert.model import forward
    >>> m = first_last_model("first")
    >>> [round(float(v), 6) for v in forward(m, ["abba"]).layers[-1].output[0, :, MARK_COORD]]
    [1.0, 0.0, 0.0, 0.0]
"""

from __future__ import annotations

import numpy as np

from attncert.errors import InputError
from attncert.model.build import model_from_arrays
from attncert.model.positional import PosFeature
from attncert.model.spec import AttentionKind, Mask, Model

__all__ = ["INVERSE_COORD", "MARK_COORD", "first_last_model"]

__implements__ = ("Yang Proposition 11",)

SIGN_COORD, MEAN_COORD, MARK_COORD, INVERSE_COORD = 0, 1, 2, 3
D = 4


def first_last_model(which: str = "first", alphabet: str = "ab") -> Model:
    """Proposition 11's construction: ``which`` = ``"first"`` (future-masked, coordinate
    :data:`MARK_COORD` holds [i=1], :data:`INVERSE_COORD` holds 1/i after layer 2) or
    ``"last"`` (past-masked, [i=n]; no second layer). Accepts iff the mark holds at the
    readout position (the last)."""
    if which not in ("first", "last"):
        raise InputError(f"which={which!r}", where="which", expected="'first' or 'last'")
    a = np.zeros((D, D))
    a[MEAN_COORD, SIGN_COORD] = 1.0  # W_O W_V: copy the averaged (−1)^j into MEAN
    arrays: dict[str, np.ndarray] = {
        "embedding.word": np.zeros((len(alphabet), D)),
        "embedding.pos_weight": np.eye(D, 1),  # (−1)^i → SIGN
        "layers.0.heads.0.w_q": np.zeros((D, D)),
        "layers.0.heads.0.w_k": np.zeros((D, D)),
        "layers.0.heads.0.w_v": np.eye(D),
        "layers.0.heads.0.w_o": a,
        "readout.weight": np.eye(D)[:, MARK_COORD],
        "readout.bias": np.array(-0.5),
    }
    if which == "first":
        # [i=1] = 2·ReLU(−a − ½)
        arrays["layers.0.ffn.w1"] = -np.eye(D)[[MEAN_COORD]]
        arrays["layers.0.ffn.b1"] = np.array([-0.5])
        arrays["layers.0.ffn.w2"] = 2.0 * np.eye(D)[:, [MARK_COORD]]
        arrays["layers.0.ffn.b2"] = np.zeros(D)
        b = np.zeros((D, D))
        b[INVERSE_COORD, MARK_COORD] = 1.0  # average [j=1] over j ≤ i: 1/i
        arrays.update(
            {
                "layers.1.heads.0.w_q": np.zeros((D, D)),
                "layers.1.heads.0.w_k": np.zeros((D, D)),
                "layers.1.heads.0.w_v": np.eye(D),
                "layers.1.heads.0.w_o": b,
            }
        )
        masks = [[Mask.FUTURE], [Mask.FUTURE]]
    else:
        # [i=n] = 2·ReLU(a − ½) + 2·ReLU(−a − ½)
        arrays["layers.0.ffn.w1"] = np.stack([np.eye(D)[MEAN_COORD], -np.eye(D)[MEAN_COORD]])
        arrays["layers.0.ffn.b1"] = np.array([-0.5, -0.5])
        arrays["layers.0.ffn.w2"] = 2.0 * np.stack([np.eye(D)[MARK_COORD]] * 2, axis=1)
        arrays["layers.0.ffn.b2"] = np.zeros(D)
        masks = [[Mask.PAST]]
    return model_from_arrays(
        arrays,
        alphabet=tuple(alphabet),
        kind=AttentionKind.SOFTMAX,
        mask=masks,
        features=(PosFeature("(-1)^i"),),
        output_coords=(MARK_COORD,),
        name=f"proposition11-{which}",
        meta={
            "construction": "Yang et al. Proposition 11",
            "language": "strings of length 1" if which == "first" else "every string",
            "description": f"uniform {'future' if which == 'first' else 'past'}-masked attention "
            f"on (−1)^i marks the {which} position (coordinate {MARK_COORD})",
        },
    )
