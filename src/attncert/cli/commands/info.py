"""``attncert info MODEL``: what a model is — layers, heads, kinds, masks, norms,
activations, features, hash.

attncert info zoo:anbn
attncert info model.json --json

Layers are numbered from 1 as in the papers (layer ℓ = 1..L, the same numbering as
``attncert certify``); JSON field paths such as ``layers[0].heads[1]`` are 0-based
array indices into the model file.
"""

from __future__ import annotations

import argparse
from typing import Any

from attncert.cli.common import add_json_flag, add_model_argument, load_model_arg, print_json
from attncert.model.spec import Model


def describe(model: Model) -> dict[str, Any]:
    """A JSON-ready summary of ``model`` (no weights)."""
    emb = model.embedding
    layers = []
    for li, layer in enumerate(model.layers):
        heads = [
            {
                "index": hi,
                "kind": h.kind.value,
                "mask": h.mask.value,
                "temperature": None if h.temperature is None else h.temperature.to_dict(),
                "d_k": int(h.w_q.shape[0]),
                "d_v": int(h.w_v.shape[0]),
            }
            for hi, h in enumerate(layer.heads)
        ]
        ffn = None
        if layer.ffn is not None:
            ffn = {"d_ff": int(layer.ffn.w1.shape[0]), "activation": layer.ffn.activation.value}
        if layer.ffn is not None and layer.ffn.gated:
            ffn["gated"] = True
        for h, spec in zip(heads, layer.heads, strict=True):
            h["biases"] = spec.has_bias
            if spec.rotary is not None:
                h["rotary"] = spec.rotary.to_dict()
            if spec.alibi is not None:
                h["alibi"] = spec.alibi
        norms = [name for name in ("norm1", "norm2") if getattr(layer, name) is not None]
        layers.append(
            {
                "layer": li + 1,
                "field": f"layers[{li}]",
                "heads": heads,
                "ffn": ffn,
                "residual": layer.residual,
                "norms": norms,
                "norm_position": layer.norm_position.value if norms else None,
                "norm_kind": getattr(layer, norms[0]).kind.value if norms else None,
                "parallel": layer.parallel,
            }
        )
    r = model.readout
    return {
        "name": model.name,
        "sha256": model.digest,
        "alphabet": list(model.alphabet),
        "bos": model.bos,
        "eos": model.eos,
        "d": model.d,
        "hard": model.is_hard,
        "num_layers": model.num_layers,
        "num_heads": sum(len(layer.heads) for layer in model.layers),
        "features": [
            {"name": f.name, "param": f.param, "label": f.label, "bounded": f.bounded}
            for f in emb.features
        ],
        "position_table_rows": None if emb.table is None else int(emb.table.shape[0]),
        "layers": layers,
        "final_norm": model.final_norm is not None,
        "final_norm_kind": None if model.final_norm is None else model.final_norm.kind.value,
        "positional_scheme": model.positional_scheme,
        "extensions": list(model.extensions),
        "readout": {
            "position": r.position,
            "bias": r.bias,
            "output_coords": list(r.output_coords),
            "lm_symbols": list(r.lm_symbols),
        },
        "meta": dict(model.meta),
    }


def _text(info: dict[str, Any]) -> str:
    lines = [
        f"model     {info['name']}",
        f"sha256    {info['sha256']}",
        f"alphabet  {' '.join(info['alphabet'])}   (BOS {info['bos']!r}, EOS {info['eos']!r})",
        f"width d   {info['d']}",
        "attention "
        + ("hard only (exact evaluation available)" if info["hard"] else "includes softmax"),
    ]
    feats = ", ".join(
        f"{f['label']}{'' if f['bounded'] else ' (unbounded)'}" for f in info["features"]
    )
    lines.append(f"features  {feats or 'none'}")
    lines.append(f"positions {info['positional_scheme']}")
    if info["position_table_rows"] is not None:
        lines.append(f"pos table {info['position_table_rows']} rows")
    lines.append(f"layers    {info['num_layers']} ({info['num_heads']} heads in all)")
    for layer in info["layers"]:
        heads = "; ".join(
            f"h{h['index']} {h['kind']}"
            + (
                f" β={h['temperature']['coef']!r}·N^{h['temperature']['n_power']:g}"
                f"·log(N)^{h['temperature']['log_power']:g}"
                if h["temperature"]
                else ""
            )
            + f" mask={h['mask']} d_k={h['d_k']} d_v={h['d_v']}"
            + (
                f" rope(base={h['rotary']['base']:g}, dim={h['rotary']['dim']}"
                + (f", scale={h['rotary']['scale']:g})" if h["rotary"]["scale"] != 1 else ")")
                if "rotary" in h
                else ""
            )
            + (f" alibi={h['alibi']!r}" if "alibi" in h else "")
            for h in layer["heads"]
        )
        ffn = (
            f"ffn d_ff={layer['ffn']['d_ff']} {layer['ffn']['activation']}"
            + (" gated" if layer["ffn"].get("gated") else "")
            if layer["ffn"]
            else "no ffn"
        )
        res = "residual" if layer["residual"] else "no residual"
        norm = (
            f"; {layer['norm_position']}-norm {'+'.join(layer['norms'])}"
            + (" (RMSNorm)" if layer["norm_kind"] == "rms" else "")
            if layer["norms"]
            else ""
        )
        if layer["parallel"]:
            norm += "; parallel attention + MLP"
        lines.append(
            f"  layer {layer['layer']} ({layer['field']}): {heads or 'no heads'}; {ffn}; {res}{norm}"
        )
    if info["final_norm"]:
        kind = "RMSNorm" if info["final_norm_kind"] == "rms" else "LayerNorm"
        lines.append(f"final     {kind} before the readout")
    r = info["readout"]
    where = "the mean over all tokens" if r["position"] == "mean" else f"position {r['position']}"
    lines.append(f"readout   accept iff w·y + b > 0 at {where} (b = {r['bias']!r})")
    if r["output_coords"]:
        lines.append(f"outputs   coordinates {r['output_coords']}")
    if r["lm_symbols"]:
        lines.append(f"next-symbol head over {' '.join(r['lm_symbols'])}")
    for key, value in info["meta"].items():
        lines.append(f"meta.{key}: {value}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    info = describe(load_model_arg(args.model))
    if args.json:
        print_json(info)
    else:
        print(_text(info))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "info",
        help="describe a model (layers, heads, kinds, masks, features, hash)",
        description="Describe a model: layers, heads, attention kinds, masks, positional "
        "features, width, readout and content hash.",
    )
    add_model_argument(p)
    add_json_flag(p)
    p.set_defaults(func=run)
