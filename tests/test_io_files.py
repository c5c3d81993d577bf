"""Files attncert writes and reads (issue 19, item 5): permissions follow the umask,
unwritable paths are refused before anything is written, plot files have the format
their extension names, and JSON input is bounded in depth."""

from __future__ import annotations

import os
import stat

import pytest

from attncert import limits
from attncert.errors import InputError, SpecError
from attncert.figures import FORMATS, figure_format, save_figure
from attncert.io import (
    check_output_dir,
    check_output_path,
    json_depth_exceeds,
    parse_json,
    read_json,
    write_atomic,
    write_json,
)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_files_follow_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    path = write_atomic(tmp_path / "new.json", "{}\n")
    assert _mode(path) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["new.json"]  # no temporary file left


def test_a_replaced_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    path = tmp_path / "kept.json"
    path.write_text("old")
    os.chmod(path, 0o640)
    write_json(path, {"new": 1})
    assert _mode(path) == 0o640 and read_json(path) == {"new": 1}


def test_the_cli_writes_with_the_umask(tmp_path, umask, monkeypatch, capsys):
    from attncert.cli.main import main

    umask(0o022)
    monkeypatch.chdir(tmp_path)
    assert main(["zoo", "export", "anbn", "sub/anbn.json"]) == 0
    assert _mode(tmp_path / "sub" / "anbn.json") == 0o644


def test_unwritable_paths_are_refused_before_writing(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    for bad, reason in (
        (tmp_path / "d", "is a directory"),
        (tmp_path / "f" / "x.json", "is a file"),
        (tmp_path / "f" / "a" / "b" / "x.json", "is a file"),
        ("", "not a file name"),
    ):
        with pytest.raises(InputError, match=reason):
            check_output_path(bad, "-o")
        with pytest.raises(InputError, match=reason):
            write_atomic(bad, "x")
    with pytest.raises(InputError, match="not a directory"):
        check_output_dir(tmp_path / "f", "--smt2-dir")
    check_output_path(tmp_path / "new" / "deeper" / "x.json")  # creatable: fine
    check_output_dir(tmp_path / "newdir")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "f"]  # nothing was created


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_read_only_directory_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        with pytest.raises(InputError, match="not writable"):
            write_atomic(ro / "x.json", "x")
    finally:
        os.chmod(ro, 0o700)


def test_json_depth_is_bounded_without_recursion(tmp_path):
    limit = limits.MAX_JSON_DEPTH
    assert not json_depth_exceeds("[" * limit + "]" * limit)
    assert json_depth_exceeds("[" * (limit + 1) + "]" * (limit + 1))
    assert not json_depth_exceeds('["' + "[" * 10_000 + '"]')  # brackets inside a string
    assert not json_depth_exceeds(r'["\"[[[[", {"a": "}}}"}]', limit=2)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    with pytest.raises(SpecError, match=f"more than {limit} levels"):
        read_json(deep)
    assert parse_json("[" * limit + "]" * limit, "x")  # the limit itself is accepted
    with pytest.raises(SpecError, match="unreadable JSON value"):
        parse_json("9" * 5000, "big.json")
    with pytest.raises(SpecError, match="line 1, column 2"):
        parse_json("[,]", "bad.json")


@pytest.mark.slow
def test_plot_formats_follow_the_extension(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    magic = {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<?xml", "eps": b"%!PS", "jpg": b"\xff\xd8"}
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    try:
        for fmt in FORMATS:  # every advertised format really renders
            path = save_figure(fig, tmp_path / f"plot.{fmt.upper()}")
            assert path.stat().st_size > 100, fmt
            if fmt in magic:
                assert path.read_bytes().startswith(magic[fmt]), fmt
    finally:
        plt.close(fig)
    assert set(magic) <= set(FORMATS)
    for bad in ("plot.xyz", "plot", "plot.png.bak"):
        with pytest.raises(InputError, match="format is unknown"):
            figure_format(bad)


def test_sensitivity_plot_is_a_pdf_when_asked(tmp_path, monkeypatch, capsys):
    from attncert.cli.main import main

    monkeypatch.chdir(tmp_path)
    code = main(["sensitivity", "zoo:soft_parity", "--n", "4,6", "--plot", "p.pdf", "--json"])
    assert code == 0
    assert (tmp_path / "p.pdf").read_bytes().startswith(b"%PDF")


def test_doctests():
    import doctest
    import importlib

    for name in (
        "attncert.limits",
        "attncert.cli.args",
        "attncert.figures",
        "attncert.logic.printer",
    ):
        result = doctest.testmod(importlib.import_module(name))
        assert result.attempted > 0 and result.failed == 0, name
