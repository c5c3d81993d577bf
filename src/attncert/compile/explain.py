"""Human-readable account of a compiled model (``attncert compile … --explain``)."""

from __future__ import annotations

from attncert.model.spec import Model, Temperature


def explain(model: Model) -> str:
    """Layers, heads (pattern, mask, gap, temperature), encodings and the designated output
    coordinates of a model built by :func:`attncert.compile.compile_formula`."""
    meta = model.meta
    program = meta.get("compiler") == "attncert.compile.dyck"
    if meta.get("compiler") != "attncert.compile" and not program:
        return (
            f"{model.name}: not a compiled formula (no compiler record); "
            f"{model.num_layers} layers, d = {model.d}"
        )
    if program:
        return _explain_program(model)
    lines = [
        f"formula   {meta['formula']}",
        *(
            [f"language  {meta['language']} (verify, report, certify default to it)"]
            if meta.get("language")
            else []
        ),
        f"regime    {meta['regime']}",
        f"alphabet  {meta['alphabet']}",
        f"width d = {model.d}, layers = {model.num_layers}, heads = {len(meta['heads'])}",
        "positional encodings: "
        + (", ".join(meta["positional_encodings"]) or "(none)")
        + ("  [all bounded]" if meta.get("bounded_encodings") else "  [some unbounded]"),
        "",
    ]
    by_layer = _heads_by_layer(meta)
    nodes_by_level: dict[int, list[dict]] = {}
    for nd in meta["nodes"]:
        nodes_by_level.setdefault(nd["level"], []).append(nd)
    for nd in nodes_by_level.get(0, []):
        lines.append(f"embedding: y[{nd['coord']}] = [{nd['formula']}]")
    for li, layer in enumerate(model.layers):
        lines.append(f"layer {li + 1}:")
        lines += _head_lines(layer, by_layer.get(li, []))
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


def _heads_by_layer(meta) -> dict[int, list[dict]]:
    by_layer: dict[int, list[dict]] = {}
    for h in meta["heads"]:
        by_layer.setdefault(h["layer"], []).append(h)
    return by_layer


def _head_lines(layer, records: list[dict], program: bool | None = None) -> list[str]:
    """Two lines per head; a program shows the head's actual temperature (Theorem 26 sets
    it after the records were written), a formula the compiler's record."""
    lines = []
    for h, rec in zip(layer.heads, sorted(records, key=lambda r: r["head"]), strict=False):
        t = rec["temperature"]
        gap = rec["gap"]["min"]
        lines.append(
            f"  head {rec['head']} [{rec['role']}, {h.mask.value}, {h.kind.value}] for "
            f"{rec['node']}: {rec['pattern']}"
        )
        beta = t["beta"] if not program else (h.temperature or "— (average-hard)")
        lines.append(
            f"      scores {rec['scores']};  gap ≥ {gap if gap is not None else '— (uniform)'}"
            f";  β(N) = {beta}  ({rec['construction']})"
        )
    return lines


def _explain_program(model: Model) -> str:
    """The Appendix-E Dyck-k program (:mod:`attncert.compile.dyck`), layer by layer."""
    meta = model.meta
    lines = [
        f"program   {meta['program']}",
        f"alphabet  {meta['alphabet']} (BOS {meta['bos']!r} at position 1)",
        f"width d = {model.d}, layers = {model.num_layers}, heads = {len(meta['heads'])}",
        "positional encodings: " + ", ".join(meta["positional_encodings"]) + "  [some unbounded]",
    ]
    tl = meta.get("tieless")
    if tl:
        beta = Temperature(**tl["temperature"])
        lines.append(f"softmax by {tl['theorem']}: β(N) = {beta}, guaranteed for {tl['valid_for']}")
    lines.append("")
    by_layer = _heads_by_layer(meta)
    for li, layer in enumerate(model.layers):
        lines.append(f"layer {li + 1}:")
        lines += _head_lines(layer, by_layer.get(li, []), program=True)
        if layer.ffn is not None:
            lines.append(f"  FFN: {layer.ffn.w1.shape[0]} ReLU units")
    lines.append("")
    for o in meta["outputs"]:
        lines.append(f"output y[{o['coord']}] = {o['name']}: {o['meaning']}")
    ro = meta["readout"]
    lines.append(f"accept iff y[{ro['coord']}] − 1/2 > 0 at the last position")
    return "\n".join(lines)
