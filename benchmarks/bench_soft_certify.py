"""Benchmark: a certified sensitivity certificate and its independent check at n = 1024.

    python benchmarks/bench_soft_certify.py              # L = 2, d = 64, n = 1024 (issue 15)
    python benchmarks/bench_soft_certify.py --quick      # n = 256
    python benchmarks/bench_soft_certify.py --json out.json

The model is ``random_model(2, 2, 64, kind="softmax", seed=0)`` (2 layers, 2 heads of
width 32, d = 64, ReLU FFN of width 64, positional features 1, i/n, (i/n)², (−1)^i). The
clock (wall and process CPU time, which a shared machine inflates less) covers (1) the
certified B(n) — one propagation over all strings per readout symbol
(attncert.soft.certified), (2) writing the certificate, and (3) the independent checker
(attncert.kernel.soft.checker) re-deriving it from the model and the file. Target: (1) + (3)
≤ 60 s on 2 cores. Prints a table; ``--json`` also writes the numbers.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from attncert.kernel.soft import checker as K
from attncert.model import random_model
from attncert.soft.certified.certificate import SoftCertificate, load_certificate
from attncert.soft.certified.certify import sensitivity_claims


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    n = 256 if args.quick else 1024
    model = random_model(2, 2, 64, kind="softmax", seed=0)
    t0, c0 = time.perf_counter(), time.process_time()
    sens, _, claims = sensitivity_claims(model, n)
    t_cert, c_cert = time.perf_counter() - t0, time.process_time() - c0
    cert = SoftCertificate(model.digest, model.name, None, n, True, tuple(claims))
    with tempfile.TemporaryDirectory() as tmp:
        path = cert.save(Path(tmp) / "c.json")
        t1, c1 = time.perf_counter(), time.process_time()
        report = K.check(load_certificate(path), model)
        t_check, c_check = time.perf_counter() - t1, time.process_time() - c1
    total = t_cert + t_check
    rec = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor()} cpus={os.cpu_count()}",
        "python": platform.python_version(),
        "model": model.name,
        "n": n,
        "layers": 2,
        "d": 64,
        "bound": claims[0].bound,
        "source": sens.source,
        "certify_seconds": t_cert,
        "check_seconds": t_check,
        "total_seconds": total,
        "certify_cpu_seconds": c_cert,
        "check_cpu_seconds": c_check,
        "load_average": os.getloadavg(),
        "accepted": report.accepted,
        "target_seconds": 60,
    }
    print(f"model {model.name}, n = {n}")
    print(f"{'step':<34} {'wall s':>8} {'cpu s':>8}")
    print(f"{'certified B(n) (all readout symbols)':<34} {t_cert:>8.1f} {c_cert:>8.1f}")
    print(f"{'independent check':<34} {t_check:>8.1f} {c_check:>8.1f}")
    print(f"{'total (target ≤ 60 s)':<34} {total:>8.1f} {c_cert + c_check:>8.1f}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (the machine is shared)")
    print(f"B({n}) = {claims[0].bound:.4g} ({sens.source}); checker: {report.summary()[:120]}")
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=1) + "\n")


if __name__ == "__main__":
    main()
