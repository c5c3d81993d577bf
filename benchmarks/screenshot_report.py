"""Render the report of the bundled default model (small n) and save a screenshot of its
page, taken by headless Chromium, to ``docs/report-screenshot.png`` (issue 33).

    python benchmarks/screenshot_report.py                    # n = 16, 64
    python benchmarks/screenshot_report.py --ns 16 --out /tmp/shot.png
    python benchmarks/screenshot_report.py --report /tmp/r    # keep (or resume) the report

Needs ``chromium`` (``apt-get install -y chromium``). The report runs in this process
(``dask=False``) into a temporary directory (or ``--report DIR``: a finished report there
is resumed — its pages rebuilt, no cell run again); the page is opened as a ``file://``
URL, offline (it links nothing). The top of the page: the summary, then the sections.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import attncert

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default="16,64")
    ap.add_argument("--out", default=str(ROOT / "docs" / "report-screenshot.png"))
    ap.add_argument("--window-size", default="1200,2000")
    ap.add_argument("--report", default=None, help="the report directory (default: temporary)")
    args = ap.parse_args()
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("chromium is not installed: apt-get install -y chromium", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        rep = attncert.report(
            ns=[int(x) for x in args.ns.split(",")],
            out=Path(args.report) if args.report else Path(tmp) / "report",
            dask=False,
            cell_time_limit=120,
        )
        url = (Path(rep.directory) / "index.html").resolve().as_uri()
        shot = Path(tmp) / "shot.png"
        subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={shot}",
                f"--window-size={args.window_size}",
                url,
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        Path(args.out).write_bytes(shot.read_bytes())
    print(f"{args.out}: {Path(args.out).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
