"""The report pages in headless Chromium (issue 42, item 5; slow): six pages — the trained
hard first = last model on its own language and on PARITY, the trained PARITY model, a
compiled library formula on its default language, a Llama classifier imported from
transformers, and a constant model (a Llama classifier whose score weights are zero) —
each rendered at 600 px and 1400 px: the page itself never scrolls sideways (wide tables
scroll inside their wrapper), no console error, and ``attncert check DIR`` rebuilds every
page byte for byte. Skipped, with the reason, when chromium is not installed."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import attncert
from attncert.report.directory import check_report

pytestmark = pytest.mark.slow

WIDTHS = (600, 1400)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
#: appended to a copy of the page: the page's width and every element that sticks out of
#: the viewport without a scrolling wrapper (the page itself has no script)
MEASURE = """<script>
(function () {
  var de = document.documentElement, over = [];
  document.querySelectorAll("body *").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.right > window.innerWidth + 1 && !e.closest(".scroll") && !e.closest(".plot"))
      over.push(e.tagName + "." + e.className + ":" + Math.round(r.right));
  });
  var p = document.createElement("pre");
  p.id = "measure";
  p.textContent = JSON.stringify({scroll: de.scrollWidth, width: window.innerWidth,
                                  over: over.slice(0, 10)});
  document.body.appendChild(p);
})();
</script>"""


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _llama(zero: bool):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from attncert.model.importers import model_from_hf

    torch.manual_seed(0)  # token ids: 0 pad, 1 BOS "<s>", 2 "0", 3 "1"
    config = transformers.LlamaConfig(
        vocab_size=4, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_labels=2, pad_token_id=0, bos_token_id=1,
        initializer_range=0.1, attn_implementation="eager",
    )  # fmt: skip
    clf = transformers.LlamaForSequenceClassification(config)
    if zero:  # a language model loaded as a classifier: its score weights all zero
        with torch.no_grad():
            clf.score.weight.zero_()
    clf = clf.double().eval()
    name = "llama-zero-score" if zero else "llama-classifier"
    ids = {"<s>": 1, "0": 2, "1": 3}
    return model_from_hf(clf, alphabet="01", bos="<s>", token_ids=ids, name=name)


def _compiled():
    from attncert.compile.library import compile_library

    return compile_library("parity-odd", "temperature")


#: name → (model, language; None: the one the model records)
PAGES = {
    "first_last": (lambda: "zoo:trained_hard_first_last", None),
    "hard_parity": (lambda: "zoo:trained_hard_first_last", "parity"),
    "trained_parity": (lambda: "zoo:trained_parity", None),
    "compiled": (_compiled, None),
    "llama": (lambda: _llama(False), "first_last"),
    "constant": (lambda: _llama(True), "first_last"),
}


@pytest.fixture(scope="module")
def chromium():
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return exe


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = {}
    for name, (make, language) in PAGES.items():
        d = tmp_path_factory.mktemp(name) / "report"
        out[name] = attncert.report(
            make(), language=language, out=d, ns=(8,), dask=False, cell_time_limit=20.0
        )
    return out


def measure(exe: str, html: Path, width: int, tmp: Path) -> tuple[dict, list[str]]:
    """The page's measurements at ``width`` px and the console lines Chromium logged."""
    probe = tmp / f"{html.parent.name}-{width}.html"
    probe.write_text(html.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"))
    # the copy sits elsewhere: plots are inline, the only links are to certs/ (not loaded)
    dom = subprocess.run(
        [exe, *FLAGS, f"--window-size={width},2000", "--enable-logging=stderr", "--v=0",
         "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    m = re.search(r'<pre id="measure">(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stderr[-2000:]
    console = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln]
    return json.loads(m.group(1).replace("&quot;", '"')), console


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("name", list(PAGES))
def test_the_page_fits_600_and_1400_px_and_checks(reports, chromium, name, tmp_path):
    rep = reports[name]
    d = Path(rep.directory)
    rc = check_report(d)  # every page rebuilt from the re-derived cells, byte for byte
    assert rc.cells and not rc.problems, rc.lines()
    html = d / "index.html"
    for width in WIDTHS:
        got, console = measure(chromium, html, width, tmp_path)
        assert got["width"] == width, got
        assert got["scroll"] <= width and not got["over"], (name, width, got)
        assert not console, console
        shot = tmp_path / f"{name}-{width}.png"
        subprocess.run(
            [chromium, *FLAGS, f"--screenshot={shot}", f"--window-size={width},1600",
             html.resolve().as_uri()],
            capture_output=True, timeout=120,
        )  # fmt: skip
        assert png_size(shot) == (width, 1600) and shot.stat().st_size > 20_000
    text = html.read_text()
    assert 'id="summary"' in text and "In short." in text


def test_the_measurement_catches_a_page_that_overflows(chromium, tmp_path):
    """The control: a table wider than the window, outside a wrapper, is caught."""
    d = tmp_path / "wide"
    d.mkdir()
    cells = "".join(f"<td>{'x' * 40}</td>" for _ in range(20))
    (d / "index.html").write_text(
        f"<!DOCTYPE html><html><body><table><tr>{cells}</tr></table></body></html>"
    )
    got, _ = measure(chromium, d / "index.html", 600, tmp_path)
    assert got["scroll"] > 600 and got["over"]


def test_the_constant_page_says_constant_and_shows_the_budget(reports):
    rep = reports["constant"]
    assert rep.summary_text.startswith("The model is constant")
    ver = rep.cells["verify-n8"]
    # the logit is exactly 0 on every string: verify cannot decide a sign; whatever it
    # ends with, the page shows the budget the cell had and what it used
    assert ver["time_limit"] == 20.0
    col = rep.section("verify").columns.index("time used / budget")
    assert rep.section("verify").rows[0][col].endswith(("of 20 s", "of 20 s, ran out"))
