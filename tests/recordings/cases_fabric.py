"""InfiniBand/RoCE recordings (ibstat, ibstatus, sysfs trees, GCM's sysfs maps), lspci,
``topo -m`` and ``dcgmi`` excerpts."""

from __future__ import annotations

from tests.recordings import keys
from tests.recordings.model import JUDGED, Case, Flag, Kind, fails, flags


def ib(name: str, key: str, kind: Kind, why: str, expect: tuple[Flag, ...] = ()) -> Case:
    rel = f"infiniband/{name}"
    return Case(rel, rel, key, kind, why, expect=expect)


def ports(check: str, status: frozenset[str], *devs: str) -> tuple[Flag, ...]:
    return tuple(Flag(check, status, f"ib:{d}/1") for d in devs)


ACTIVE = frozenset({"pass"})


def active(*devs: str) -> tuple[Flag, ...]:
    """An InfiniBand port the file shows ACTIVE/LinkUp: some interconnect check passes it."""
    return ports("interconnect.*", ACTIVE, *devs)


def roce_seen(*devs: str) -> tuple[Flag, ...]:
    """A RoCE (Ethernet) port the file shows Active: judged, or unknown for want of its netdev
    (its carrier is not in an ibstat or a sys/class/infiniband tree), never failed."""
    return ports("interconnect.*", frozenset({"pass", "warn", "unknown"}), *devs)


IB_CASES = [
    ib(
        "gpud__ibstat.39.0.a100.failed.ibpanic.exit-255.0",
        keys.IBSTAT,
        "fault",
        "8 HDR ports Active, then 'ibpanic: stat of IB device mlx5_8 failed: No such file or "
        "directory' (exit 255): an HCA the node lists vanished; the failure is reported",
        (flags("interconnect.*", "ib:mlx5_8*"),),
    ),
    ib(
        "gpud__ibstat.47.0.a100.all.active.0",
        keys.IBSTAT,
        "healthy",
        "9 ConnectX-6 (MT4126) ports Active at 200 (mlx5_0 RoCE, the others IB)",
        (*roce_seen("mlx5_0"), *active(*(f"mlx5_{i}" for i in range(1, 9)))),
    ),
    ib(
        "gpud__ibstat.47.0.h100.all.active.0",
        keys.IBSTAT,
        "healthy",
        "8 CX-7 RoCE at 400 and 4 CX-6 Dx at 100, all Active",
        roce_seen("mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11"),
    ),
    ib(
        "gpud__ibstat.47.0.h100.all.active.2",
        keys.IBSTAT,
        "healthy",
        "8 CX-7 NDR IB at 400 and mlx5_bond_0 (BlueField-3, 200 Ethernet), all Active",
        (*active("mlx5_0", "mlx5_9"), *roce_seen("mlx5_bond_0")),
    ),
    ib(
        "gpud__ibstat.47.0.h100.some.down.0",
        keys.IBSTAT,
        "healthy",
        "8 CX-7 IB Active at 400; of the 4 CX-6 Dx (MT4125) Ethernet ports mlx5_1 is Active at "
        "100 and mlx5_2, mlx5_7, mlx5_8 are Down/Disabled. Ethernet ports are RoCE, judged by "
        "interconnect.roce (not ib.port_state), and Disabled is a netdev set down: with 3 of "
        "the 4 down the file alone cannot tell unused ports from missing rails (GPUd's "
        "'unhealthy' comes from its configured port count, not from this file)",
        (
            *active(*(f"mlx5_{i}" for i in (0, 3, 4, 5, 6, 9, 10, 11))),
            *ports("interconnect.roce", frozenset({"pass"}), "mlx5_1"),
            *ports("interconnect.roce", frozenset({"skip"}), "mlx5_2", "mlx5_7", "mlx5_8"),
        ),
    ),
    ib(
        "gpud__ibstat.47.0.h100.some.down.with.polling.1",
        keys.IBSTAT,
        "fault",
        "2 of 8 identical 400G CX-7 RoCE rails down (mlx5_5 Down/Disabled, mlx5_11 "
        "Down/Polling) while their 6 siblings are Active (GPUd: unhealthy)",
        # Ethernet link-layer ports: RoCE, judged by interconnect.roce
        ports("interconnect.roce", frozenset({"fail"}), "mlx5_5", "mlx5_11"),
    ),
    ib(
        "gpud__ibstatus.39.0.a100.all.active.0",
        keys.IBSTATUS,
        "healthy",
        "ibstatus: 8 HDR ports 4: ACTIVE / 5: LinkUp at 200 Gb/sec (4X HDR)",
        active(*(f"mlx5_{i}" for i in range(8))),
    ),
]

H100_IB = [f"mlx5_{i}" for i in (0, 1, 4, 5, 6, 7, 8, 9)]
TREE_CASES = [
    Case(
        "sysfs/gpud__sys-class-infiniband-h100.0",
        "sysfs/gpud__sys-class-infiniband-h100.0",
        keys.IB_CLASS,
        "fault",
        "8 NDR ports and the bond ACTIVE/LinkUp; mlx5_1's link_downed reads 255 (the 8-bit "
        "counter saturated: the link went down at least 255 times) with no uptime in the "
        "bundle: nobody can tell whether that is this week or years of history (gpud reports "
        "this very port healthy), so the flap check says unknown naming the missing uptime, "
        "never a warning about 3 hours; 14-15 rcv/overrun errors on every port: counts, not "
        "rates (no per-day limit applies)",
        expect=(
            *active(*H100_IB),
            *roce_seen("mlx5_bond_0"),
            Flag(
                "interconnect.ib.flaps",
                frozenset({"unknown"}),
                "ib:mlx5_1/1",
                r"link_downed 255, uptime unknown.*proc/uptime",
            ),
            # 9 mlx5 HCAs, none of their PCI functions: their links are unknown, not passed
            Flag(
                "interconnect.nic.pcie_limited",
                frozenset({"unknown"}),
                "host",
                r"HCAs sys/class/infiniband shows \(mlx5_0.*not in this bundle: their PCI",
            ),
        ),
        build="tree",
    ),
]


def gcm(name: str, kind: Kind, why: str, expect: tuple[Flag, ...] = ()) -> Case:
    rel = f"sysfs/gcm__{name}.json"
    return Case(rel, rel, "/", kind, why, expect=expect, build="map")


GCM_PORTS = ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9")
MAP_CASES = [
    gcm(
        "learn_good",
        "healthy",
        "GCM's sysfs map of an HDR GPU node: 8 IB ports ACTIVE at 200, netdevs up, NVMe",
        active(*GCM_PORTS),
    ),
    gcm(
        "learn_ib_intf_bad_rate",
        "fault",
        "every HDR port (ConnectX-6) ACTIVE at 100 Gb/sec (4X EDR): degraded rate (GCM: fail)",
        ports("interconnect.ib.rate", frozenset({"fail"}), *GCM_PORTS),
    ),
    gcm(
        "learn_ib_intf_operstate_down",
        "fault",
        "mlx5_6's port ACTIVE but its IPoIB netdev ib4 is down after 98 carrier changes (GCM: "
        "critical)",
        (fails("interconnect.*", "n[ie][ct]:ib4"),),
    ),
    gcm(
        "learn_stuck_ib_intf",
        "fault",
        "mlx5_6 and mlx5_8 stuck in INIT with LinkUp (no subnet manager), their netdevs ib4 "
        "and ib6 down",
        (
            *ports("interconnect.ib.port_state", frozenset({"fail"}), "mlx5_6", "mlx5_8"),
            flags("interconnect.*", "n[ie][ct]:ib4"),
            flags("interconnect.*", "n[ie][ct]:ib6"),
        ),
    ),
]

LSPCI_CASES = [
    Case(
        "lspci/gpud__lspci-vvv",
        "lspci/gpud__lspci-vvv",
        keys.LSPCI_VVV,
        "healthy",
        "lspci -vvv of an 8x H100 SXM5 HGX (device 2330) with CX-7 and CX-6 Dx, GPU links "
        "32GT/s x16 (ok) of LnkCap 32GT/s x16 behind Gen5 switch ports: each GPU's link at "
        "its maximum; CESta bits set are booleans, not rates. Each GPU's 'Kernel driver in "
        "use: nvidia' shows the module loaded",
        expect=(
            *(
                Flag("gpu.pcie.link", frozenset({"pass"}), f"gpu:0000:{b}:00.0")
                for b in ("19", "3b", "4c", "5d", "9b", "bb", "cb", "db")
            ),
            Flag("stack.driver.loaded", frozenset({"pass"}), "host", "bound to it"),
        ),
    ),
    Case(
        "lspci/gpud__lspci.gb200",
        "lspci/gpud__lspci.gb200",
        keys.LSPCI,
        "healthy",
        "lspci of a GB200 tray: 4 GPUs (10de:2941) in domains 0008, 0009, 0018, 0019",
        expect=tuple(
            Flag("gpu.*", JUDGED, f"gpu:{d}:01:00.0") for d in ("0008", "0009", "0018", "0019")
        ),
    ),
    Case(
        "lspci/gpud__lspci.nn.a10",
        "lspci/gpud__lspci.nn.a10",
        keys.LSPCI_NN,
        "healthy",
        "lspci -nn of a QEMU VM with one A10 at 06:00.0",
        expect=(Flag("gpu.*", JUDGED, "gpu:0000:06:00.0"),),
    ),
    Case(
        "lspci/gpud__lspci.nn.a100",
        "lspci/gpud__lspci.nn.a100",
        keys.LSPCI_NN,
        "healthy",
        "lspci -nn of an Azure 8x A100-SXM4-80GB VM (Hyper-V domains 0001..000e)",
        expect=tuple(
            Flag("gpu.*", JUDGED, f"gpu:{d}:00:00.0")
            for d in ("0001", "0002", "0003", "0004", "000b", "000c", "000d", "000e")
        ),
    ),
]

TOPO = "nvidia-smi-topo/issues__topo-m-excerpts.md"
TOPO_WHY = "; truncated by the index: what is cut is unknown, not missing"
TOPO_CASES = [
    Case(
        f"{TOPO}#nccl-1453",
        TOPO,
        keys.TOPO,
        "healthy",
        "8x H100, every GPU pair NV18, each GPU PIX to one NIC" + TOPO_WHY,
        expect=(Flag("interconnect.topology", JUDGED, "*"),),
        block="https://github.com/NVIDIA/nccl/issues/1453",
    ),
    Case(
        f"{TOPO}#pytorch-communication-benchmarks-1",
        TOPO,
        keys.TOPO,
        "healthy",
        "8x H100 NV18, 6 NICs, spaces for tabs" + TOPO_WHY,
        expect=(Flag("interconnect.topology", JUDGED, "*"),),
        block="https://github.com/IBM/pytorch-communication-benchmarks/issues/1",
        start=r"GPU0\s+GPU1",
    ),
    Case(
        f"{TOPO}#nccl-820",
        TOPO,
        keys.TOPO,
        "healthy",
        "8x A100 NV12 with mlx5_0..9, whitespace mangled" + TOPO_WHY,
        expect=(Flag("interconnect.topology", JUDGED, "*"),),
        block="https://github.com/NVIDIA/nccl/issues/820",
    ),
]

DCGM = "dcgm/issues__dcgmi-diag-excerpts.md"
DCGM_CASES = [
    Case(
        f"{DCGM}#DCGM-198-nvlink",
        DCGM,
        keys.DCGM_NVLINK,
        "fault",
        "dcgmi nvlink --link-status: all 18 links of gpuId 0 and 1 (H100 NVL) Down",
        expect=(fails("interconnect.nvlink*", "gpu:*"),),
        block="https://github.com/NVIDIA/DCGM/issues/198",
        stop=r"^dcgmi diag",
    ),
    Case(
        f"{DCGM}#DCGM-198-diag",
        DCGM,
        keys.DCGM_DIAG_2,
        "healthy",
        "dcgmi diag -r 2 (DCGM 3.3.7): every test shown Pass; truncated",
        block="https://github.com/NVIDIA/DCGM/issues/198",
        start=r"^Successfully ran",
    ),
    Case(
        f"{DCGM}#DCGM-55",
        DCGM,
        keys.DCGM_DIAG_3,
        "healthy",
        "dcgmi diag -r 3 (DCGM 3.0.4): Deployment all Pass; truncated",
        block="https://github.com/NVIDIA/DCGM/issues/55",
        start=r"^Successfully ran",
    ),
    Case(
        f"{DCGM}#go-dcgm-52",
        DCGM,
        keys.DCGM_DIAG_2_G7,
        "healthy",
        "dcgmi diag -r 2 -g 7 (DCGM 3.3.1, T4): all Pass; truncated",
        block="https://github.com/NVIDIA/go-dcgm/issues/52",
        start=r"^Successfully ran",
    ),
]

CASES = IB_CASES + TREE_CASES + MAP_CASES + LSPCI_CASES + TOPO_CASES + DCGM_CASES
