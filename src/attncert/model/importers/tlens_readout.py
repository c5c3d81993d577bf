"""The readout of a TransformerLens ``HookedTransformer``: ``unembed.W_U`` columns and
``b_U`` entries of ``lm_symbols`` → the next-symbol head (logits at every position), and,
when the caller gives ``readout``, an accept decision (as
:func:`~attncert.model.importers.model_from_torch` reads it); a :class:`Readout` given by
the caller is used as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attncert.errors import SpecError
from attncert.model.importers._common import accept_readout, check_finite, to_numpy
from attncert.model.importers.tlens_config import TLImport
from attncert.model.spec import Readout


def readout(
    imp: TLImport,
    alphabet: tuple[str, ...],
    eos: str | None,
    lm_symbols: Sequence[str] | None,
    token_ids: Mapping[str, int],
    accept: Any,
    position: str | int,
) -> tuple[Readout, str]:
    """(readout, a label for ``meta``): the unembed rows of ``lm_symbols`` (default the
    alphabet plus ``eos``; ids < ``cfg.d_vocab_out``) and the ``accept`` readout at
    ``position`` (module docstring)."""
    if isinstance(accept, Readout):
        return accept, "the caller's Readout"
    symbols = tuple(lm_symbols) if lm_symbols is not None else alphabet + ((eos,) if eos else ())
    missing = [s for s in symbols if s not in token_ids]
    if missing:
        raise SpecError(
            f"no token id for LM symbol {missing[0]!r}",
            where="token_ids",
            expected="a token id for every symbol of lm_symbols",
        )
    n_out = int(imp.cfg.d_vocab_out)
    rows = [int(token_ids[s]) for s in symbols]
    bad = [(s, t) for s, t in zip(symbols, rows, strict=True) if not 0 <= t < n_out]
    if bad:
        raise SpecError(
            f"token id {bad[0][1]} for LM symbol {bad[0][0]!r}",
            where="token_ids",
            expected=f"0..{n_out - 1} (d_vocab_out)",
        )
    w_u = to_numpy(imp.model.unembed.W_U)[:, rows].T
    check_finite(w_u, "unembed.W_U (columns of lm_symbols)")
    b_u = to_numpy(imp.model.unembed.b_U)[rows]
    label = "unembed logits of " + "".join(symbols)
    if accept is None:
        decision = Readout(weight=np.zeros(imp.d), position=position)
        label += " (no accept decision)"
    else:
        decision = accept_readout(accept, imp.d, position, imp.torch.nn)
        label += f"; accept readout at {position!r}"
    ro = Readout(
        weight=decision.weight,
        bias=decision.bias,
        position=decision.position,
        lm_weight=w_u,
        lm_bias=b_u,
        lm_symbols=symbols,
    )
    return ro, label
