"""Human-readable account of a compiled model (``attncert compile … --explain``)."""

from __future__ import annotations

from attncert.model.spec import Model


def explain(model: Model) -> str:
    """Layers, heads (pattern, mask, gap, temperature), encodings and the designated output
    coordinates of a model built by :func:`attncert.compile.compile_formula`."""
    meta = model.meta
    if meta.get("compiler") != "attncert.compile":
        return (
            f"{model.name}: not a compiled formula (no compiler record); "
            f"{model.num_layers} layers, d = {model.d}"
        )
    lines = [
        f"formula   {meta['formula']}",
        f"regime    {meta['regime']}",
        f"alphabet  {meta['alphabet']}",
        f"width d = {model.d}, layers = {model.num_layers}, heads = {len(meta['heads'])}",
        "positional encodings: "
        + (", ".join(meta["positional_encodings"]) or "(none)")
        + ("  [all bounded]" if meta.get("bounded_encodings") else "  [some unbounded]"),
        "",
    ]
    by_layer: dict[int, list[dict]] = {}
    for h in meta["heads"]:
        by_layer.setdefault(h["layer"], []).append(h)
    nodes_by_level: dict[int, list[dict]] = {}
    for nd in meta["nodes"]:
        nodes_by_level.setdefault(nd["level"], []).append(nd)
    for nd in nodes_by_level.get(0, []):
        lines.append(f"embedding: y[{nd['coord']}] = [{nd['formula']}]")
    for li, layer in enumerate(model.layers):
        lines.append(f"layer {li + 1}:")
        for h, rec in zip(
            layer.heads, sorted(by_layer.get(li, []), key=lambda r: r["head"]), strict=False
        ):
            t = rec["temperature"]
            gap = rec["gap"]["min"]
            lines.append(
                f"  head {rec['head']} [{rec['role']}, {h.mask.value}] for {rec['node']}: "
                f"{rec['pattern']}"
            )
            lines.append(
                f"      scores {rec['scores']};  gap ≥ {gap if gap is not None else '— (uniform)'}"
                f";  β(N) = {t['beta']}  ({rec['construction']})"
            )
        ffn = layer.ffn
        if ffn is not None:
            lines.append(f"  FFN: {ffn.w1.shape[0]} ReLU units (Lemma 9 rounding / Boolean ops)")
        for nd in nodes_by_level.get(li + 1, []):
            lines.append(f"  → y[{nd['coord']}] = [{nd['formula']}]  (exact 0/1)")
    ro = meta["readout"]
    lines += [
        "",
        f"designated output coordinate: y[{ro['coord']}] ({meta['formula']}); "
        f"accept iff y[{ro['coord']}] − 1/2 > 0 at the last position",
        f"output_coords (readout): {list(model.readout.output_coords)}",
    ]
    return "\n".join(lines)
