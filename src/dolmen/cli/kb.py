"""``dolmen kb``: query the knowledge base (CUDA drivers, GPU models, NGC releases, XIDs).

Every answer names its source; figures the research notes did not check are
marked "unverified". Unknown names exit 2 with one line naming the valid choices.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import click

from dolmen.errors import UsageError

if TYPE_CHECKING:
    from dolmen.kb import KnowledgeBase
    from dolmen.kb.cuda import CudaTable, ToolkitRelease
    from dolmen.kb.gpus import GpuModel
    from dolmen.kb.ngc import NgcRelease

_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@click.group()
def kb() -> None:
    """Query the knowledge base: CUDA toolkit drivers, GPU models, NGC releases, XIDs."""


def _kb() -> KnowledgeBase:
    from dolmen.kb import load_kb

    return load_kb()


def _emit_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


def _rows(rows: Sequence[Sequence[str]]) -> None:
    """Print aligned columns (the first row is the header)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def _fields(pairs: Iterable[tuple[str, Any]]) -> None:
    """Print "label  value" lines, skipping values that are None."""
    shown = [(k, v) for k, v in pairs if v is not None and v != ""]
    width = max(len(k) for k, _ in shown)
    for k, v in shown:
        click.echo(f"  {k.ljust(width)}  {v}")


def _choices(names: Sequence[str], limit: int = 40) -> str:
    head = ", ".join(names[:limit])
    return head + (f" (and {len(names) - limit} more)" if len(names) > limit else "")


def _flag(verified: bool, unverified: Sequence[str], key: str | None = None) -> str:
    if verified or (key is not None and unverified and key not in unverified):
        return ""
    return " (unverified)"


# --- cuda ------------------------------------------------------------------------------


@kb.command()
@click.argument("version", required=False)
@_JSON
def cuda(version: str | None, as_json: bool) -> None:
    """Minimum Linux driver of a CUDA toolkit (all of them without VERSION)."""
    table = _kb().cuda
    if version is None:
        if as_json:
            _emit_json(
                {
                    "schema": "dolmen.kb.cuda/1",
                    "toolkits": [_release_doc(r, table) for r in table.releases],
                    "families": [_family_doc(table, m) for m in sorted(table.families)],
                    "rules": [
                        {"id": r.id, "text": r.text, "source": r.source, "verified": r.verified}
                        for r in table.rules
                    ],
                }
            )
            return
        rows = [["CUDA", "versions", "min driver"]]
        rows += [[r.label, ", ".join(r.versions), str(r.min_driver)] for r in table.releases]
        _rows(rows)
        click.echo("")
        for major in sorted(table.families, reverse=True):
            click.echo(_family_line(table, major))
        for rule in table.rules:
            click.echo(f"- {rule.text}{_flag(rule.verified, ())}")
        click.echo(f"source: {table.releases[0].source}")
        return
    release = table.release(version)
    if release is None:
        raise UsageError(
            f"unknown CUDA version {version!r}; known versions: {_choices(table.minor_versions())}"
        )
    if as_json:
        _emit_json({"schema": "dolmen.kb.cuda.toolkit/1", **_release_doc(release, table)})
        return
    click.echo(f"CUDA {release.label} ({', '.join(release.versions)})")
    major = int(release.versions[0].split(".")[0])
    _fields(
        [
            ("minimum Linux driver", f"{release.min_driver}{_flag(release.verified, ())}"),
            ("compat family", _family_line(table, major) if major in table.families else None),
            ("source", release.source),
        ]
    )


def _release_doc(r: ToolkitRelease, table: CudaTable) -> dict[str, Any]:
    major = int(r.versions[0].split(".")[0])
    fam = table.families.get(major)
    return {
        "label": r.label,
        "versions": list(r.versions),
        "min_driver": str(r.min_driver),
        "family_min_driver": None if fam is None else str(fam.min_driver),
        "source": r.source,
        "verified": r.verified,
    }


def _family_doc(table: CudaTable, major: int) -> dict[str, Any]:
    fam = table.families[major]
    below = fam.minor_compat_below
    return {
        "major": major,
        "min_driver": str(fam.min_driver),
        "minor_compat_below": None if below is None else str(below),
        "note": fam.note,
        "source": fam.source,
        "verified": fam.verified,
    }


def _family_line(table: CudaTable, major: int) -> str:
    fam = table.families[major]
    upper = (
        f", minor-version range below {fam.minor_compat_below}" if fam.minor_compat_below else ""
    )
    return f"{major}.x family: driver >= {fam.min_driver}{upper}. {fam.note}".rstrip()


@kb.command("check-driver")
@click.argument("driver")
@click.option("--cuda", "toolkit", required=True, metavar="X.Y", help="CUDA toolkit version.")
@_JSON
def check_driver(driver: str, toolkit: str, as_json: bool) -> None:
    """Is DRIVER enough for applications built with CUDA X.Y, and why.

    Exit 0 when it is (natively or by minor-version compatibility), 1 when the
    driver is too old, 2 when the driver or toolkit is not understood.
    """
    from dolmen.cli.main import exit_with
    from dolmen.kb.cuda import CompatMode, DriverVersion, parse_toolkit

    table = _kb().cuda
    if DriverVersion.parse(driver) is None:
        raise UsageError(
            f"{driver!r} is not a driver version; expected digits and dots like 535.54.03"
        )
    if parse_toolkit(toolkit) is None:
        raise UsageError(
            f"{toolkit!r} is not a CUDA version; known versions: {_choices(table.minor_versions())}"
        )
    verdict = table.check(toolkit, driver)
    if verdict.mode is CompatMode.UNKNOWN:
        raise UsageError(verdict.why, hint="`dolmen kb cuda` lists the known toolkits")
    if as_json:
        _emit_json(
            {
                "schema": "dolmen.kb.check_driver/1",
                "driver": verdict.driver,
                "cuda": verdict.toolkit,
                "ok": verdict.ok,
                "mode": verdict.mode.value,
                "why": verdict.why,
                "required": verdict.required,
                "family_min_driver": verdict.family_min,
            }
        )
    else:
        click.echo(f"{'ok' if verdict.ok else 'not enough'} ({verdict.mode.value}): {verdict.why}")
    if not verdict.ok:
        exit_with(1)


# --- gpu -------------------------------------------------------------------------------


@kb.command()
@click.argument("name", required=False)
@_JSON
def gpu(name: str | None, as_json: bool) -> None:
    """Published figures of a GPU model: an id, an nvidia-smi name, or part of a name."""
    catalogue = _kb().gpus
    if name is None:
        models: list[GpuModel] = list(catalogue.models)
        if not as_json:
            rows = [["id", "name", "bf16 TF", "mem GB", "GB/s", "NVLink GB/s", "TDP W"]]
            rows += [
                [
                    m.id,
                    m.name,
                    _num(m.half_precision_tflops),
                    _num(m.memory_gb),
                    _num(m.memory_bandwidth_gbs),
                    _num(m.nvlink_bandwidth_gbs),
                    _num(m.tdp_w) + ("" if m.verified else " *"),
                ]
                for m in models
            ]
            _rows(rows)
            click.echo("* some figures unverified; `dolmen kb gpu ID` says which")
            return
    else:
        models = catalogue.find(name)
        if not models:
            raise UsageError(
                f"unknown GPU {name!r}; valid ids: {_choices(catalogue.ids())}",
                hint="a full nvidia-smi product name also works",
            )
    if as_json:
        from dolmen.facts import to_jsonable

        _emit_json({"schema": "dolmen.kb.gpus/1", "gpus": [to_jsonable(m) for m in models]})
        return
    for i, m in enumerate(models):
        if i:
            click.echo("")
        _show_gpu(m)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}"


def _show_gpu(m: GpuModel) -> None:
    def fig(key: str, value: float | None, unit: str) -> str | None:
        if value is None:
            return None
        return f"{value:g} {unit}{_flag(m.verified, m.unverified, key)}"

    click.echo(f"{m.name} [{m.id}]  {m.architecture}, compute capability {m.compute_capability}")
    mem = None
    if m.memory_gb is not None:
        mem = f"{m.memory_gb:g} GB {m.memory_type or ''}".rstrip()
    nvlink = None
    if m.nvlink_bandwidth_gbs is not None:
        links = f"{m.nvlink_links} links, " if m.nvlink_links else ""
        nvlink = f"{links}{m.nvlink_bandwidth_gbs:g} GB/s"
        nvlink += _flag(m.verified, m.unverified, "nvlink_bandwidth_gbs")
    pcie = None
    if m.pcie_gen is not None:
        pcie = f"Gen{m.pcie_gen} x{m.pcie_width}" + _flag(m.verified, m.unverified, "pcie_gen")
    _fields(
        [
            ("form factor", m.form_factor),
            ("bf16 dense", fig("bf16_tflops", m.bf16_tflops, "TFLOPS")),
            ("fp16 dense", fig("fp16_tflops", m.fp16_tflops, "TFLOPS")),
            ("fp8 dense", fig("fp8_tflops", m.fp8_tflops, "TFLOPS")),
            ("fp32", fig("fp32_tflops", m.fp32_tflops, "TFLOPS")),
            ("memory", mem),
            ("bandwidth", fig("memory_bandwidth_gbs", m.memory_bandwidth_gbs, "GB/s")),
            ("NVLink", nvlink),
            ("PCIe", pcie),
            ("TDP", fig("tdp_w", m.tdp_w, "W")),
            ("nvidia-smi names", " | ".join(m.patterns)),
            ("note", m.note),
            ("source", m.source),
        ]
    )


# --- ngc -------------------------------------------------------------------------------


@kb.command()
@click.argument("release", required=False)
@_JSON
def ngc(release: str | None, as_json: bool) -> None:
    """What an NGC PyTorch container release ships (all releases without RELEASE)."""
    base = _kb()
    table = base.ngc
    if release is None:
        if as_json:
            releases = [_ngc_doc(r, base) for r in table.releases]
            _emit_json({"schema": "dolmen.kb.ngc/1", "releases": releases})
            return
        rows = [["release", "PyTorch", "CUDA", "cuDNN", "NCCL", "TensorRT", "Ubuntu", "driver"]]
        rows += [
            [
                r.release + ("" if r.verified else " *"),
                r.pytorch or "-",
                r.cuda or "-",
                r.cudnn or "-",
                r.nccl or "-",
                r.tensorrt or "-",
                r.ubuntu or "-",
                r.driver_branch or "-",
            ]
            for r in table.releases
        ]
        _rows(rows)
        click.echo("* some cells unverified; `dolmen kb ngc RELEASE` says which")
        return
    found = table.get(release)
    if found is None:
        raise UsageError(
            f"unknown NGC release {release!r}; known releases: {_choices(table.names())}"
        )
    if as_json:
        _emit_json({"schema": "dolmen.kb.ngc.release/1", **_ngc_doc(found, base)})
        return
    r = found
    mind = table.min_driver(r, base.cuda)

    def cell(key: str, value: str | None) -> str | None:
        return None if value is None else value + _flag(r.verified, r.unverified, key)

    click.echo(f"NGC PyTorch {r.release}  {r.image}")
    _fields(
        [
            ("PyTorch", cell("pytorch", r.pytorch)),
            ("CUDA", cell("cuda", r.cuda)),
            ("cuDNN", cell("cudnn", r.cudnn)),
            ("NCCL", cell("nccl", r.nccl)),
            ("TensorRT", cell("tensorrt", r.tensorrt)),
            ("Ubuntu", cell("ubuntu", r.ubuntu)),
            ("driver branch", cell("driver", r.driver_branch)),
            ("CUDA min driver", None if mind is None else f"{mind} (CUDA release notes)"),
            ("data-center compat", ", ".join(r.datacenter_compat_drivers) or None),
            ("note", r.note),
            ("source", r.source),
        ]
    )


def _ngc_doc(r: NgcRelease, base: KnowledgeBase) -> dict[str, Any]:
    from dolmen.facts import to_jsonable

    doc: dict[str, Any] = to_jsonable(r)
    mind = base.ngc.min_driver(r, base.cuda)
    doc["image"] = r.image
    doc["cuda_min_driver"] = None if mind is None else str(mind)
    return doc


# --- xid -------------------------------------------------------------------------------


@kb.command()
@click.argument("number", required=False)
@click.option("--sxid", is_flag=True, help="Look up an NVSwitch SXid instead of a GPU Xid.")
@_JSON
def xid(number: str | None, sxid: bool, as_json: bool) -> None:
    """What an NVIDIA Xid (or NVSwitch SXid) means and what to do (all without N)."""
    from dolmen.facts import to_jsonable

    catalogue = _kb().xids
    table = catalogue.sxids if sxid else catalogue.xids
    what = "SXid" if sxid else "Xid"
    if number is None:
        if as_json:
            rows = [to_jsonable(e) for _, e in sorted(table.items())]
            _emit_json({"schema": "dolmen.kb.xids/1", "entries": rows})
            return
        rows = [[what.lower(), "severity", "action", "meaning"]]
        rows += [[str(n), e.severity, e.action, e.meaning] for n, e in sorted(table.items())]
        _rows(rows)
        return
    entry = table.get(int(number)) if number.isdigit() else None
    if entry is None:
        known = [str(n) for n in sorted(table)]
        raise UsageError(f"unknown {what} {number!r}; known {what}s: {_choices(known, 200)}")
    if as_json:
        _emit_json({"schema": "dolmen.kb.xid/1", **to_jsonable(entry)})
        return
    click.echo(f"{what} {number}  {entry.name}")
    _fields(
        [
            ("meaning", entry.meaning),
            ("severity", entry.severity + ("" if entry.verified else " (unverified)")),
            ("action", entry.action),
            ("note", entry.note),
            ("source", entry.source),
        ]
    )
