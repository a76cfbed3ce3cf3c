"""``dolmen demo``: every sample bundle builds, reads as the host it describes, and is
written as a new folder or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dolmen import demo
from dolmen.checks.model import Level, Status
from dolmen.checks.suite import validate
from dolmen.cli.main import main
from dolmen.compat import tomllib
from dolmen.config import Config
from dolmen.errors import InputError
from dolmen.host import open_host

# What each sample shows, from its description: the verdict and the checks that must fail
# on which GPU. A new sample adds its row here (the last test holds the table complete).
EXPECTED: dict[str, tuple[str, set[tuple[str, str]]]] = {
    "hgx-h100": ("healthy", set()),
    "hgx-h100-xid79": (
        "unhealthy",
        {
            ("gpu.lost", "gpu:00000000:86:00.0"),
            ("gpu.fell_off_bus", "gpu:00000000:86:00.0"),
            ("gpu.xid", "gpu:00000000:86:00.0"),
        },
    ),
    "hgx-h100-remap": (
        "unhealthy",
        {
            ("gpu.row_remap", "gpu:00000000:A8:00.0"),
            ("gpu.ecc.volatile_uncorrectable", "gpu:00000000:A8:00.0"),
            ("gpu.xid", "gpu:00000000:A8:00.0"),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_verdict(name: str, tmp_path: Path) -> None:
    status, fails = EXPECTED[name]
    with open_host(demo.build_sample(name, tmp_path / name)) as host:
        v = validate(host, level=Level.STANDARD, config=Config())
    assert v.health.value == status
    assert {(f.check, f.subject) for f in v.findings if f.status is Status.FAIL} == fails
    assert not [f for f in v.findings if f.status is Status.ERROR]


def test_every_sample_has_an_expectation() -> None:
    assert set(demo.names()) == set(EXPECTED)


def test_samples_ship_in_the_package() -> None:
    """pyproject's package-data globs take every file of the samples, dot-files included
    (git keeps empty folders through .keep files the trees rely on)."""
    root = Path(__file__).resolve().parents[2]
    with open(root / "pyproject.toml", "rb") as f:
        globs = tomllib.load(f)["tool"]["setuptools"]["package-data"]["dolmen"]
    assert {"demo/samples/**/*", "demo/samples/**/.*"} <= set(globs)
    assert any(p.name == ".keep" for p in demo.SAMPLES.rglob(".keep"))


def test_samples_hold_no_link_and_the_built_tree_has_them(tmp_path: Path) -> None:
    """A wheel cannot hold a symbolic link: ``pip install .`` wrote the libraries' links as
    empty files, and the healthy sample read as undecided (the cuDNN and NCCL versions
    come from their link targets). The links are ``[links]`` of sample.toml, made at build."""
    assert [p for p in demo.SAMPLES.rglob("*") if p.is_symlink()] == []
    tree = demo.build_sample("hgx-h100", tmp_path / "t")
    lib = tree / "lib/x86_64-linux-gnu"
    assert os.readlink(lib / "libcudnn.so.9") == "libcudnn.so.9.13.0"
    assert (
        os.readlink(tree / "usr/local/cuda") == "cuda-13.0" and (tree / "usr/local/cuda").is_dir()
    )
    assert (lib / "libcuda.so").resolve() == (lib / "libcuda.so.580.105.08").resolve()


def test_unknown_sample_names_the_valid_ones() -> None:
    with pytest.raises(InputError) as e:
        demo.spec("dgx-b300")
    assert "hgx-h100" in str(e.value.hint)
    with pytest.raises(InputError):
        demo.spec("../hgx-h100")


def test_cli_lists_and_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in EXPECTED)
    out = tmp_path / "node"
    assert main(["demo", "hgx-h100-xid79", str(out)]) == 0
    assert f"dolmen validate --from {out}" in capsys.readouterr().out
    assert main(["validate", "--from", str(out), "--json"]) == 1  # unhealthy
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".dolmen-demo-")]


def test_cli_never_replaces_a_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    existing = tmp_path / "mine"
    existing.mkdir()
    (existing / "notes.txt").write_text("keep me\n")
    assert main(["demo", "hgx-h100", str(existing)]) == 2
    assert (existing / "notes.txt").read_text() == "keep me\n"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert main(["demo", "hgx-h100", str(fifo)]) == 2
    assert main(["demo", "hgx-h100", str(tmp_path / "no" / "such")]) == 2
    assert main(["demo", "nope", str(tmp_path / "x")]) == 2
    assert main(["demo", "hgx-h100"]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "no sample bundle named 'nope'" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "pipe"]
