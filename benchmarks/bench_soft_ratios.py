"""Certified B(n) against the measured maximum on every soft zoo model (issue 15).

    python benchmarks/bench_soft_ratios.py                     # n = 256 and 1024
    python benchmarks/bench_soft_ratios.py --n 64,256 --budget 10
    python benchmarks/bench_soft_ratios.py --restrict 1024     # + certified restrictions
    python benchmarks/bench_soft_ratios.py --json out.json

For each softmax model of the zoo (``attncert zoo list``) and each n: the certified B(n)
(checked by attncert.kernel.soft.checker), what decided it (propagation or range cap), the
measured maximum |Δlogit| of the adversarial search (a real pair: a lower bound of the
true maximum), their ratio, Lemma 5's number and the diagnosis (which step loses the
factor). With ``--restrict N``: the certified restriction with most free positions found
at length N (time limit per model), its margin, the misclassified pair, the verdict.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

from attncert.kernel.soft import checker as K
from attncert.model import zoo_model, zoo_names
from attncert.soft.certified.certificate import SoftCertificate
from attncert.soft.certified.certify import certify_soft, sensitivity_claims
from attncert.soft.sensitivity import search_sensitivity


def soft_models(names=None):
    out = []
    for name in names or zoo_names():
        m = zoo_model(name)
        if m.layers and not m.is_hard:
            out.append(m)
    return out


def language_of(model) -> str:
    """The language a model's misclassified pair is judged in: a trained zoo model's own
    language, Dyck for bracket alphabets, PARITY otherwise."""
    from attncert.languages import language

    if model.name.startswith("trained_"):
        try:
            language(model.name.removeprefix("trained_"))
            return model.name.removeprefix("trained_")
        except Exception:  # not a registered language: fall through
            pass
    sigma = set(model.alphabet)
    if sigma == {"(", ")"}:
        return "dyck1"
    if sigma == {"(", ")", "[", "]"}:
        return "dyck2"
    return "parity"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="256,1024")
    ap.add_argument("--budget", type=float, default=60.0, help="search seconds per (model, n)")
    ap.add_argument("--models", default=None, help="comma-separated zoo names (default: all soft)")
    ap.add_argument("--files", default=None, help="comma-separated model files to add")
    ap.add_argument("--restrict", type=int, default=None, help="also restrictions at this n")
    ap.add_argument("--restrict-time", type=float, default=180.0)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    ns = [int(x) for x in args.n.split(",")]
    rec = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor()} cpus={os.cpu_count()}",
        "rows": [],
        "restrictions": [],
    }
    models = soft_models(args.models.split(",") if args.models else None)
    if args.files:
        from attncert.model import load_model

        models += [load_model(f) for f in args.files.split(",")]
    print(
        f"{'model':<22} {'n':>5} {'measured':>10} {'B(n)':>10} {'source':<12} {'ratio':>7} {'s':>6}"
    )
    for m in models:
        for n in ns:
            t0 = time.perf_counter()
            try:
                sens, _, claims = sensitivity_claims(m, n)
            except Exception as err:  # a benchmark reports the failure and goes on
                print(f"{m.name:<22} {n:>5} certification failed: {err}")
                continue
            cert = SoftCertificate(m.digest, m.name, f"zoo:{m.name}", n, True, tuple(claims))
            ok = K.check(cert.to_dict(), m).accepted
            t_cert = time.perf_counter() - t0
            meas = search_sensitivity(m, n, seed=0, time_budget=args.budget).value
            b = claims[0].bound
            row = {
                "model": m.name,
                "n": n,
                "measured": meas,
                "bound": b,
                "source": sens.source,
                "ratio": b / meas if meas > 0 else None,
                "checked": ok,
                "diagnosis": sens.diagnosis(),
                "first_layer": sens.worst.prop.first_layer,
                "certify_and_check_seconds": t_cert,
            }
            rec["rows"].append(row)
            ratio = f"{row['ratio']:.3g}" if row["ratio"] else "—"
            print(
                f"{m.name:<22} {n:>5} {meas:>10.4g} {b:>10.4g} {sens.source:<12} {ratio:>7} "
                f"{t_cert:>6.1f}{'' if ok else '  CHECK FAILED'}"
            )
            print(f"{'':<22}       {sens.diagnosis()}")
    if args.restrict:
        n = args.restrict
        for m in models:
            t0 = time.perf_counter()
            out = certify_soft(
                m, n, restriction=True, language=language_of(m), time_limit=args.restrict_time
            )
            r = out.certificate.restriction
            pair = out.certificate.pair
            row = {
                "model": m.name,
                "n": n,
                "language": language_of(m),
                "verdict": out.verdict,
                "free": None if r is None else r.rho.count("*"),
                "decision": None if r is None else r.decision,
                "z_range": None if r is None else list(r.z_range),
                "pair": None if pair is None else list(pair.strings),
                "floor": [c.floor for c in out.certificate.sensitivity],
                "seconds": time.perf_counter() - t0,
                "notes": list(out.notes),
            }
            rec["restrictions"].append(row)
            free = "—" if r is None else f"{row['free']}/{n} ({100 * row['free'] / n:.1f} %)"
            print(f"restriction {m.name:<22} {out.verdict:<18} free {free}  {row['seconds']:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=1) + "\n")


if __name__ == "__main__":
    main()
