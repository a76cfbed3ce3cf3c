"""Sample bundles: host trees of dolmen's own that ``dolmen demo NAME DIR`` writes, so the
README's tour runs on a machine without a GPU (``dolmen validate --from DIR``).

A sample is a folder ``samples/<name>/`` with ``sample.toml`` (a description, an optional
``base`` sample, the driver and CUDA versions, ``[[pci]]`` functions and ``[cpu]`` as
``build`` writes them, ``[[fault]]`` changes of one GPU, ``[[edit]]`` regex edits,
``[links]`` the symbolic links to make, path = target: a wheel cannot hold links, so the
package holds none) and ``tree/``: files copied over the built tree. The GPUs'
``nvidia-smi -q -x`` is rendered (``nvsmi_xml``) from the NVIDIA 3D controllers of
``[[pci]]``. Nothing here is a recording
of someone else's machine: those stay in ../shared/recordings, outside the package.
"""

from __future__ import annotations

import shutil
from importlib.resources import files
from pathlib import Path
from typing import Any

from dolmen.compat import tomllib
from dolmen.demo.build import apply_edit, write_cpus, write_pci
from dolmen.demo.nvsmi_xml import render
from dolmen.errors import InputError
from dolmen.host.command import command_key

SAMPLES = Path(str(files("dolmen.demo").joinpath("samples")))
_XML_KEY = command_key(("nvidia-smi", "-q", "-x"))
_GPU_CLASSES = ("0x030200", "0x030000")


def names() -> list[str]:
    """Every sample bundle, by name."""
    return sorted(p.name for p in SAMPLES.iterdir() if (p / "sample.toml").is_file())


def describe(name: str) -> str:
    """A sample's description (its first sentence is what ``dolmen demo`` lists)."""
    return str(spec(name)["description"])


def spec(name: str) -> dict[str, Any]:
    """A sample's sample.toml; InputError naming the samples for an unknown name."""
    path = SAMPLES / name / "sample.toml"
    if "/" in name or not path.is_file():
        raise InputError(
            f"no sample bundle named {name!r}",
            hint="valid samples: " + ", ".join(names()),
        )
    with open(path, "rb") as f:
        return tomllib.load(f)


def build_sample(name: str, dest: Path) -> Path:
    """Write sample ``name`` (and its bases) into folder ``dest``; returns ``dest``."""
    s = _merged(name)
    dest.mkdir(parents=True, exist_ok=True)
    for fn in s["pci"]:
        write_pci(dest, fn)
    if s.get("cpu"):
        write_cpus(dest, s["cpu"])
    for own in s["trees"]:
        shutil.copytree(own, dest, symlinks=True, dirs_exist_ok=True)
    for path, target in s["links"].items():
        _link(dest, path, target)
    gpus = [
        {"bus_id": "0000" + fn["bdf"].upper()}
        for fn in s["pci"]
        if fn.get("vendor", "0x10de") == "0x10de" and fn["class"] in _GPU_CLASSES
    ]
    for fault in s["fault"]:
        gpus[int(fault["gpu"])].update({k: v for k, v in fault.items() if k != "gpu"})
    if gpus:
        commands = dest / "commands"
        commands.mkdir(exist_ok=True)
        (commands / _XML_KEY).write_text(render(gpus, s["driver"], s["cuda"]))
    for edit in s["edit"]:
        apply_edit(dest, edit)
    return dest


def _link(dest: Path, path: str, target: str) -> None:
    """``dest/path`` a symbolic link to ``target`` (relative, inside the tree): the
    ``[links]`` of a sample, which the package cannot hold as links (wheels have none)."""
    link = dest / path
    if ".." in Path(path).parts or path.startswith("/") or target.startswith("/"):
        raise InputError(f"sample link {path} -> {target}: not relative inside the tree")
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _merged(name: str) -> dict[str, Any]:
    """A sample with its bases: a base's lists come first, its scalars and tables are
    overridden (``links``: a sample's own entries over its base's)."""
    s = spec(name)
    empty: dict[str, Any] = {"pci": [], "fault": [], "edit": [], "trees": [], "links": {}}
    base = _merged(s["base"]) if "base" in s else empty
    skip = ("pci", "fault", "edit", "links")
    merged = {**base, **{k: v for k, v in s.items() if k not in skip}}
    for key in ("pci", "fault", "edit"):
        merged[key] = [*base[key], *s.get(key, [])]
    merged["links"] = {**base["links"], **s.get("links", {})}
    own = SAMPLES / name / "tree"
    merged["trees"] = [*base["trees"], *([own] if own.is_dir() else [])]
    return merged
