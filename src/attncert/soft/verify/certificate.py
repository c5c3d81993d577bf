"""The verification tree on the search side: its writer (the format, its values and its
trusted reader are :mod:`attncert.certificates.verify`).

Writing is untrusted: ``attncert verify-check`` re-reads the file and the kernel
(:mod:`attncert.kernel.verify.checker`) re-derives the partition, every leaf and the counts
from what it reads, so a wrong writer yields a file that is rejected, never a verdict about
a file nobody checked. Counts are written by :func:`attncert.certificates.verify.count_text`
(decimal, hexadecimal beyond about 3,900 digits), the form the reader parses.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from attncert.certificates.verify import (
    FORMAT,
    VERSION,
    Leaf,
    Node,
    VerifyCertificate,
    count_text,
)
from attncert.io import write_atomic


def leaf_to_dict(leaf: Leaf) -> dict[str, Any]:
    """One leaf's claim as the certificate writes it."""
    out: dict[str, Any] = {"kind": leaf.kind}
    if leaf.kind == "bound":
        out.update(method=leaf.method, decision=leaf.decision)
        if leaf.base is not None:
            out["base"] = leaf.base
        out["z_range"] = list(leaf.z_range or ())
    if leaf.kind in ("bound", "exhaustive"):
        out.update(
            members=count_text(leaf.members),
            right=count_text(leaf.right),
            wrong=count_text(leaf.wrong),
            witness=leaf.witness,
        )
    if leaf.kind == "open":
        out["reason"] = leaf.reason
    return out


def node_to_dict(node: Node) -> dict[str, Any]:
    """One node (its parent, the symbol of its cube, its split or its leaf)."""
    out: dict[str, Any] = {"parent": node.parent, "symbol": node.symbol}
    if node.split is not None:
        out["split"] = node.split
    if node.leaf is not None:
        out["leaf"] = leaf_to_dict(node.leaf)
    return out


def certificate_to_dict(cert: VerifyCertificate) -> dict[str, Any]:
    """``cert`` as the JSON object :func:`attncert.certificates.verify.certificate_from_dict`
    reads."""
    model: dict[str, Any] = {"name": cert.model_name, "sha256": cert.model_sha256}
    if cert.model_source is not None:
        model["source"] = cert.model_source
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": model,
        "language": cert.language,
        "n": cert.n,
        "alphabet": "".join(cert.alphabet),
        "tolerance": cert.tolerance,
        "nodes": [node_to_dict(nd) for nd in cert.nodes],
        "totals": {
            "right": count_text(cert.right),
            "wrong": count_text(cert.wrong),
            "undecided": count_text(cert.undecided),
        },
        "trace": cert.trace,
    }


def certificate_to_json(cert: VerifyCertificate) -> str:
    """The certificate file's text."""
    return json.dumps(certificate_to_dict(cert), indent=1, ensure_ascii=False) + "\n"


def save_certificate(cert: VerifyCertificate, path: str | os.PathLike[str]) -> Path:
    """Write ``cert`` to ``path`` atomically; returns the path."""
    return write_atomic(path, certificate_to_json(cert))
