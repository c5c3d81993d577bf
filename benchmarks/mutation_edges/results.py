"""The results cache, the documented equivalent mutants, and the JSON and Markdown output.

``.mutation-edges/results.json`` holds one entry per mutant *key*: a hash of the swapped
function's source, the edit's offset inside it and the new text — not the line number, so
an edit elsewhere in the module reuses every result. An entry is reused while it still
holds: *killed* (or *timeout*) while the killing test's file is unchanged and the test is
still selected; *survived* while the mutant's selected tests (ids and file hashes) are the
same. A changed function, or new tests for a survivor, run again.
"""

from __future__ import annotations

import json
import os
import platform
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

from .mutants import Mutant
from .source import ROOT, sha
from .testmap import STATE

RESULTS = STATE / "results.json"
EQUIVALENT = ROOT / "benchmarks" / "mutation_edges_equivalent.toml"
KILLED = {"killed", "timeout", "crash"}
KINDS = {"equivalent", "looser", "performance", "margin", "message"}


def mutant_key(m: Mutant, unit_text: str, unit_start: int) -> str:
    return sha(f"{unit_text}\0{m.start - unit_start}\0{m.end - m.start}\0{m.new}\0{m.kind}")


def tests_signature(tests: list[str], file_hashes: dict[str, str]) -> str:
    files = sorted({t.split("::")[0] for t in tests})
    return sha("\n".join(tests) + "\0" + "\n".join(f"{f}={file_hashes.get(f)}" for f in files))


def load() -> dict:
    if RESULTS.exists():
        return json.loads(RESULTS.read_text())
    return {"version": 1, "mutants": {}, "runs": []}


def save(state: dict) -> None:
    STATE.mkdir(exist_ok=True)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=0))
    os.replace(tmp, RESULTS)


def reusable(entry: dict | None, tests: list[str], sig: str, file_hashes: dict[str, str]) -> bool:
    if entry is None or entry.get("status") in (None, "error", "stale"):
        return False
    if entry["status"] in KILLED and entry.get("test"):
        t = entry["test"]
        return t in tests and entry.get("test_file_hash") == file_hashes.get(t.split("::")[0])
    return entry.get("tests_sig") == sig


# ----- equivalents ---------------------------------------------------------------------------


def equivalents(path: Path = EQUIVALENT) -> list[dict]:
    if not path.exists():
        return []
    entries = tomllib.loads(path.read_text()).get("mutant", [])
    for e in entries:
        if e.get("kind") not in KINDS or not e.get("reason") or not e.get("id"):
            raise SystemExit(
                f"{path}: entry {e.get('id')!r} needs an id, a kind in {KINDS} and a reason"
            )
    return entries


def _loose_key(module: str, function: str, col: int, change: str, line_text: str) -> tuple:
    return module, function, col, change, " ".join(line_text.split())


def equivalent_of(m: Mutant, entries: list[dict]) -> dict | None:
    """The entry for ``m``: by id, or (the code moved) by function, column, change and
    the stripped source line(s) recorded in the entry's ``line``."""
    for e in entries:
        if e["id"] == m.id:
            return e
    want = _loose_key(m.module, m.function, m.col, m.change, m.original)
    for e in entries:
        module, function, _line, col, change = e["id"].split(":", 4)
        if "line" in e and _loose_key(module, function, int(col), change, e["line"]) == want:
            return e
    return None


# ----- output ----------------------------------------------------------------------------------


def classify(m: Mutant, entry: dict | None, eq: dict | None) -> str:
    """killed / timeout / crash / equivalent / survived / no tests / not run / error."""
    if entry is None:
        return "not run"
    status = entry["status"]
    if status in KILLED:
        return status
    if status == "survived" and eq is not None:
        return "equivalent"
    if status == "survived" and entry.get("tests_selected", 0) == 0:
        return "equivalent" if eq is not None else "no tests"
    return status


def rows(mutants: list[Mutant], entries: dict[str, dict], eqs: list[dict]) -> list[dict]:
    out = []
    for m in mutants:
        e = entries.get(m.id)
        eq = equivalent_of(m, eqs)
        out.append({**m.to_json(), "result": classify(m, e, eq), "run": e, "equivalent": eq})
    return out


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()}-core {cpu}, Python {platform.python_version()}"


def _short(test: str | None) -> str:
    if not test:
        return ""
    path, _, name = test.partition("::")
    return f"`{path.removeprefix('tests/')}::{name}`"


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def markdown(table: list[dict], run: dict | None, *, title: str) -> str:
    """The docs/mutation.md section: a summary per module, every comparison with its
    mutants and the tests that kill them, and every survivor and equivalent with why."""
    lines = [f"## {title}", ""]
    if run:
        lines += [
            f"Run of {run['date']} on a {run['machine']} (shared with other jobs); "
            f"{run['workers']} worker processes, wall time {run['wall']:.0f} s for "
            f"{run['ran']} mutants run (the rest reused from the cache); per-mutant overhead "
            f"(fork, swap, cache clearing, reaping) median {run['overhead_ms']:.0f} ms.",
            "",
        ]
    by_module: dict[str, list[dict]] = defaultdict(list)
    for r in table:
        by_module[r["module"]].append(r)
    lines += [
        "| module | comparisons | mutants | killed | equivalent | survived | no tests | run time |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = Counter()
    for module, rs in by_module.items():
        c = Counter(r["result"] for r in rs)
        k = c["killed"] + c["timeout"] + c["crash"]
        secs = sum((r["run"] or {}).get("wall", 0.0) for r in rs)
        sites = len({r["site"] for r in rs})
        total.update(
            sites=sites,
            n=len(rs),
            k=k,
            e=c["equivalent"],
            s=c["survived"],
            z=c["no tests"],
            secs=secs,
        )
        lines.append(
            f"| {module}.py | {sites} | {len(rs)} | {k} | {c['equivalent']} | "
            f"{c['survived']} | {c['no tests']} | {secs:.0f} s |"
        )
    lines.append(
        f"| **total** | {total['sites']} | {total['n']} | {total['k']} | {total['e']} | "
        f"{total['s']} | {total['z']} | {total['secs']:.0f} s |"
    )
    lines += ["", "*run time*: the children's wall time summed (one worker's worth).", ""]
    lines += [
        "| comparison | function | source | mutants | killed by |",
        "| --- | --- | --- | --- | --- |",
    ]
    by_site: dict[str, list[dict]] = defaultdict(list)
    for r in table:
        by_site[r["site"]].append(r)
    for site, rs in by_site.items():
        module, function, line, _col = site.split(":")
        marks = []
        for r in rs:
            sym = {"killed": "✓", "timeout": "⏱", "crash": "✗", "equivalent": "≡"}.get(
                r["result"], "**survived**" if r["result"] == "survived" else r["result"]
            )
            marks.append(f"`{_esc(r['change'])}` {sym}")
        killers = Counter(((r["run"] or {}).get("test")) for r in rs if r["result"] in KILLED)
        who = ", ".join(
            f"{_short(t)}" + (f" ×{n}" if n > 1 else "") for t, n in killers.most_common()
        )
        lines.append(
            f"| {module}.py:{line} | `{function}` | `{_esc(rs[0]['original'])[:120]}` | "
            f"{'; '.join(marks)} | {who} |"
        )
    lines += ["", "✓ killed, ⏱ timeout, ✗ crash (both count as killed), ≡ equivalent.", ""]
    lines += ["### Survivors and equivalents", ""]
    lines += ["| mutant | mutated | result | kind | why |", "| --- | --- | --- | --- | --- |"]
    for r in table:
        if r["result"] in KILLED:
            continue
        eq = r["equivalent"] or {}
        lines.append(
            f"| `{r['id']}` | `{_esc(r['mutated'])[:120]}` | {r['result']} | "
            f"{eq.get('kind', '')} | {_esc(eq.get('reason', ''))} |"
        )
    return "\n".join(lines) + "\n"
