"""Finding a certificate's model again, from its ``model.source`` (a zoo name, a path
relative to the certificate, or an embedded model; hardened if it says so).

Untrusted convenience: whatever model this returns, the kernel compares its content
hash with the certificate's before checking anything.
"""

from __future__ import annotations

import os
from pathlib import Path

from attncert.certificates.hard import Certificate
from attncert.errors import SpecError
from attncert.model.spec import Model


def resolve_model(cert: Certificate, cert_path: str | os.PathLike[str] | None = None) -> Model:
    """The model a certificate names in ``model.source`` (hardened if it says so), for a
    standalone re-check. The caller still compares content hashes (the kernel does)."""
    return resolve_source(cert.model_source, cert_path, "model.source")


def resolve_source(src: dict | None, cert_path: str | os.PathLike[str] | None, where: str) -> Model:
    """The model a ``model.source`` entry names (a zoo name, a path relative to the
    certificate's folder, or an embedded model; hardened if it says so)."""
    from attncert.model import harden, load_model, model_from_dict, zoo_model

    if src is None:
        raise SpecError(
            "the certificate does not say where its model is",
            where=where,
            expected="attncert check CERT MODEL",
        )
    if "zoo" in src:
        model = zoo_model(src["zoo"])
    elif "path" in src:
        p = Path(src["path"])
        if not p.is_absolute() and cert_path is not None:
            near = Path(cert_path).parent / p
            p = near if near.exists() else p
        model = load_model(p)
    elif "embedded" in src:
        model = model_from_dict(src["embedded"], source=f"{where}.embedded")
    else:
        raise SpecError("no zoo, path or embedded model", where=where)
    if src.get("harden"):
        model = harden(model, src["harden"])
    return model
