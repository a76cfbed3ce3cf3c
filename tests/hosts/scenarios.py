"""Scenario host trees: committed data, real recordings referenced (never copied), edits.

A scenario is a folder ``tests/hosts/<name>/`` with:

- ``scenario.toml``: a description, an optional ``base`` scenario or ``demo`` sample
  bundle (src/dolmen/demo/samples) it starts from,
  ``[recordings]`` (host path -> a file or folder of ../shared/recordings, copied in
  when the tree is built), ``[[pci]]`` functions to write under sys/bus/pci (with the
  device links a real sysfs has), ``[[edit]]`` regex edits of built files (optionally
  inside the N-th ``<gpu>`` block of an nvidia-smi XML), ``remove`` paths, and
  ``[expect]`` (the verdict and the checks that must fail, warn or be unknown), and an
  optional ``[config]``: the site's dolmen.toml sections the verdict is judged with
  (``[config.validate] expected_gpus = 0``); a scenario does not inherit its base's;
- ``tree/``: files of our own, copied over the built tree;
- ``expected.json``: the golden ``dolmen validate --json`` document (normalised).

``build(name, dest)`` materialises a scenario into ``dest``; tests and benchmarks
build into temporary folders, so the repository holds no copy of a recording.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from dolmen.compat import tomllib
from dolmen.config import Config
from dolmen.demo import build_sample
from dolmen.demo.build import apply_edit, write_cpus, write_pci

HOSTS = Path(__file__).resolve().parent
RECORDINGS = HOSTS.parents[2] / "shared" / "recordings"


class MissingRecording(pytest.skip.Exception):  # type: ignore[misc,name-defined]
    """The scenario references a recording that is not on this machine: a test that builds
    it is skipped with that reason (../shared/recordings is absent), as conftest's
    ``recording()`` does."""


def names() -> list[str]:
    """Every scenario, by folder name."""
    return sorted(p.name for p in HOSTS.iterdir() if (p / "scenario.toml").is_file())


def spec(name: str) -> dict[str, Any]:
    """A scenario's scenario.toml."""
    with open(HOSTS / name / "scenario.toml", "rb") as f:
        return tomllib.load(f)


def config(name: str) -> Config:
    """The site configuration scenario ``name`` is validated with (its ``[config]``)."""
    return Config(sections=spec(name).get("config", {}))


def build(name: str, dest: Path) -> Path:
    """Materialise scenario ``name`` (and its bases) into ``dest``; returns ``dest``."""
    s = spec(name)
    dest.mkdir(parents=True, exist_ok=True)
    if "base" in s:
        build(s["base"], dest)
    if "demo" in s:  # a sample bundle of the package as the starting tree
        build_sample(s["demo"], dest)
    for host_path, rec in s.get("recordings", {}).items():
        src = RECORDINGS / rec
        if not src.exists():
            raise MissingRecording(f"{name}: recording {rec} is absent from {RECORDINGS}")
        target = dest / host_path
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, symlinks=True)
        else:
            shutil.copyfile(src, target)
    for fn in s.get("pci", []):
        write_pci(dest, fn)
    if "cpu" in s:
        write_cpus(dest, s["cpu"])
    own = HOSTS / name / "tree"
    if own.is_dir():
        shutil.copytree(own, dest, symlinks=True, dirs_exist_ok=True)
    for rel in s.get("empty_dirs", []):  # git keeps no empty folder; a snapshot has many
        (dest / rel).mkdir(parents=True, exist_ok=True)
    for edit in s.get("edit", []):
        apply_edit(dest, edit)
    for rel in s.get("remove", []):
        target = dest / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
    return dest
