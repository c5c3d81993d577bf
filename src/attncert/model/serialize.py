"""Saving and loading models: one JSON file, versioned, with a content hash.

Format (``format: "attncert-model"``, ``version: 1`` or ``2``)::

    {"format": "attncert-model", "version": 1, "name": ..., "alphabet": [...],
     "bos": null, "eos": null,
     "embedding": {"vocab": [...], "word": [[...]], "features": [{"name": "i/n"}],
                   "pos_weight": [[...]], "table": null},
     "layers": [{"residual": true,
                 "heads": [{"kind": "leftmost", "mask": "none", "temperature": null,
                            "w_q": [[...]], "w_k": ..., "w_v": ..., "w_o": ...}],
                 "ffn": {"w1": ..., "b1": ..., "w2": ..., "b2": ...} | null}],
     "readout": {"weight": [...], "bias": 0.0, "position": "last", "output_coords": [],
                 "lm_weight": null, "lm_bias": null, "lm_symbols": []},
     "meta": {...}, "sha256": "<hex>"}

Version 2 adds (each optional, ``null`` when absent): per head ``b_q``, ``b_k``,
``b_v``, ``b_o``; per layer ``norm1``, ``norm2`` (``{"weight", "bias", "eps"}``) and
``norm_position`` (``"pre"``/``"post"``); per FFN ``activation`` (``"relu"``,
``"gelu"``, ``"gelu_tanh"``); the model's ``final_norm``; readout position
``"mean"``. A model that uses none of them is written as version 1, byte for byte as
before, so its content hash (and every certificate that names it) is unchanged; both
versions load.

Version 3 (the causal decoders of Llama, Qwen2, Mistral, GPT-NeoX, Bloom) adds, each
written only when used: per head ``rotary`` (``{"base", "dim", "scale"}``) and
``alibi`` (the slope); per norm ``kind`` (``"rms"``); per FFN ``w_gate``, ``b_gate``
and the activation ``"silu"``; per layer ``parallel``. A model without them is written
as version 1 or 2 exactly as before.

Floats are written with Python's shortest round-trip ``repr``, so save → load is
bit-for-bit. ``sha256`` is computed over the canonical encoding of everything
else with each float as ``float.hex()``; loading recomputes it and refuses a
file whose stored hash differs (an edited or corrupted model).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from attncert.errors import SpecError
from attncert.jsonread import canonical_json, read_json
from attncert.model.positional import PosFeature
from attncert.model.spec import (
    BIAS_FIELDS,
    Embedding,
    FeedForward,
    Head,
    Layer,
    LayerNorm,
    Model,
    Readout,
    Rotary,
    Temperature,
    set_content_hash,
)

FORMAT = "attncert-model"
VERSION = 3  # the newest version written; every version in VERSIONS loads
VERSIONS = (1, 2, 3)


def _arr(a: np.ndarray | None, exact: bool) -> Any:
    if a is None:
        return None
    if exact:
        return _hexify(a.tolist())
    return a.tolist()


def _hexify(x: Any) -> Any:
    if isinstance(x, list):
        return [_hexify(v) for v in x]
    return float(x).hex()


def _float(x: float, exact: bool) -> Any:
    return float(x).hex() if exact else float(x)


def _norm(norm: LayerNorm | None, exact: bool) -> Any:
    if norm is None:
        return None
    out = {
        "weight": _arr(norm.weight, exact),
        "bias": _arr(norm.bias, exact),
        "eps": _float(norm.eps, exact),
    }
    if norm.rms:
        out["kind"] = norm.kind.value
    return out


def model_to_dict(model: Model, *, exact_floats: bool = False) -> dict[str, Any]:
    """The JSON-ready dictionary of ``model`` (without the hash): version 1 when the
    model uses no version-2 feature, else version 2 (module docstring)."""
    e = exact_floats
    v2 = bool(model.extensions)
    v3 = bool(model.new_kinds)
    emb = model.embedding
    layers = []
    for layer in model.layers:
        heads = []
        for h in layer.heads:
            hd = {
                "kind": h.kind.value,
                "mask": h.mask.value,
                "temperature": None if h.temperature is None else _temp(h.temperature, e),
                "w_q": _arr(h.w_q, e),
                "w_k": _arr(h.w_k, e),
                "w_v": _arr(h.w_v, e),
                "w_o": _arr(h.w_o, e),
            }
            if v2:
                hd.update({name: _arr(getattr(h, name), e) for name in BIAS_FIELDS})
            if h.rotary is not None:
                r = h.rotary
                hd["rotary"] = {
                    "base": _float(r.base, e),
                    "dim": r.dim,
                    "scale": _float(r.scale, e),
                }
            if h.alibi is not None:
                hd["alibi"] = _float(h.alibi, e)
            heads.append(hd)
        ffn = None
        if layer.ffn is not None:
            f = layer.ffn
            ffn = {k: _arr(getattr(f, k), e) for k in ("w1", "b1", "w2", "b2")}
            if v2:
                ffn["activation"] = f.activation.value
            if f.gated:
                ffn["w_gate"] = _arr(f.w_gate, e)
                ffn["b_gate"] = _arr(f.b_gate, e)
        ld: dict[str, Any] = {"residual": layer.residual, "heads": heads, "ffn": ffn}
        if layer.parallel:
            ld["parallel"] = True
        if v2:
            ld.update(
                {
                    "norm1": _norm(layer.norm1, e),
                    "norm2": _norm(layer.norm2, e),
                    "norm_position": layer.norm_position.value,
                }
            )
        layers.append(ld)
    r = model.readout
    out = {
        "format": FORMAT,
        "version": 3 if v3 else 2 if v2 else 1,
        "name": model.name,
        "alphabet": list(model.alphabet),
        "bos": model.bos,
        "eos": model.eos,
        "embedding": {
            "vocab": list(emb.vocab),
            "word": _arr(emb.word, e),
            "features": [
                {"name": f.name, **({} if f.param is None else {"param": _float(f.param, e)})}
                for f in emb.features
            ],
            "pos_weight": _arr(emb.pos_weight, e),
            "table": _arr(emb.table, e),
        },
        "layers": layers,
        "readout": {
            "weight": _arr(r.weight, e),
            "bias": _float(r.bias, e),
            "position": r.position,
            "output_coords": list(r.output_coords),
            "lm_weight": _arr(r.lm_weight, e),
            "lm_bias": _arr(r.lm_bias, e),
            "lm_symbols": list(r.lm_symbols),
        },
        "meta": _jsonable(dict(model.meta), "meta"),
    }
    if v2:
        out["final_norm"] = _norm(model.final_norm, e)
    return out


def content_hash(model: Model) -> str:
    """sha256 over the canonical encoding of :func:`model_to_dict` with every float as
    its exact hex form (what :attr:`Model.digest` returns)."""
    payload = model_to_dict(model, exact_floats=True)
    return hashlib.sha256(canonical_json(payload)).hexdigest()


set_content_hash(content_hash)


def _temp(t: Temperature, exact: bool) -> dict[str, Any]:
    return {k: _float(v, exact) for k, v in t.to_dict().items()}


def _jsonable(obj: Any, where: str) -> Any:
    try:
        return json.loads(json.dumps(obj, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise SpecError(f"not JSON-serializable: {err}", where=where) from None


class _Reader:
    """Reads fields of a model dictionary, naming the path of any error."""

    def __init__(self, source: str):
        self.source = source

    def where(self, path: str) -> str:
        return f"{self.source}: {path}" if self.source else path

    def get(self, d: Any, key: str, path: str, *, required: bool = True, default: Any = None):
        if not isinstance(d, Mapping):
            raise SpecError("expected an object", where=self.where(path))
        if key not in d:
            if required:
                raise SpecError(f"missing field {key!r}", where=self.where(path))
            return default
        return d[key]

    def array(self, value: Any, path: str, ndim: int, cols: int | None = None) -> np.ndarray:
        """``cols``: the column count of a 2-d array with no rows (JSON ``[]`` loses it).
        Leaves must be JSON numbers: a string such as ``"0.5"`` or a boolean is refused."""
        try:
            raw = np.array(value)
        except (TypeError, ValueError):
            raw = None
        if raw is None or (raw.dtype.kind not in "iuf" and not (raw.size == 0)):
            raise SpecError(
                "not a numeric array" + _first_non_number(value),
                where=self.where(path),
                expected=f"a {ndim}-d list of JSON numbers",
            )
        arr = raw.astype(np.float64)
        if arr.ndim != ndim and not (arr.size == 0 and ndim == 2):
            raise SpecError(
                f"array of shape {arr.shape}",
                where=self.where(path),
                expected=f"a {ndim}-dimensional array",
            )
        if arr.size == 0 and ndim == 2:
            arr = arr.reshape(arr.shape[0], 0) if arr.ndim == 2 else arr.reshape(0, cols or 0)
        if not np.all(np.isfinite(arr)):
            bad = tuple(int(b) for b in np.argwhere(~np.isfinite(arr))[0])
            raise SpecError(
                f"non-finite value {float(arr[bad])!r} at index {bad}",
                where=self.where(path),
                expected="finite numbers",
            )
        return arr


def _first_non_number(value: Any) -> str:
    """Where the first leaf that is not a JSON number sits, e.g. ``: [0][2] is '0.5'``."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        v, path = stack.pop()
        if isinstance(v, list):
            stack.extend((x, f"{path}[{k}]") for k, x in reversed(list(enumerate(v))))
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            text = repr(v)
            return f": entry {path or '$'} is {text[:40]}{'…' if len(text) > 40 else ''}"
    return " (ragged nesting or out-of-range numbers)"


def _read_norm(rd: _Reader, value: Any, path: str, d: int) -> LayerNorm | None:
    if value is None:
        return None
    eps = rd.get(value, "eps", path, required=False, default=1e-5)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise SpecError(f"eps {eps!r}", where=rd.where(f"{path}.eps"), expected="a number")
    try:
        return LayerNorm(
            weight=rd.array(rd.get(value, "weight", path), f"{path}.weight", 1),
            bias=rd.array(rd.get(value, "bias", path), f"{path}.bias", 1),
            eps=eps,
            kind=rd.get(value, "kind", path, required=False, default="layer"),
        )
    except SpecError as err:
        if err.where and err.where.startswith(rd.source or "\0"):
            raise
        wh = f"{path}.{err.where}" if err.where else path
        raise SpecError(err.message, where=rd.where(wh), expected=err.expected) from None


def _read_positional(rd: _Reader, hd: Any, hp: str) -> dict[str, Any]:
    """A version-3 head's ``rotary`` and ``alibi`` fields, with located errors."""
    out: dict[str, Any] = {}
    rot = rd.get(hd, "rotary", hp, required=False)
    if rot is not None:
        p = f"{hp}.rotary"
        if not isinstance(rot, Mapping):
            raise SpecError("expected an object", where=rd.where(p), expected="{base, dim, scale}")
        unknown = sorted(set(rot) - {"base", "dim", "scale"})
        if unknown:
            raise SpecError(
                f"unknown field {unknown[0]!r}", where=rd.where(p), expected="base, dim, scale"
            )
        try:
            out["rotary"] = Rotary(
                base=rd.get(rot, "base", p),
                dim=rd.get(rot, "dim", p),
                scale=rd.get(rot, "scale", p, required=False, default=1.0),
            )
        except SpecError as err:
            raise SpecError(
                err.message, where=rd.where(f"{p}.{err.where}"), expected=err.expected
            ) from None
    alibi = rd.get(hd, "alibi", hp, required=False)
    if alibi is not None:
        if isinstance(alibi, bool) or not isinstance(alibi, (int, float)):
            raise SpecError(
                f"ALiBi slope {alibi!r}", where=rd.where(f"{hp}.alibi"), expected="a number"
            )
        out["alibi"] = alibi
    return out


def model_from_dict(data: Any, *, source: str = "") -> Model:
    """Build a :class:`Model` from :func:`model_to_dict` output, with located errors."""
    rd = _Reader(source)
    if not isinstance(data, Mapping):
        raise SpecError("top level is not a JSON object", where=rd.where("$"))
    fmt = rd.get(data, "format", "format")
    if fmt != FORMAT:
        raise SpecError(f"format {fmt!r}", where=rd.where("format"), expected=repr(FORMAT))
    version = rd.get(data, "version", "version")
    if isinstance(version, bool) or version not in VERSIONS:
        raise SpecError(
            f"version {version!r}",
            where=rd.where("version"),
            expected=" or ".join(str(v) for v in VERSIONS),
        )
    v2 = version >= 2
    try:
        emb_d = rd.get(data, "embedding", "embedding")
        features = []
        for k, f in enumerate(rd.get(emb_d, "features", "embedding", required=False) or []):
            p = f"embedding.features[{k}]"
            try:
                features.append(
                    PosFeature(rd.get(f, "name", p), rd.get(f, "param", p, required=False))
                )
            except SpecError as err:
                raise SpecError(err.message, where=rd.where(p), expected=err.expected) from None
        table = rd.get(emb_d, "table", "embedding", required=False)
        pos_weight = rd.get(emb_d, "pos_weight", "embedding", required=False)
        embedding = Embedding(
            vocab=tuple(rd.get(emb_d, "vocab", "embedding")),
            word=rd.array(rd.get(emb_d, "word", "embedding"), "embedding.word", 2),
            features=tuple(features),
            pos_weight=None
            if pos_weight is None
            else rd.array(pos_weight, "embedding.pos_weight", 2),
            table=None if table is None else rd.array(table, "embedding.table", 2),
        )
        layers = []
        for li, ld in enumerate(rd.get(data, "layers", "layers")):
            lp = f"layers[{li}]"
            heads = []
            for hi, hd in enumerate(rd.get(ld, "heads", lp)):
                hp = f"{lp}.heads[{hi}]"
                t = rd.get(hd, "temperature", hp, required=False)
                mats = {
                    k: rd.array(rd.get(hd, k, hp), f"{hp}.{k}", 2, cols=embedding.d)
                    for k in ("w_q", "w_k", "w_v", "w_o")
                }
                if v2:
                    for name in BIAS_FIELDS:
                        b = rd.get(hd, name, hp, required=False)
                        mats[name] = None if b is None else rd.array(b, f"{hp}.{name}", 1)
                extra = _read_positional(rd, hd, hp) if version >= 3 else {}
                try:
                    heads.append(
                        Head(
                            **mats,
                            **extra,
                            kind=rd.get(hd, "kind", hp),
                            mask=rd.get(hd, "mask", hp, required=False, default="none"),
                            temperature=None if t is None else Temperature(**t),
                        )
                    )
                except (SpecError, TypeError) as err:
                    msg = err.message if isinstance(err, SpecError) else str(err)
                    wh = f"{hp}.{err.where}" if isinstance(err, SpecError) and err.where else hp
                    expected = err.expected if isinstance(err, SpecError) else None
                    raise SpecError(msg, where=rd.where(wh), expected=expected) from None
            fd = rd.get(ld, "ffn", lp, required=False)
            ffn = None
            if fd is not None:
                act = rd.get(fd, "activation", f"{lp}.ffn", required=False) if v2 else None
                gate = {}
                if version >= 3 and rd.get(fd, "w_gate", f"{lp}.ffn", required=False) is not None:
                    gate = {
                        k: rd.array(
                            rd.get(fd, k, f"{lp}.ffn"),
                            f"{lp}.ffn.{k}",
                            2 if k[0] == "w" else 1,
                            cols=embedding.d,
                        )
                        for k in ("w_gate", "b_gate")
                    }
                try:
                    ffn = FeedForward(
                        **gate,
                        **{
                            k: rd.array(
                                rd.get(fd, k, f"{lp}.ffn"),
                                f"{lp}.ffn.{k}",
                                2 if k[0] == "w" else 1,
                                cols=embedding.d,
                            )
                            for k in ("w1", "b1", "w2", "b2")
                        },
                        activation=act or "relu",
                    )
                except SpecError as err:
                    if err.where and err.where.startswith(source or "\0"):
                        raise
                    raise SpecError(
                        err.message, where=rd.where(f"{lp}.ffn.{err.where}"), expected=err.expected
                    ) from None
            residual = rd.get(ld, "residual", lp, required=False, default=True)
            if not isinstance(residual, bool):
                raise SpecError(
                    f"residual {residual!r}",
                    where=rd.where(f"{lp}.residual"),
                    expected="true/false",
                )
            norms = {}
            if v2:
                for name in ("norm1", "norm2"):
                    norms[name] = _read_norm(
                        rd, rd.get(ld, name, lp, required=False), f"{lp}.{name}", embedding.d
                    )
                norms["norm_position"] = rd.get(
                    ld, "norm_position", lp, required=False, default="pre"
                )
            if version >= 3:
                parallel = rd.get(ld, "parallel", lp, required=False, default=False)
                if not isinstance(parallel, bool):
                    raise SpecError(
                        f"parallel {parallel!r}",
                        where=rd.where(f"{lp}.parallel"),
                        expected="true/false",
                    )
                norms["parallel"] = parallel
            try:
                layers.append(Layer(tuple(heads), ffn, residual, **norms))
            except SpecError as err:
                raise SpecError(
                    err.message, where=rd.where(f"{lp}.{err.where}"), expected=err.expected
                ) from None
        rdd = rd.get(data, "readout", "readout")
        lm_w = rd.get(rdd, "lm_weight", "readout", required=False)
        lm_b = rd.get(rdd, "lm_bias", "readout", required=False)
        bias = rd.get(rdd, "bias", "readout", required=False, default=0.0)
        if isinstance(bias, bool) or not isinstance(bias, (int, float)):
            raise SpecError(f"bias {bias!r}", where=rd.where("readout.bias"), expected="a number")
        readout = Readout(
            weight=rd.array(rd.get(rdd, "weight", "readout"), "readout.weight", 1),
            bias=bias,
            position=rd.get(rdd, "position", "readout", required=False, default="last"),
            output_coords=tuple(
                rd.get(rdd, "output_coords", "readout", required=False, default=[])
            ),
            lm_weight=None if lm_w is None else rd.array(lm_w, "readout.lm_weight", 2),
            lm_bias=None if lm_b is None else rd.array(lm_b, "readout.lm_bias", 1),
            lm_symbols=tuple(rd.get(rdd, "lm_symbols", "readout", required=False, default=[])),
        )
        return Model(
            alphabet=tuple(rd.get(data, "alphabet", "alphabet")),
            embedding=embedding,
            layers=tuple(layers),
            readout=readout,
            bos=rd.get(data, "bos", "bos", required=False),
            eos=rd.get(data, "eos", "eos", required=False),
            name=str(rd.get(data, "name", "name", required=False, default="model")),
            meta=rd.get(data, "meta", "meta", required=False, default={}) or {},
            final_norm=_read_norm(
                rd, rd.get(data, "final_norm", "final_norm", required=False), "final_norm", 0
            )
            if v2
            else None,
        )
    except SpecError as err:
        if err.where and source and not err.where.startswith(source):
            raise SpecError(err.message, where=rd.where(err.where), expected=err.expected) from None
        raise
    except (TypeError, ValueError) as err:
        raise SpecError(f"malformed model: {err}", where=rd.where("$")) from None


def model_to_json(model: Model) -> str:
    payload = model_to_dict(model)
    payload["sha256"] = model.digest
    return json.dumps(payload, allow_nan=False) + "\n"


def load_model(path: str | os.PathLike[str]) -> Model:
    """Load a model file; verifies the stored content hash if present."""
    data = read_json(path)
    model = model_from_dict(data, source=str(path))
    stored = data.get("sha256") if isinstance(data, Mapping) else None
    if stored is not None and not isinstance(stored, str):
        raise SpecError(f"sha256 {stored!r}", where=f"{path}: sha256", expected="a hex string")
    if stored is not None and stored != model.digest:
        raise SpecError(
            f"content hash mismatch: file says {stored[:12]}…, contents hash to {model.digest[:12]}…",
            where=f"{path}: sha256",
            expected="the sha256 of the file's contents (the file was edited or corrupted)",
        )
    return model
