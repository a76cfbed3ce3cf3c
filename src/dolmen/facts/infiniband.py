"""InfiniBand / RoCE facts: every HCA port with state, rate, link layer, counters, firmware.

Sources: ``sys/class/infiniband/<dev>/{fw_ver,board_id,hca_type,node_guid}`` and
``ports/<n>/{state,phys_state,rate,link_layer,lid}``, ``ports/<n>/counters/*`` (the
PMA counters: symbol_error, link_downed, port_rcv_errors...) and
``ports/<n>/hw_counters/*`` (driver counters: out_of_buffer, rnr_nak_retry_err...);
and ``ibstat`` (tree key ``ibstat``). sysfs is preferred; ibstat runs as well and is
kept as a cross-check (``ibstat`` and ``disagreements``), or stands in for sysfs
when a tree or host has only its output. ibstat can fail half-way (``ibpanic: ...
stat of IB device 'mlx5_8' failed``, exit 255) after printing the other devices:
what it printed is kept and the failure is in ``unread["ibstat"]``.

``ports`` is always a tuple (empty without HCAs): the check framework's
``infiniband`` predicate reads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field

from dolmen.facts.reading import Read, malformed, parse_hex, read_value
from dolmen.frozen import frozen
from dolmen.host import Host, RunStatus
from dolmen.values.busid import sysfs_name

CLASS = "sys/class/infiniband"

# ibstat spells port states as words; sysfs as "4: ACTIVE" (enum ib_port_state).
_IBSTAT_STATES = {
    "active": "ACTIVE",
    "down": "DOWN",
    "initializing": "INIT",
    "init": "INIT",
    "armed": "ARMED",
    "active_defer": "ACTIVE_DEFER",
}
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*Gb/sec")


@frozen
class IbPort:
    """One HCA port (``ib:<device>/<port>``), with its device's identity repeated for checks."""

    device: str  # mlx5_0, mlx5_bond_0, hfi1_0
    port: int
    state: str | None  # ACTIVE, DOWN, INIT, ARMED
    phys_state: str | None  # LinkUp, Polling, Disabled, Sleep, LinkErrorRecovery
    rate_gbps: float | None  # 400.0
    rate_text: str | None  # "400 Gb/sec (4X NDR)" (sysfs), "400" (ibstat)
    link_layer: str | None  # InfiniBand, Ethernet (RoCE)
    lid: int | None = None
    fw_version: str | None = None
    hca_type: str | None = None  # MT4129 = ConnectX-7
    board_id: str | None = None
    node_guid: str | None = None  # 16 lowercase hex digits
    pci_bdf: str | None = None
    counters: Mapping[str, int] = field(default_factory=dict)
    hw_counters: Mapping[str, int] = field(default_factory=dict)
    source: str = "sysfs"  # sysfs or ibstat

    @property
    def subject(self) -> str:
        """The finding subject: ``ib:mlx5_0/1``."""
        return f"ib:{self.device}/{self.port}"


@frozen
class InfinibandFacts:
    """HCA ports. ``unread`` keys: ``<device>/<port>.<field>``, ``<device>.<field>``, ``ibstat``."""

    ports: tuple[IbPort, ...] = ()
    ibstat: tuple[IbPort, ...] = ()  # ibstat's view, when it ran
    disagreements: tuple[str, ...] = ()  # sysfs and ibstat differ (one line each)
    unread: Mapping[str, str] = field(default_factory=dict)


def parse_state(text: str | None) -> str | None:
    """``4: ACTIVE`` (sysfs) or ``Active`` (ibstat) -> ``ACTIVE``."""
    if not text or not text.strip():
        return None
    word = text.split(":", 1)[-1].strip()
    if not re.fullmatch(r"[A-Za-z_]+", word):
        return None
    return _IBSTAT_STATES.get(word.lower(), word.upper())


def parse_phys_state(text: str | None) -> str | None:
    """``5: LinkUp`` (sysfs) or ``LinkUp`` (ibstat) -> ``LinkUp``."""
    if not text or not text.strip():
        return None
    word = text.split(":", 1)[-1].strip()
    return word if re.fullmatch(r"[A-Za-z][A-Za-z ]*", word) else None  # "Phy Test" has a space


def parse_rate(text: str | None) -> float | None:
    """``400 Gb/sec (4X NDR)`` (sysfs) or ``400`` (ibstat) -> 400.0."""
    if text is None:
        return None
    m = _RATE.search(text)
    if m:
        return float(m.group(1))
    t = text.strip()
    return float(t) if re.fullmatch(r"\d+(?:\.\d+)?", t) else None


def normalise_guid(text: str | None) -> str | None:
    """``a088:c203:00ad:eab8`` (sysfs) or ``0xa088c20300adeab8`` (ibstat) -> 16 hex digits."""
    if not text:
        return None
    value = parse_hex(text.replace(":", ""))
    return None if value is None else f"{value:016x}"


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
        m = re.fullmatch(r"CA '([^']+)'", line)
        if m:
            flush()
            ca, port = {"_name": m.group(1)}, None
            continue
        if not ca:
            continue
        m = re.fullmatch(r"Port (\d+):", line)
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
    lid = port.get("Base lid", "")
    return IbPort(
        device=ca["_name"],
        port=int(port["_port"]),
        state=parse_state(port.get("State")),
        phys_state=parse_phys_state(port.get("Physical state")),
        rate_gbps=parse_rate(port.get("Rate")),
        rate_text=port.get("Rate"),
        link_layer=port.get("Link layer") or None,
        lid=int(lid) if lid.isdigit() else None,
        fw_version=ca.get("Firmware version") or None,
        hca_type=ca.get("CA type") or None,
        node_guid=normalise_guid(ca.get("Node GUID")),
        source="ibstat",
    )


COUNTER_MAX = (1 << 64) - 1  # PMA and hw counters are u64 in sysfs


def parse_counters(values: Mapping[str, str]) -> tuple[dict[str, int], list[str]]:
    """Counter files (name -> text) as integers, and the names that are not numbers.

    Devices without a PMA print ``N/A (no PMA)`` in every counter (Intel i40iw).
    """
    counters: dict[str, int] = {}
    bad: list[str] = []
    for name, text in values.items():
        t = text.strip()
        # ASCII digits only ("²".isdigit() is true and int() refuses it), within u64.
        if t.isascii() and t.isdigit() and int(t) <= COUNTER_MAX:
            counters[name] = int(t)
        else:
            bad.append(name)
    return counters, bad


def read_sysfs(host: Host, unread: dict[str, str]) -> list[IbPort]:
    """Every port under ``sys/class/infiniband``."""
    ports: list[IbPort] = []
    for dev in host.listdir(CLASS):
        base = f"{CLASS}/{dev}"
        ident = {
            name: read_value(host, f"{base}/{name}")
            for name in ("fw_ver", "hca_type", "board_id", "node_guid")
        }
        if ident["fw_ver"].text is None:
            unread[f"{dev}.fw_version"] = ident["fw_ver"].reason
        guid = ident["node_guid"].text
        if guid and normalise_guid(guid) is None:
            unread[f"{dev}.node_guid"] = malformed(guid)  # GCM's maps hold "node_guid" here
        link = host.readlink(base) or host.readlink(f"{base}/device") or ""
        bdfs = [p for p in link.split("/") if sysfs_name(p)]
        if not bdfs:
            unread[f"{dev}.pci_bdf"] = "missing (no device link in sysfs)"
        for pname in host.listdir(f"{base}/ports"):
            if not pname.isdigit():
                continue
            ports.append(
                _sysfs_port(host, dev, int(pname), ident, bdfs[-1] if bdfs else None, unread)
            )
    return ports


def _sysfs_port(
    host: Host,
    dev: str,
    num: int,
    ident: Mapping[str, Read],
    bdf: str | None,
    unread: dict[str, str],
) -> IbPort:
    base = f"{CLASS}/{dev}/ports/{num}"
    key = f"{dev}/{num}"
    vals = {n: read_value(host, f"{base}/{n}") for n in ("state", "phys_state", "rate")}
    vals |= {n: read_value(host, f"{base}/{n}") for n in ("link_layer", "lid")}
    state = parse_state(vals["state"].text)
    phys = parse_phys_state(vals["phys_state"].text)
    rate = parse_rate(vals["rate"].text)
    for name, value, r in (
        ("state", state, vals["state"]),
        ("phys_state", phys, vals["phys_state"]),
        ("rate_gbps", rate, vals["rate"]),
    ):
        if value is None:
            unread[f"{key}.{name}"] = r.reason or malformed(r.text or "")
    lid = parse_hex(vals["lid"].text)
    if lid is None and vals["lid"].reason != "missing":
        unread[f"{key}.lid"] = vals["lid"].reason or malformed(vals["lid"].text or "")
    tables: dict[str, dict[str, int]] = {}
    for table in ("counters", "hw_counters"):
        folder = f"{base}/{table}"
        texts = {n: read_value(host, f"{folder}/{n}").text or "" for n in host.listdir(folder)}
        tables[table], bad = parse_counters(texts)
        if bad:
            sample = texts[bad[0]].strip()
            why = f"not supported ({sample})" if sample.startswith("N/A") else malformed(sample)
            unread[f"{key}.{table}"] = f"{why}: {', '.join(sorted(bad)[:5])}" + (
                f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            )
    fw, hca, board = ident["fw_ver"].text, ident["hca_type"].text, ident["board_id"].text
    return IbPort(
        device=dev,
        port=num,
        state=state,
        phys_state=phys,
        rate_gbps=rate,
        rate_text=vals["rate"].text or None,
        link_layer=vals["link_layer"].text or None,
        lid=lid,
        fw_version=fw or None,
        hca_type=hca or None,
        board_id=board or None,
        node_guid=normalise_guid(ident["node_guid"].text),
        pci_bdf=bdf,
        counters=tables["counters"],
        hw_counters=tables["hw_counters"],
    )


def cross_check(sysfs: list[IbPort], ibstat: list[IbPort]) -> tuple[str, ...]:
    """Where ibstat and sysfs disagree about a port (state, phys state, rate, link layer)."""
    out: list[str] = []
    theirs = {(p.device, p.port): p for p in ibstat}
    ours = {(p.device, p.port): p for p in sysfs}
    for k, p in ours.items():
        q = theirs.get(k)
        if q is None:
            out.append(f"{p.subject}: in sysfs, not in ibstat")
            continue
        for name in ("state", "phys_state", "rate_gbps", "link_layer"):
            a, b = getattr(p, name), getattr(q, name)
            if a is not None and b is not None and a != b:
                out.append(f"{p.subject}: {name} is {a} in sysfs, {b} in ibstat")
    out.extend(f"{q.subject}: in ibstat, not in sysfs" for k, q in theirs.items() if k not in ours)
    return tuple(out)


def collect(host: Host) -> InfinibandFacts:
    """Read and parse the InfiniBand facts of ``host``."""
    unread: dict[str, str] = {}
    sysfs = read_sysfs(host, unread)
    res = host.run(["ibstat"], timeout=15)
    ibstat = parse_ibstat(res.stdout) if res.stdout.strip() else []
    if res.status is not RunStatus.OK and not (res.status is RunStatus.MISSING and not sysfs):
        unread["ibstat"] = res.failure()  # absent with no HCA in sysfs: nothing to say
    elif res.ok and not ibstat and res.stdout.strip():
        unread["ibstat"] = malformed(res.stdout)
    if sysfs:
        checked = cross_check(sysfs, ibstat) if ibstat else ()
        return InfinibandFacts(tuple(sysfs), tuple(ibstat), checked, unread)
    return InfinibandFacts(tuple(ibstat), tuple(ibstat), (), unread)
