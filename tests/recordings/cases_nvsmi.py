"""nvidia-smi recordings: ``-q -x`` XML (real and mock), ``-q`` text, the default table,
``nvlink -s``. Bus ids are copied from each file."""

from __future__ import annotations

from tests.recordings import keys
from tests.recordings.model import BAD, JUDGED, Case, Flag, Kind, fails, flags


def seen(*bus_ids: str) -> tuple[Flag, ...]:
    """Some gpu.* check judged each GPU: the file proves it exists and answers."""
    return tuple(Flag("gpu.*", JUDGED, f"gpu:{b}") for b in bus_ids)


def xml(
    name: str,
    *bus: str,
    why: str,
    linux: bool = True,
    kind: Kind = "healthy",
    expect: tuple[Flag, ...] = (),
    forbid: tuple[Flag, ...] = (),
) -> Case:
    folder = "nvidia-smi-xml-mock" if name.startswith("k8s-test-infra__qx") else "nvidia-smi-xml"
    rel = f"{folder}/{name}"
    return Case(rel, rel, keys.XML, kind, why, seen(*bus) + expect, forbid, answered=linux)


HEALTHY_XML = "a real -q -x capture whose GPUs show no fault"

XML_CASES = [
    xml("datakit__gtx-1050-1.xml", "00000000:01:00.0", why=HEALTHY_XML + " (no DOCTYPE)"),
    xml("datakit__gtx-1card.xml", "00000000:21:01.0", why=HEALTHY_XML + " (V100 VM)"),
    xml("k8s-test-infra__hardware__qx-a100.xml", "00000000:06:00.0", why=HEALTHY_XML),
    xml(
        "k8s-test-infra__hardware__qx-gb200.xml",
        *("00000000:29:00.0", "00000000:3F:00.0", "00000000:9C:00.0", "00000000:B2:00.0"),
        why=HEALTHY_XML + " (4x GB200, NVL72 member, fabric Completed/Success)",
    ),
    xml(
        "k8s-test-infra__hardware__qx-h100.xml",
        *("00000000:53:00.0", "00000000:64:00.0", "00000000:75:00.0", "00000000:86:00.0"),
        *("00000000:97:00.0", "00000000:A8:00.0", "00000000:B9:00.0", "00000000:CA:00.0"),
        why=HEALTHY_XML + " (8x H100 HGX)",
    ),
    xml("k8s-test-infra__hardware__qx-l40s.xml", "00000000:30:00.0", why=HEALTHY_XML),
    xml("k8s-test-infra__hardware__qx-t4.xml", "00000000:00:1E.0", why=HEALTHY_XML),
    xml(
        "openpai__nvidia_smi_out_of_order.xml",
        *("00001580:00:00.0", "00002DF7:00:00.0", "00004968:00:00.0", "0000F8D6:00:00.0"),
        why="4x K80, blocks out of minor order; lifetime DBE counts 7 and 4, pages retired, "
        "none pending: a warning at most",
    ),
    xml("openpai__nvidia_smi_outdated_gpu.xml", "00000000:01:00.0", why="GT 730, most N/A"),
    xml(
        "openpai__nvidia_smi_sample.xml",
        *("00000000:01:00.0", "00000000:03:00.0"),
        why="GTX 1070 box, attached_gpus 6 with 2 blocks kept (a trimmed fixture, not lost GPUs)",
    ),
    xml(
        "openpai__nvidia_smi_sample_ecc_unsupported.xml",
        *("00000000:02:00.0", "00000000:03:00.0"),
        why="2x RTX 2080 Ti, ECC N/A (unsupported, not a fault)",
    ),
    xml("telegraf__3090-v13.xml", "00000000:09:00.0", why=HEALTHY_XML),
    xml(
        "telegraf__a100-sxm4-v12.xml",
        "00000000:01:00.0",
        why="A100 with MIG, attached_gpus 4 with 1 block kept (trimmed)",
    ),
    xml("telegraf__a10g.xml", "00000000:00:1E.0", why=HEALTHY_XML + " (AWS g5)"),
    xml("telegraf__dual_2070-v13.xml", "00000000:01:00.0", "00000000:02:00.0", why=HEALTHY_XML),
    xml("telegraf__dual_2080-v13.xml", "00000000:01:00.0", "00000000:02:00.0", why=HEALTHY_XML),
    xml("telegraf__gt-1030.xml", "00000000:2D:00.0", why=HEALTHY_XML),
    xml(
        "telegraf__gtx-1070-ti.xml",
        "00000000:01:00.0",
        why="a hand-cut fragment (no driver version): one GPU, nothing wrong in it",
    ),
    xml("telegraf__gtx-1660-ti.xml", "00000000:43:00.0", why="'Graphics Device', old driver"),
    xml("telegraf__pro-6000-maxq-blackwell-v13.xml", "00000000:61:00.0", why=HEALTHY_XML),
    xml("telegraf__quadro-p2000-v12.xml", "00000000:17:00.0", why=HEALTHY_XML),
    xml("telegraf__quadro-p400.xml", "00000000:43:00.0", why=HEALTHY_XML + " (no DOCTYPE)"),
    xml("telegraf__rtx-3060-v12.xml", "00000000:2D:00.0", why=HEALTHY_XML),
    xml(
        "telegraf__rtx-3080-v12.xml",
        "00000000:04:00.0",
        linux=False,
        why="Windows (WDDM): no Linux module to call loaded; nothing wrong",
    ),
    xml(
        "telegraf__rtx-3080-v13.xml",
        "00000000:0C:00.0",
        why="busy RTX 3080 (P2, 65 % GPU utilisation, 9184 MiB used; its processes are not "
        "listed, as from a container): memory in use by work, not idle",
        forbid=(Flag("gpu.memory.idle_usage", BAD, "gpu:00000000:0C:00.0"),),
    ),
    xml("telegraf__rtx-3090-v12.xml", "00000000:00:10.0", why=HEALTHY_XML + " (power capped)"),
    xml("telegraf__rtx-4000-sff-ada-v13.xml", "00000000:06:00.0", why=HEALTHY_XML),
    xml("telegraf__tesla-t4.xml", "00000000:00:1E.0", why=HEALTHY_XML + " (AWS g4dn)"),
    xml(
        "telegraf__tesla_p4.xml",
        "00000000:00:0B.0",
        linux=False,
        why="vGPU guest on Windows, most fields N/A: nothing wrong, little known",
    ),
    xml("k8s-test-infra__qx-a100-healthy.xml", "0000:07:00.0", "0000:0F:00.0", why="mock, clean"),
    xml("k8s-test-infra__qx-gb200-healthy.xml", "0000:0A:00.0", "0000:0B:00.0", why="mock, clean"),
    xml(
        "k8s-test-infra__qx-gb200-throttle-counters.xml",
        *("00000000:0A:00.0", "00000000:0B:00.0"),
        why="mock: GPU 0 accrued 39595 us (0.04 s) of SW power cap: no fault",
    ),
    xml(
        "k8s-test-infra__qx-gb200-ecc-injected.xml",
        *("0000:0A:00.0", "0000:0B:00.0"),
        kind="fault",
        why="mock: GPU 0 has 5 volatile / 8 aggregate DRAM uncorrectable, a row remap failure",
        expect=(
            fails("gpu.ecc.volatile_uncorrectable", "gpu:0000:0A:00.0"),
            fails("gpu.row_remap", "gpu:0000:0A:00.0"),
        ),
    ),
    xml(
        "k8s-test-infra__qx-gb200-fabric-degraded.xml",
        *("00000000:0A:00.0", "00000000:0B:00.0"),
        kind="fault",
        why="mock: GPU 1 fabric health route_unhealthy",
        expect=(fails("gpu.fabric", "gpu:00000000:0B:00.0"),),
    ),
    xml(
        "k8s-test-infra__qx-gb200-lost.xml",
        "0000:0A:00.0",
        kind="fault",
        why="mock: GPU 1 lost ('GPU is lost' bodies); GPU 0 carries the injected ECC "
        "(5 volatile DBE, a row remap failure) of the ECC variant",
        expect=(
            fails("gpu.lost", "gpu:0000:0B:00.0"),
            fails("gpu.ecc.volatile_uncorrectable", "gpu:0000:0A:00.0"),
            fails("gpu.row_remap", "gpu:0000:0A:00.0"),
        ),
    ),
]


def text(name: str, key: str, kind: Kind, why: str, expect: tuple[Flag, ...] = ()) -> Case:
    rel = f"nvidia-smi-text/{name}"
    return Case(rel, rel, key, kind, why, expect=expect, answered=True)


def buses(*buses: str) -> tuple[str, ...]:
    """nvidia-smi's spelling of each bus (``00000000:<bus>:00.0``)."""
    return tuple(f"00000000:{b}:00.0" for b in buses)


H100_161 = buses("19", "3B", "4C", "5D", "9B", "BB", "CB", "DB")
H100_183 = buses("53", "64", "75", "86", "97", "A8", "B9", "CA")
RTX4090_A = buses("01", "23", "41", "61", "81", "A1", "C1", "E1")
RTX4090_B = tuple(b.replace(":23:", ":21:") for b in RTX4090_A)
AZURE = tuple(f"0000000{i}:00:00.0" for i in range(1, 9))
HEALTHY_4090 = "8x RTX 4090 -q text: no slowdown, no remap, nothing wrong"

TEXT_CASES = [
    text(
        "gpud__nvidia-smi-query.535.129.03.out.0.valid.a10",
        keys.QUERY,
        "fault",
        "A10: Remapped Rows Pending: Yes (4 uncorrectable rows): reset needed",
        (fails("gpu.row_remap", "gpu:00000000:07:00.0"),),
    ),
    text(
        "gpud__nvidia-smi-query.535.154.05.out.0.valid",
        keys.QUERY,
        "healthy",
        HEALTHY_4090,
        seen(*RTX4090_A),
    ),
    text(
        "gpud__nvidia-smi-query.535.154.05.out.0.valid.4090",
        keys.QUERY,
        "healthy",
        HEALTHY_4090,
        seen(*RTX4090_B),
    ),
    text(
        "gpud__nvidia-smi-query.535.154.05.out.1.valid",
        keys.QUERY,
        "healthy",
        HEALTHY_4090,
        seen(*RTX4090_A),
    ),
    text(
        "gpud__nvidia-smi-query.535.154.05.out.2.valid",
        keys.QUERY,
        "healthy",
        HEALTHY_4090,
        seen(*RTX4090_A),
    ),
    text(
        "gpud__nvidia-smi-query.535.154.05.out.3.valid",
        keys.QUERY,
        "healthy",
        HEALTHY_4090,
        seen(*RTX4090_B),
    ),
    text(
        "gpud__nvidia-smi-query.535.161.08.out.0.valid",
        keys.QUERY,
        "fault",
        "8x H100: HW Slowdown and HW Power Brake Slowdown Active on every GPU",
        tuple(fails("gpu.clock_events", f"gpu:{b}") for b in H100_161),
    ),
    text(
        "gpud__nvidia-smi-query.535.183.01.out.0.invalid",
        keys.QUERY,
        "healthy",
        "cut after the first of 8 GPUs ('Invalid' labels): GPU 53 is seen, the 7 others are "
        "not in the text (unknown, never lost)",
        seen("00000000:53:00.0"),
    ),
    text(
        "gpud__nvidia-smi-query.535.183.01.out.0.valid",
        keys.QUERY,
        "fault",
        "8x H100: HW Power Brake Slowdown Active on GPU 75 only",
        (*seen(*H100_183), fails("gpu.clock_events", "gpu:00000000:75:00.0")),
    ),
    text(
        "gpud__nvidia-smi-query.560.35.03.out.0.valid",
        keys.QUERY,
        "healthy",
        "TITAN V -q text, nothing wrong",
        seen("00000000:01:00.0"),
    ),
    text(
        "gpud__nvidia-smi.525.125.06.out.0.valid",
        keys.TABLE,
        "fault",
        "default table, one GeForce (450 W): the fan column reads ERR! (nvidia-smi could not "
        "read the fan): at least a warning on that GPU",
        (flags("gpu.*", "gpu:00000000:01:00.0"),),
    ),
    text(
        "gpud__nvidia-smi.550.90.07.out.0.valid",
        keys.TABLE,
        "healthy",
        "default table, 8x H100 at P0 idle, ECC 0: nothing wrong",
        seen(*H100_161),
    ),
    text(
        "azurehpc__orig_nvsmi8_output.txt",
        keys.QUERY,
        "healthy",
        "-q -d PAGE_RETIREMENT of 8 Azure GPUs (Hyper-V domains 0001..0008): 0 retired, none "
        "pending; everything else is not in an excerpt (unknown, never failed)",
        tuple(Flag("gpu.retired_pages", frozenset({"pass"}), f"gpu:{b}") for b in AZURE),
    ),
]

NVLINK_CASES = [
    Case(
        "nvidia-smi-nvlink/azurehpc__bad_nvlink_status_a100.txt",
        "nvidia-smi-nvlink/azurehpc__bad_nvlink_status_a100.txt",
        keys.NVLINK,
        "fault",
        "A100-SXM4 (GPU 6, UUID GPU-9667d95e...): 'all links are inactive': an SXM4 board has "
        "12 NVLinks to the NVSwitches; none up is a fault (the file names no bus id)",
        expect=(fails("interconnect.nvlink.state", "gpu:*"),),
        answered=True,
    ),
    Case(
        "nvidia-smi-nvlink/azurehpc__good_nvlink_status_a100.txt",
        "nvidia-smi-nvlink/azurehpc__good_nvlink_status_a100.txt",
        keys.NVLINK,
        "healthy",
        "A100-SXM4 GPU 7: 12 links at 25 GB/s",
        expect=(Flag("interconnect.nvlink.state", frozenset({"pass"}), "*"),),
        answered=True,
    ),
    Case(
        "nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a10",
        "nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a10",
        keys.NVLINK,
        "unread",
        "empty output (an A10 has no NVLink): says nothing of any GPU",
        unpasteable="an empty file: no kind can be told from nothing (it reads only under its key)",
    ),
    Case(
        "nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a100",
        "nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a100",
        keys.NVLINK,
        "healthy",
        "8x A100-SXM4, 12 links each at 25 GB/s",
        expect=(Flag("interconnect.nvlink.state", frozenset({"pass"}), "*"),),
        answered=True,
    ),
]

CASES = XML_CASES + TEXT_CASES + NVLINK_CASES
