"""The affine-form bound (:mod:`attncert.kernel.soft.affine.bound`) on the version-3 kinds
(issue 32): rotary heads (q and k forms rotated at each row's position), ALiBi (two
constant coordinates), RMSNorm, gated MLPs with SiLU or GELU gates, the parallel residual,
learned or no positions — against brute force over every completion.

* with no free position the range is the model's logit to ~1e-9: the kernel evaluates the
  right model (a dropped rotation, ALiBi term or parallel branch moves it far more);
* with 1–4 free positions every completion's logit lies in the range (tamed weights make
  the bounds tight enough that a wrong rule would show, see ``tame``), and on the untamed
  random decoders too;
* ``verify`` decides cubes of a trained RoPE decoder by bound leaves, which the kernel
  re-derives, and rejects an edited one with the reason.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from test_soft_uniform import _inside
from test_soft_uniform_decoders import tame

from attncert.kernel.soft.affine.bound import applicable, restriction_range
from attncert.kernel.verify import checker as KV
from attncert.languages import language
from attncert.model import forward, zoo_model
from attncert.model.decoders import random_decoder
from attncert.soft.verify import verify

__implements__ = ("Hahn Theorem 6",)

# (positions, norm, mlp, parallel)
KINDS = [
    ("rope", "rms", "swiglu", False),
    ("alibi", "rms", "swiglu", False),
    ("rope", "layer", "gelu", True),
    ("alibi", "layer", "swiglu", True),
    ("none", "rms", "gelu", False),
    ("learned", "layer", "swiglu", False),
]


def _model(kind, seed: int, layers: int = 2, tamed: bool = True):
    pos, norm, mlp, parallel = kind
    m = random_decoder(
        layers, 2, 8, positions=pos, norm=norm, mlp=mlp, parallel=parallel, seed=seed
    )
    return tame(m, 0.3) if tamed else m


def _completions(rho: str) -> list[str]:
    free = rho.count("*")
    out = []
    for ch in itertools.product("01", repeat=free):
        it = iter(ch)
        out.append("".join(next(it) if c == "*" else c for c in rho))
    return out


def _restrictions(n: int, seed: int, frees=(0, 1, 2, 4)):
    rng = np.random.default_rng(seed)
    for free in frees:
        for _ in range(3):
            base = "".join(rng.choice(list("01"), n))
            where = set(rng.choice(n - 1, free, replace=False).tolist())
            yield "".join("*" if p in where else c for p, c in enumerate(base)), base


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: "-".join(map(str, k)))
def test_every_completion_is_inside_the_range(kind):
    model = _model(kind, seed=KINDS.index(kind))
    assert model.new_kinds and applicable(model, 9) is None
    for rho, base in _restrictions(9, seed=KINDS.index(kind)):
        got = restriction_range(model, rho, base)
        strings = _completions(rho)
        z = forward(model, strings).logits
        for s, zz in zip(strings, z, strict=True):
            assert _inside(model, s, float(zz), got.z_lo, got.z_hi), (kind, rho, s, zz, got)
        if "*" not in rho:  # a point: the range is the logit itself, to rounding
            assert got.z_hi - got.z_lo < 1e-7, (kind, rho, got)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: "-".join(map(str, k)))
def test_untamed_decoders_one_and_two_layers(kind):
    for layers in (1, 2):
        model = _model(kind, seed=10 + layers, layers=layers, tamed=False)
        for rho, base in _restrictions(8, seed=layers, frees=(0, 3)):
            got = restriction_range(model, rho, base)
            strings = _completions(rho)
            z = forward(model, strings).logits
            assert all(
                _inside(model, s, float(zz), got.z_lo, got.z_hi)
                for s, zz in zip(strings, z, strict=True)
            ), (kind, layers, rho)


def test_positions_matter_a_rotation_is_not_ignored():
    """The same weights without their rotation (or ALiBi) compute another logit, and the
    point range of each model holds its own logit only."""
    for pos in ("rope", "alibi"):
        model = _model((pos, "rms", "swiglu", False), seed=3)
        plain = dataclasses.replace(
            model,
            layers=tuple(
                dataclasses.replace(
                    layer,
                    heads=tuple(
                        dataclasses.replace(h, rotary=None, alibi=None) for h in layer.heads
                    ),
                )
                for layer in model.layers
            ),
        )
        s = "011010011"
        a, b = restriction_range(model, s, s), restriction_range(plain, s, s)
        assert a.z_hi < b.z_lo or b.z_hi < a.z_lo, (pos, a, b)


@pytest.mark.slow  # 24 s (verify at n = 16 and 2¹⁶ strings by brute force); in .ci/run
def test_verify_decides_a_trained_rope_decoder_by_bound_leaves():
    model = zoo_model("trained_rope_first_last")
    lang = language("first_last")
    # exhaustive=4096: cubes above 4096 strings are split and bounded (by default, at
    # |Σ|ⁿ ≤ 2¹⁶ the root itself would be evaluated string by string, with no bound leaf)
    out = verify(model, lang, 16, time_limit=60, exhaustive=4096)
    cert = out.certificate
    bound = [k for k, node in enumerate(cert.nodes) if node.leaf and node.leaf.kind == "bound"]
    assert out.check.accepted and bound, out.summary()
    # the exact accuracy by brute force (float decisions), inside the certified interval
    strings = ["".join(t) for t in itertools.product("01", repeat=16)]
    member = np.array([lang.contains(s) for s in strings])
    acc = float(np.mean(forward(model, strings).accept == member))
    assert float(out.lower) <= acc <= float(out.upper)
    # a bound leaf whose claimed range is narrowed is rejected, naming the leaf
    k = bound[0]
    leaf = cert.nodes[k].leaf
    narrowed = dataclasses.replace(leaf, z_range=(leaf.z_range[0] + 0.5, leaf.z_range[1]))
    nodes = list(cert.nodes)
    nodes[k] = dataclasses.replace(nodes[k], leaf=narrowed)
    report = KV.check(dataclasses.replace(cert, nodes=tuple(nodes)), model)
    assert not report.accepted
    f = report.failures[0]
    assert f.claim == "bound" and f.where == f"nodes[{k}].leaf.z_range", str(f)
    assert "not sound" in f.reason
