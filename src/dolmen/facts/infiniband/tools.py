"""The port listings of the rdma-core / infiniband-diags tools: ibstat, ibstatus, ibv_devinfo.

Each parser takes the tool's text and returns the ports it shows; lines it does not
know are skipped, a device block without a port section gives no port. A tool can
fail half-way after printing some devices (``ibpanic: [1400444] main: stat of IB
device 'mlx5_8' failed: No such file or directory``, exit 255: the HCA vanished
between listing and reading); ``lost_devices`` finds the devices such lines name.

Formats (rdma-core): ``ibstat`` prints ``CA 'mlx5_0'`` blocks with ``Port N:``
sections of ``Key: value``; ``ibstatus`` prints ``Infiniband device 'mlx5_0' port 1
status:`` blocks with sysfs' own values (``4: ACTIVE``, ``200 Gb/sec (4X HDR)``);
``ibv_devinfo`` prints ``hca_id:\tmlx5_0`` blocks, ``port:\t1`` sections, states as
``PORT_ACTIVE (4)`` and, with ``-v``, ``active_width: 4X (2)``, ``active_speed: 50.0
Gbps (64)`` (per lane) and ``phys_state: LINK_UP (5)``.
"""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.facts.infiniband.model import IbPort
from dolmen.facts.infiniband.parse import (
    normalise_guid,
    parse_phys_state,
    parse_rate,
    parse_state,
    parse_width,
)
from dolmen.facts.reading import parse_hex
from dolmen.frozen.regex import pattern

_CA = pattern(r"CA '([^']+)'")
_PORT = pattern(r"Port (\d+):")

_LOST = pattern(r"IB device '([^'\s]+)' failed(?::\s*(.*))?")


def lost_devices(text: str) -> dict[str, str]:
    """Devices an infiniband-diags tool says it could not read, with its line."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _LOST.search(line)
        if m:
            out.setdefault(m.group(1), line.strip()[:200])
    return out


def _int(text: str | None) -> int | None:
    t = (text or "").strip()
    return int(t) if t.isascii() and t.isdigit() else None


def parse_ibstat(text: str) -> list[IbPort]:
    """``ibstat`` output: ``CA 'mlx5_0'`` blocks with ``Port N:`` sections; junk is skipped."""
    ports: list[IbPort] = []
    ca: dict[str, str] = {}
    port: dict[str, str] | None = None

    def flush() -> None:
        if port is not None and "_port" in port:
            ports.append(_ibstat_port(ca, port))

    for raw in text.splitlines():
        line = raw.strip()
        m = _CA.fullmatch(line)
        if m:
            flush()
            ca, port = {"_name": m.group(1)}, None
            continue
        if not ca:
            continue
        m = _PORT.fullmatch(line)
        if m:
            flush()
            port = {"_port": m.group(1)}
            continue
        key, sep, value = line.partition(":")
        if sep:
            (port if port is not None else ca)[key.strip()] = value.strip()
    flush()
    return ports


def _ibstat_port(ca: Mapping[str, str], port: Mapping[str, str]) -> IbPort:
    return IbPort(
        device=ca["_name"],
        port=int(port["_port"]),
        state=parse_state(port.get("State")),
        phys_state=parse_phys_state(port.get("Physical state")),
        rate_gbps=parse_rate(port.get("Rate")),
        rate_text=port.get("Rate"),
        link_layer=port.get("Link layer") or None,
        lid=_int(port.get("Base lid")),
        fw_version=ca.get("Firmware version") or None,
        hca_type=ca.get("CA type") or None,
        node_guid=normalise_guid(ca.get("Node GUID")),
        source="ibstat",
    )


_IBSTATUS_HEAD = pattern(r"Infiniband device '([^']+)' port (\d+) status:")


def parse_ibstatus(text: str) -> list[IbPort]:
    """``ibstatus`` output: one block per port, values as sysfs writes them."""
    blocks: list[tuple[str, int, dict[str, str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        m = _IBSTATUS_HEAD.fullmatch(line)
        if m:
            blocks.append((m.group(1), int(m.group(2)), {}))
            continue
        key, sep, value = line.partition(":")
        if sep and blocks:
            blocks[-1][2].setdefault(key.strip(), value.strip())
    return [
        IbPort(
            device=dev,
            port=num,
            state=parse_state(v.get("state")),
            phys_state=parse_phys_state(v.get("phys state")),
            rate_gbps=parse_rate(v.get("rate")),
            rate_text=v.get("rate") or None,
            link_layer=v.get("link_layer") or None,
            lid=parse_hex(v.get("base lid")),
            source="ibstatus",
            active_width=parse_width(v.get("rate")),
        )
        for dev, num, v in blocks
    ]


def parse_ibv_devinfo(text: str) -> list[IbPort]:
    """``ibv_devinfo`` (or ``-v``) output: ``hca_id:`` blocks with ``port:`` sections."""
    ports: list[IbPort] = []
    hca: dict[str, str] = {}
    port: dict[str, str] | None = None

    def flush() -> None:
        if port is not None and _int(port.get("port")):
            ports.append(_devinfo_port(hca, port))

    for raw in text.splitlines():
        key, sep, value = raw.strip().partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            flush()
            hca, port = {"hca_id": value}, None
        elif key == "port" and hca:
            flush()
            port = {"port": value}
        elif hca:
            (port if port is not None else hca).setdefault(key, value)
    flush()
    return [p for p in ports if p.device]


# ibv_devinfo's active_speed is per lane: "50.0 Gbps (64)" on HDR; the rate is lanes x speed.
_SPEED = pattern(r"(\d+(?:\.\d+)?)\s*Gbps")
_LANES = pattern(r"(\d+)X\b")


def _devinfo_port(hca: Mapping[str, str], port: Mapping[str, str]) -> IbPort:
    width = _LANES.search(port.get("active_width", ""))
    speed = _SPEED.search(port.get("active_speed", ""))
    rate = float(width.group(1)) * float(speed.group(1)) if width and speed else None
    part = _int(hca.get("vendor_part_id"))
    lanes = f"{width.group(1)}X" if width else None
    return IbPort(
        device=hca.get("hca_id", ""),
        port=int(port["port"]),
        state=parse_state(port.get("state")),
        phys_state=parse_phys_state(port.get("phys_state")),
        rate_gbps=rate,
        rate_text=f"{rate:g} Gb/sec ({lanes})" if rate is not None else None,
        link_layer=port.get("link_layer") or None,
        lid=_int(port.get("port_lid")),
        fw_version=hca.get("fw_ver") or None,
        hca_type=f"MT{part}" if part is not None else None,
        board_id=hca.get("board_id") or None,
        node_guid=normalise_guid(hca.get("node_guid")),
        source="ibv_devinfo",
        active_width=lanes,
    )
