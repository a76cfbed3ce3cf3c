"""The CUDA environment (linker cache, daemon.json, CDI specs, nvcc), dmidecode, the
procfs/sysfs fixture trees, and the nvidia_gpu_exporter captures cut into one case per
command section."""

from __future__ import annotations

from tests.recordings import keys
from tests.recordings.model import JUDGED, Case, Flag

CE = "cuda-env"
NVCC = f"{CE}/issues__nvcc-version-excerpts.md"
CDI = f"{CE}/issues__cdi-spec-excerpts.md"

# libcuda.so.1 in the linker cache: no GPU, but the driver installed, said beside "no GPU"
DRIVER_INSTALLED = Flag(
    "gpu.present", frozenset({"unknown"}), "host", r"an NVIDIA driver is installed \(libcuda"
)

ENV_CASES = [
    Case(
        f"{CE}/nvidia-container-toolkit__rootfs-1__ldconfig-p.txt",
        f"{CE}/nvidia-container-toolkit__rootfs-1__ldconfig-p.txt",
        keys.LDCONFIG,
        "healthy",
        "ldconfig -p of a host with driver 515.105.01 libraries (libcuda.so.1, libnvidia-ml, "
        "DCGM): the driver is installed; whether its links resolve needs the files, not in "
        "this bundle",
        expect=(DRIVER_INSTALLED,),
    ),
    Case(
        f"{CE}/nvidia-container-toolkit__rootfs-1__ld.so.cache",
        f"{CE}/nvidia-container-toolkit__rootfs-1__ld.so.cache",
        keys.LD_SO_CACHE,
        "healthy",
        "the binary linker cache those lines came from (read without ldconfig): the same "
        "conclusion, driver 515.105.01 installed",
        expect=(DRIVER_INSTALLED,),
    ),
    Case(
        f"{CE}/openpai__daemon-openpai-nvidia-runtime.json",
        f"{CE}/openpai__daemon-openpai-nvidia-runtime.json",
        keys.DAEMON_JSON,
        "healthy",
        "daemon.json with default-runtime nvidia: docker is set up for GPUs (no GPU or toolkit "
        "binary in the bundle to judge it against)",
    ),
    Case(
        f"{NVCC}#nccl-1578-nvcc",
        NVCC,
        keys.NVCC,
        "healthy",
        "nvcc -V: CUDA 12.4.131; no driver in this bundle to match it with",
        block="https://github.com/NVIDIA/nccl/issues/1578",
        start=r"^nvcc: NVIDIA",
        stop=r"^\$ nvidia-smi",
    ),
    Case(
        f"{NVCC}#nccl-1578-nvidia-smi",
        NVCC,
        keys.TABLE,
        "healthy",
        "default table of a vGPU guest H100XM-80C at 00000000:03:00.0 (550.127.05), "
        "temperature and power N/A; truncated",
        expect=(Flag("gpu.*", JUDGED, "gpu:00000000:03:00.0"),),
        block="https://github.com/NVIDIA/nccl/issues/1578",
        start=r"^Thu Jan 16",
        answered=True,
    ),
    Case(
        f"{CDI}#buildx-3295",
        CDI,
        keys.CDI_SPEC,
        "healthy",
        "nvidia-ctk CDI spec (cdiVersion 0.5.0, driver 575.57.08), truncated by the index",
        block="https://github.com/docker/buildx/issues/3295",
    ),
    Case(
        f"{CDI}#nvidia-container-runtime-85",
        CDI,
        keys.CDI_SPEC,
        "healthy",
        "an early CDI spec (cdiVersion 0.4.0) of a DGX-A100, driver 460.91.03; truncated",
        block="https://github.com/NVIDIA/nvidia-container-runtime/issues/85",
    ),
    Case(
        "host/gpud__dmidecode",
        "host/gpud__dmidecode",
        keys.DMIDECODE,
        "unread",
        "dmidecode excerpt of a Dell PowerEdge XE9680, boot status 'No errors detected'",
        unpasteable="validate reads nothing of dmidecode: --from refusing it ('no kind it "
        "knows') is the truthful answer, not a one-file bundle that says nothing",
    ),
]

TREES = [
    Case(
        "procfs/procfs__fixtures_extracted",
        "procfs/procfs__fixtures_extracted/fixtures",
        "/",
        "healthy",
        "prometheus/procfs fixtures: a curated mix of several hosts' proc and sys (no NVIDIA "
        "GPU). Its mlx5_0 port has the malformed phys_state '4: ACTIVE' (a state where the "
        "physical state belongs): unknown, never 'reseat the cable'",
        build="tree",
    ),
    Case(
        "sysfs/node_exporter__sys_extracted",
        "sysfs/node_exporter__sys_extracted",
        "/",
        "healthy",
        "node_exporter's sysfs fixtures: curated real sysfs of several non-GPU hosts "
        "(i40iw0, mlx4_0 ports ACTIVE, hwmon, NVMe, AER counters)",
        build="tree",
    ),
]

CAP = "nvidia-smi-captures/nvidia_gpu_exporter__"
CAPTURES = {  # file tail -> the bus id of its one GPU
    "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt": "00000000:0C:00.0",
    "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.txt": "00000000:0C:00.0",
    "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt": "00000000:01:00.0",
    "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt": "00000000:00:09.0",
    "linux-x86_64__nvidia-h100-mig__590.48.01.txt": "00000000:00:09.0",
    "linux-x86_64__nvidia-h200-mig__590.48.01.txt": "00000000:83:00.0",
    "linux-x86_64__nvidia-h200__590.48.01.txt": "00000000:83:00.0",
    "linux-x86_64__nvidia-l40s__595.80.txt": "00000000:01:00.0",
    "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt": "00000000:0C:00.0",
    "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt": "00000000:0C:00.0",
}
SECTIONS = (  # capture section title, tree key, the case's id tail
    ("idle :: query (-q)", keys.QUERY, "q"),
    ("idle :: nvidia-smi (default table)", keys.TABLE, "table"),
    ("load :: query (-q)", keys.QUERY, "q-load"),
    ("load :: nvidia-smi (default table)", keys.TABLE, "table-load"),
    ("capabilities :: nvlink -s", keys.NVLINK, "nvlink"),
    ("capabilities :: topo -m", keys.TOPO, "topo"),
)
NVLINK_WHY = {
    "h100-80gb": "18 links at 26.562 GB/s",
    "h200__": "18 links at 26.562 GB/s",
    "mig": "'Nvlink queries are not supported for Devices in MIG mode'",
    "2080": "'all links are inActive': a GeForce without an NVLink bridge (normal)",
    "4080": "'Device does not have or support Nvlink'",
    "l40s": "'Device does not have or support Nvlink'",
}


def capture(tail: str, title: str, key: str, short: str) -> Case:
    bus = CAPTURES[tail]
    rel = CAP + tail
    expect: tuple[Flag, ...] = ()
    if short.startswith(("q", "table")):
        expect = (Flag("gpu.*", JUDGED, f"gpu:{bus}"),)
        state = "under the exporter's synthetic load" if short.endswith("load") else "idle"
        why = f"one GPU at {bus}, {state}, nothing wrong"
    elif short == "nvlink":
        why = next(w for k, w in NVLINK_WHY.items() if k in tail) + ": no fault"
        if "mig" in tail:  # the links exist, nvidia-smi would not list them
            unread = frozenset({"unknown"})
            expect = (Flag("interconnect.nvlink.state", unread, words="in MIG mode"),)
    else:
        why = "topo -m of one GPU (no peer, no NIC): nothing to fault"
    if tail.startswith("windows"):
        why += " (Windows host)"
    answered = short != "topo" and not tail.startswith("windows")
    # This driver's Windows nvidia-smi answered "topo -m" with its usage error ("Option -m
    # is missing its value"): text that names no command, so no paste detection can key it.
    unpasteable = (
        "nvidia-smi's usage error, naming no command"
        if short == "topo" and tail.endswith("591.86.txt")
        else ""
    )
    return Case(
        f"{rel}#{short}",
        rel,
        key,
        "healthy",
        why,
        expect=expect,
        block=title,
        answered=answered,
        unpasteable=unpasteable,
    )


CAPTURE_CASES = [capture(t, title, k, s) for t in CAPTURES for title, k, s in SECTIONS]

CASES = ENV_CASES + TREES + CAPTURE_CASES

# Files that are not a command's output or a host file, each with the reason it is left out.
EXCLUDED = {
    "PROVENANCE.md": "the provenance of the other files",
    "nvidia-smi-captures/nvidia_gpu_exporter__README.md": "describes the capture format",
    "nvidia-smi-xml/k8s-test-infra__hardware__README.md": "describes the captures",
    "nvidia-smi-xml-mock/k8s-test-infra__README.md": "describes the mock fixtures",
    "sysfs/gcm__DGX_A100.json": "an expected-topology manifest for GCM's checks, not a dump",
    "sysfs/node_exporter__sys.ttar": "the ttar of node_exporter__sys_extracted (same bytes)",
    "procfs/procfs__fixtures.ttar": "the ttar of procfs__fixtures_extracted (same bytes)",
}
# Excerpt blocks left out: not one command's whole output.
EXCLUDED_BLOCKS = {
    "https://github.com/leptonai/gpud/pull/1174": "lines quoted as parser inputs in a PR",
    "https://github.com/leptonai/gpud/pull/1160": "lines quoted as parser inputs in a PR",
    "https://github.com/NVIDIA/DCGM/issues/49": "a fragment of a table, no header or command",
}
