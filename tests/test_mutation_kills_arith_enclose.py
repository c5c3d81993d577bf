"""The enclosure arithmetic (arith/enclose), pinned where a mutation survived (issue 34):
a head whose scores see positions is refused by :func:`projections`, naming its kind and
what would be accepted."""

from __future__ import annotations

import numpy as np
import pytest

from attncert.arith.enclose import projections
from attncert.arith.filter import Enclosed
from attncert.errors import UnsupportedError
from attncert.model.decoders import random_decoder


@pytest.mark.parametrize(("pos", "kind"), [("alibi", "ALiBi"), ("rope", "rotary positions")])
def test_positional_heads_are_refused_by_kind(pos, kind):
    m = random_decoder(1, 2, 8, positions=pos, seed=1)
    u = Enclosed(np.zeros((1, m.d)), np.zeros((1, m.d)))
    with pytest.raises(UnsupportedError) as err:
        projections(m, 0, 1, u)
    assert err.value.message.startswith(f"layers[0].heads[1] has {kind} (model ")
    assert err.value.expected == "a head without rotary positions or ALiBi"
