"""Model-file version 3 (issue 32): rotary positions, ALiBi, RMSNorm, gated MLPs and the
parallel residual — the file format, and every evaluator agreeing on every kind:
the float pass, the arb pass of the kernel (:mod:`attncert.kernel.core.trace`), the float64
enclosures (:mod:`attncert.kernel.soft.batch`), an independent numpy re-statement of
the formulas written here from the guide (``positional-schemes.md``), and brute force
for ``verify`` and the hard certificate. Older files load and hash as before."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random

import numpy as np
import pytest

from attncert.errors import SpecError, UnsupportedError
from attncert.hard.bruteforce import confirm_by_enumeration
from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.soft.batch import logit_bounds, tokens
from attncert.languages import language
from attncert.model import harden, load_model, save_model, zoo_model
from attncert.model.decoders import alibi_slopes, random_decoder
from attncert.model.forward import forward
from attncert.model.serialize import model_from_dict, model_to_dict, model_to_json
from attncert.model.spec import Head, LayerNorm, NormKind, Rotary

KINDS = [
    (pos, norm, mlp, par)
    for pos in ("rope", "alibi", "learned", "none")
    for norm in ("layer", "rms")
    for mlp in ("gelu", "swiglu")
    for par in (False, True)
]


def _strings(n: int, k: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("01") for _ in range(n)) for _ in range(k)]


# --------------------------------------------------------------------------- reference
def _reference_logits(model, strings: list[str]) -> np.ndarray:
    """The decoder written out from the formulas (not from attncert.model.forward):
    pre-norm causal softmax heads, RoPE in the rotate-half layout at positions 0 … N−1,
    ALiBi −m(i − j), RMSNorm / LayerNorm, SwiGLU / GELU, parallel residual, final norm,
    readout at the last token."""
    from math import erf

    def norm(nm, x):
        if nm.kind is NormKind.RMS:
            return x / np.sqrt((x * x).mean(-1, keepdims=True) + nm.eps) * nm.weight + nm.bias
        c = x - x.mean(-1, keepdims=True)
        return c / np.sqrt((c * c).mean(-1, keepdims=True) + nm.eps) * nm.weight + nm.bias

    def act(kind, x):
        if kind.value == "silu":
            return x / (1 + np.exp(-x))
        return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))

    out = []
    for s in strings:
        ids = model.encode(s)
        n = len(ids)
        x = model.embedding.word[ids].copy()
        if model.embedding.table is not None:
            x = x + model.embedding.table[:n]
        for layer in model.layers:
            u = norm(layer.norm1, x)
            att = np.zeros_like(x)
            for h in layer.heads:
                q = u @ h.w_q.T + h.bias("b_q")
                k = u @ h.w_k.T + h.bias("b_k")
                v = u @ h.w_v.T + h.bias("b_v")
                if h.rotary is not None:
                    r = h.rotary.dim
                    inv = h.rotary.base ** (-np.arange(0, r, 2) / r)
                    ang = np.outer(np.arange(n) / h.rotary.scale, inv)
                    cos = np.concatenate([np.cos(ang), np.cos(ang)], 1)
                    sin = np.concatenate([np.sin(ang), np.sin(ang)], 1)

                    def rot(t, r=r, cos=cos, sin=sin):
                        half = np.concatenate([-t[:, r // 2 : r], t[:, : r // 2]], 1)
                        return np.concatenate([t[:, :r] * cos + half * sin, t[:, r:]], 1)

                    q, k = rot(q), rot(k)
                sc = q @ k.T
                if h.alibi is not None:
                    sc = sc - h.alibi * (np.arange(n)[:, None] - np.arange(n)[None, :])
                sc = np.where(np.tril(np.ones((n, n), bool)), sc, -np.inf)
                w = np.exp(sc - sc.max(1, keepdims=True))
                w = w / w.sum(1, keepdims=True)
                att = att + (w @ v) @ h.w_o.T + h.bias("b_o")
            f = layer.ffn

            def mlp(y, f=f):
                up = y @ f.w1.T + f.b1
                if f.gated:
                    return (act(f.activation, y @ f.w_gate.T + f.b_gate) * up) @ f.w2.T + f.b2
                return act(f.activation, up) @ f.w2.T + f.b2

            if layer.parallel:
                x = x + att + mlp(norm(layer.norm2, x))
            else:
                x = x + att
                x = x + mlp(norm(layer.norm2, x))
        x = norm(model.final_norm, x)
        out.append(x[-1] @ model.readout.weight + model.readout.bias)
    return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize(("pos", "norm", "mlp", "par"), KINDS)
def test_every_evaluator_agrees_on_every_kind(pos, norm, mlp, par):
    m = random_decoder(2, 2, 8, positions=pos, norm=norm, mlp=mlp, parallel=par, seed=3)
    assert m.positional_scheme == {"none": "none"}.get(pos, pos)
    for n in (1, 6, 23):
        ss = _strings(n, 4, seed=n)
        f = forward(m, ss).logits
        ref = _reference_logits(m, ss)
        assert np.allclose(f, ref, rtol=1e-12, atol=1e-12), (f, ref)
        lo, hi = logit_bounds(m, tokens(m, ss))
        assert np.all(lo <= f) and np.all(f <= hi) and np.all(hi - lo < 1e-3)
        for s, z in zip(ss[:2], f[:2], strict=True):
            t = forward_rigorous(m, s)
            a, b = t.logit_interval()
            assert float(a) <= z <= float(b) and float(b - a) < 1e-6


def test_rotary_scores_depend_on_the_offset_only():
    """RoPE's defining property: shifting query and key positions together leaves the
    score unchanged (q_iᵀ R((j − i)θ) k_j)."""
    from attncert.model.forward import rotate

    head = random_decoder(1, 1, 8, positions="rope", rope_base=500.0, seed=1).layers[0].heads[0]
    rng = np.random.default_rng(0)
    qv, kv = rng.normal(size=8), rng.normal(size=8)
    x = np.tile(qv, (1, 40, 1))
    y = np.tile(kv, (1, 40, 1))
    q, k = rotate(head, x)[0], rotate(head, y)[0]
    s = q @ k.T
    for off in (0, 3, 11):
        diag = np.array([s[i + off, i] for i in range(40 - off)])
        assert np.ptp(diag) < 1e-12
    assert np.ptp(np.diag(s, 0)) < 1e-12 and abs(s[5, 0] - s[5, 2]) > 1e-6


def test_partial_rotary_leaves_the_other_coordinates_alone():
    from attncert.model.forward import rotate

    m = random_decoder(1, 1, 8, positions="rope", rotary_fraction=0.5, seed=2)
    head = m.layers[0].heads[0]
    assert head.rotary.dim == 4
    x = np.random.default_rng(1).normal(size=(1, 9, 8))
    y = rotate(head, x)
    assert np.array_equal(y[0, :, 4:], x[0, :, 4:]) and not np.allclose(y[0, 1:, :4], x[0, 1:, :4])


def test_alibi_slopes_follow_blooms_rule():
    assert alibi_slopes(4) == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]
    assert alibi_slopes(8)[0] == 2.0**-1 and alibi_slopes(8)[-1] == 2.0**-8
    # 6 heads: the 4-head slopes, then every other slope of the 8-head sequence
    assert alibi_slopes(6) == [*alibi_slopes(4), 2.0**-1, 2.0**-3]


# --------------------------------------------------------------------------- file format
def test_version_3_round_trip_and_old_files_unchanged(tmp_path):
    m = random_decoder(2, 2, 8, positions="rope", parallel=True, rope_base=500.0, seed=4)
    d = model_to_dict(m)
    assert d["version"] == 3
    assert d["layers"][0]["heads"][0]["rotary"] == {"base": 500.0, "dim": 4, "scale": 1.0}
    assert d["layers"][0]["norm1"]["kind"] == "rms" and d["layers"][0]["parallel"] is True
    path = save_model(m, tmp_path / "m.json")
    back = load_model(path)
    assert back.digest == m.digest and model_to_json(back) == model_to_json(m)
    assert np.array_equal(forward(back, ["0110"]).logits, forward(m, ["0110"]).logits)
    for name in ("trained_parity", "trained_hard_first_last", "ones_star"):
        old = zoo_model(name)
        assert not old.new_kinds and model_to_dict(old)["version"] in (1, 2)
        assert "rotary" not in model_to_json(old) and "parallel" not in model_to_json(old)


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["layers"][0]["heads"][0]["rotary"].__setitem__("base", 20000.0), "base"),
        (lambda d: d["layers"][0]["heads"][1].__setitem__("alibi", 0.25), "alibi"),
        (lambda d: d["layers"][0]["norm1"].__setitem__("eps", 1e-6), "eps"),
        (lambda d: d["layers"][0]["norm1"].__setitem__("kind", "layer"), "kind"),
        (lambda d: d["layers"][0].__setitem__("parallel", False), "parallel"),
    ],
)
def test_each_new_field_is_in_the_content_hash_and_changes_the_model(edit, field):
    m = random_decoder(1, 2, 8, positions="rope", parallel=True, seed=6)
    m = dataclasses.replace(
        m,
        layers=(
            dataclasses.replace(
                m.layers[0],
                heads=(m.layers[0].heads[0], dataclasses.replace(m.layers[0].heads[1], alibi=0.5)),
            ),
        ),
    )
    d = json.loads(model_to_json(m))
    edit(d)
    d.pop("sha256")
    other = model_from_dict(d)
    assert other.digest != m.digest, field
    ss = _strings(12, 8)
    assert not np.array_equal(forward(other, ss).logits, forward(m, ss).logits), field


@pytest.mark.parametrize(
    ("edit", "where", "what"),
    [
        (lambda h: h["rotary"].__setitem__("dim", 3), "heads[0].rotary.dim", "3"),
        (lambda h: h["rotary"].__setitem__("base", 1.0), "heads[0].rotary.base", "1.0"),
        (lambda h: h["rotary"].__setitem__("dim", 6), "heads[0].rotary.dim", "exceeds"),
        (lambda h: h["rotary"].__setitem__("theta", 2.0), "heads[0].rotary", "theta"),
        (lambda h: h.__setitem__("alibi", "0.5"), "heads[0].alibi", "0.5"),
        (lambda h: h.__setitem__("alibi", float("nan")), "alibi", "nan"),
    ],
)
def test_bad_head_fields_are_located(edit, where, what):
    d = json.loads(model_to_json(random_decoder(1, 2, 8, positions="rope", seed=1)))
    edit(d["layers"][0]["heads"][0])
    with pytest.raises(SpecError) as err:
        model_from_dict(d, source="m.json")
    text = str(err.value)
    assert "m.json" in text and where in text and what in text, text


def test_bad_layer_fields_are_located():
    d = json.loads(model_to_json(random_decoder(1, 2, 8, positions="none", seed=1)))
    d["layers"][0]["norm1"]["kind"] = "batch"
    with pytest.raises(SpecError, match=r"m.json: layers\[0\].norm1.*'batch'"):
        model_from_dict(d, source="m.json")
    d = json.loads(model_to_json(random_decoder(1, 2, 8, positions="none", seed=1)))
    d["layers"][0]["parallel"] = "yes"
    with pytest.raises(SpecError, match=r"layers\[0\].parallel"):
        model_from_dict(d, source="m.json")
    d = json.loads(model_to_json(random_decoder(1, 2, 8, positions="none", seed=1)))
    d["layers"][0]["ffn"]["w_gate"] = d["layers"][0]["ffn"]["w_gate"][:3]
    with pytest.raises(SpecError, match=r"layers\[0\].ffn.w_gate.*shape"):
        model_from_dict(d, source="m.json")


def test_spec_values_refuse_impossible_parameters():
    with pytest.raises(SpecError, match="even"):
        Rotary(10000.0, 5)
    with pytest.raises(SpecError, match="> 0"):
        Rotary(10000.0, 4, scale=0.0)
    with pytest.raises(SpecError, match="finite"):
        Head(np.eye(2), np.eye(2), np.eye(2), np.eye(2), alibi=float("inf"))
    with pytest.raises(SpecError, match="kind"):
        LayerNorm(np.ones(2), np.zeros(2), kind="group")
    m = random_decoder(1, 1, 4, positions="none", seed=0)
    with pytest.raises(SpecError, match="pre-norm"):
        dataclasses.replace(m.layers[0], parallel=True, norm_position="post")


# --------------------------------------------------------------------------- analyses
def test_verify_interval_contains_brute_force_on_every_scheme():
    lang = language("majority")
    from attncert.soft.verify import verify

    n = 8
    strings = ["".join(p) for p in itertools.product("01", repeat=n)]
    truth = np.array([lang.contains(s) for s in strings])
    for pos in ("rope", "alibi", "none"):
        m = random_decoder(2, 2, 8, positions=pos, seed=5)
        out = verify(m, lang, n, time_limit=20)
        right = int(np.sum(forward(m, strings).accept == truth))
        assert out.check.accepted
        assert out.check.right <= right <= out.check.right + out.check.undecided
        assert out.check.undecided == 0 and out.check.right == right  # exhaustive at n = 8


@pytest.mark.slow
def test_hard_certificate_on_a_nope_rmsnorm_swiglu_model_against_brute_force():
    """Theorem 1 on a hardened NoPE decoder with RMSNorm, SwiGLU and a parallel layer: the
    kernel accepts, and every completion of ρ_L decides as the certificate says (its
    decision depends only on the claimed positions)."""
    import attncert

    m = harden(random_decoder(2, 2, 8, positions="none", parallel=True, seed=2))
    n = 10
    cert = attncert.certify(m, n=n, language="parity")
    assert attncert.check(cert, m).accepted
    assert confirm_by_enumeration(m, cert, language("parity")).decision_is_function
    # and again with the float pass, written out here
    rho = cert.final_restriction
    free = list(rho.free_positions)
    dep = sorted(cert.output_dependency)
    comps = [
        rho.complete(dict(zip(free, c, strict=True)))
        for c in itertools.product("01", repeat=len(free))
    ]
    by_dep: dict[tuple, set] = {}
    for s, a in zip(comps, forward(m, comps).accept, strict=True):
        by_dep.setdefault(tuple(s[u] for u in dep), set()).add(bool(a))
    assert all(len(v) == 1 for v in by_dep.values())
    bad = cert.misclassified
    assert bad is not None
    got = forward(m, list(bad.strings)).accept
    assert [bool(g) for g in got] == list(bad.decisions)
    parity = language("parity")
    assert any(bool(g) != parity.contains(x) for g, x in zip(got, bad.strings, strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("pos", ["rope", "alibi"])
@pytest.mark.parametrize("kind", ["leftmost", "average"])
def test_hard_certificates_for_positional_scores_against_brute_force(pos, kind):
    """Theorem 1 holds whatever the positional information: a hardened RoPE or ALiBi
    decoder gets a kernel-checked certificate (rows are position-specific, q and k taken
    at each row's position), confirmed by enumerating every compatible string."""
    import attncert

    m = random_decoder(2, 2, 8, positions=pos, seed=2, kind=kind)
    cert = attncert.certify(m, n=10, language="parity", k=8)
    assert attncert.check(cert, m).accepted
    assert confirm_by_enumeration(m, cert, language("parity")).decision_is_function


@pytest.mark.slow
def test_edited_positional_parameters_are_re_derived_by_the_kernel():
    """A certificate checked against the model with its rotary base or ALiBi slope edited:
    rejected by the hash; with the hash forced to the edited model's, the kernel
    re-derives every claim from the edited scores — whatever it accepts is confirmed by
    brute force on the edited model, and some edits make the claims fail, named."""
    import attncert
    from attncert.kernel.hard.checker import check

    rejected = []
    for pos, edit in (
        ("rope", lambda h: dataclasses.replace(h, rotary=Rotary(11.0, h.rotary.dim))),
        ("rope", lambda h: dataclasses.replace(h, rotary=Rotary(1.5, h.rotary.dim))),
        ("alibi", lambda h: dataclasses.replace(h, alibi=h.alibi * 3)),
        ("alibi", lambda h: dataclasses.replace(h, alibi=-h.alibi * 100)),
    ):
        m = random_decoder(2, 2, 8, positions=pos, seed=2, kind="average")
        cert = attncert.certify(m, n=10, language="parity", k=8)
        layers = tuple(
            dataclasses.replace(layer, heads=tuple(edit(h) for h in layer.heads))
            for layer in m.layers
        )
        other = dataclasses.replace(m, layers=layers)
        report = check(cert, other)
        assert not report.accepted and "hash" in report.failures[0].reason
        forged = dataclasses.replace(cert, model_sha256=other.digest)
        report = check(forged, other)
        if report.accepted:
            assert confirm_by_enumeration(other, forged, language("parity")).decision_is_function
        else:
            rejected.append(report.failures[0].claim)
    assert rejected, "no edit of a positional parameter changed a checked claim"


def test_rigorous_and_float_hard_decisions_agree_on_positional_heads():
    for pos in ("rope", "alibi"):
        m = random_decoder(2, 2, 8, positions=pos, seed=7, kind="leftmost")
        ss = _strings(9, 12, seed=3)
        f = forward(m, ss).accept
        assert [forward_rigorous(m, s).accept for s in ss] == list(f)


def test_analyses_that_do_not_know_a_kind_refuse_it_by_name():
    from attncert.kernel.uniform.propagate import propagate_uniform
    from attncert.soft.certified.propagate import propagate, sensitivity_inputs

    # the per-n certified propagation knows RoPE, RMSNorm, SwiGLU (and parallel residual)
    # since the lemma5-decoders branch; ALiBi stays refused by name (Lemma 5 fails there)
    rope = random_decoder(1, 2, 8, positions="rope", seed=1)
    p = propagate(rope, sensitivity_inputs(rope, 8))
    assert p.z_lo < p.z_hi and p.change > 0
    alibi = random_decoder(1, 2, 8, positions="alibi", seed=1)
    with pytest.raises(UnsupportedError, match="ALiBi"):
        propagate(alibi, sensitivity_inputs(alibi, 8))
    # the length-uniform propagation knows them too (issue 32): an unmasked RMSNorm model
    # is evaluated as RMSNorm, not silently as LayerNorm — the two give different bounds
    nope = random_decoder(1, 2, 8, positions="none", seed=1, causal=False)
    as_ln = dataclasses.replace(
        nope,
        final_norm=dataclasses.replace(nope.final_norm, kind=NormKind.LAYER),
        layers=tuple(
            dataclasses.replace(
                layer,
                norm1=dataclasses.replace(layer.norm1, kind=NormKind.LAYER),
                norm2=dataclasses.replace(layer.norm2, kind=NormKind.LAYER),
            )
            for layer in nope.layers
        ),
    )
    rms, ln = propagate_uniform(nope, 8), propagate_uniform(as_ln, 8)
    assert [r.k_tok for r in rms.rows] != [r.k_tok for r in ln.rows]
    # ALiBi stays outside, by the hypothesis it breaks
    alibi_bidir = random_decoder(1, 2, 8, positions="alibi", seed=1, causal=False)
    with pytest.raises(UnsupportedError, match=r"outside Lemma 5's hypotheses.*ALiBi"):
        propagate_uniform(alibi_bidir, 8)


def test_kernel_checkers_reject_new_kinds_they_do_not_know_with_the_reason():
    from attncert.kernel.soft import checker as K
    from attncert.kernel.soft.affine.bound import applicable

    # the soft checker knows RoPE/RMSNorm/SwiGLU now (tests/test_soft_certified_decoders.py);
    # it still refuses ALiBi by name; the affine bound knows every version-3 kind
    # (tests/test_affine_decoders.py)
    m = random_decoder(1, 2, 8, positions="alibi", seed=1)
    report = K.check({"format": K.FORMAT, "version": K.VERSION, "model": {"sha256": m.digest}}, m)
    assert not report.accepted and "ALiBi" in report.failures[0].reason
    assert "rotary positions" not in report.failures[0].reason
    rope = random_decoder(1, 2, 8, positions="rope", seed=1)
    assert applicable(rope, 16) is None and applicable(m, 16) is None


def test_trained_rope_decoder_certified_with_the_default_budget():
    """The search's rankings score RoPE keys at their positions (position_transform):
    before, they saw no open tuple on trained_hard_rope_first_last at n = 64 and the
    collapse failed; now the kernel checks a certificate, and at n = 14 every compatible
    string confirms it."""
    import attncert

    m = harden(zoo_model("trained_hard_rope_first_last"))
    cert = attncert.certify(m, n=64, language="parity")
    assert attncert.check(cert, m).accepted
    small = attncert.certify(m, n=14, language="parity")
    assert attncert.check(small, m).accepted
    assert confirm_by_enumeration(m, small, language("parity")).decision_is_function


def test_position_transform_gives_the_scores_of_the_float_pass():
    from attncert.model.forward import forward_tokens, position_transform

    for pos in ("rope", "alibi"):
        m = random_decoder(1, 2, 8, positions=pos, seed=4)
        tr = forward_tokens(m, np.array([m.encode("0110100")]))
        u = tr.embeddings[0]
        layer = m.layers[0]
        from attncert.model.forward import layer_norm

        un = layer_norm(layer.norm1, u)
        for hi, h in enumerate(layer.heads):
            q = un @ h.w_q.T + h.bias("b_q")
            k = un @ h.w_k.T + h.bias("b_k")
            q2, k2 = position_transform(h, q, k, np.arange(len(u)))
            s = q2 @ k2.T
            want = tr.layers[0].scores[0, hi]
            vis = np.isfinite(want)
            assert np.allclose(s[vis], want[vis], rtol=1e-12, atol=1e-12)
