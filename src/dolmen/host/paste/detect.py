"""What a pasted file is, told from its content (pure): the kinds ``--from FILE`` accepts.

A user pastes what they have into a ticket: one command's output, a kernel log, a
capture of several commands. ``detect(text)`` names it by what the text itself says
(the XML root element, nvidia-smi's banners, ibstat's ``CA '...'`` blocks, the time
stamps of log lines), never by the file name alone: ``dmesg.txt`` is often a journal,
``nvidia-smi.log`` is often the ``-q`` text. Multi-command files (a capture, a bug
report) are told apart first, since they contain all the others.

Each kind names the tree key its bytes go under (DESIGN.md "Host"): the command whose
output it is, as dolmen's readers ask for it (``nvidia-smi -q -x``, ``lspci -vvv``...),
or ``dmesg`` for any kernel log (facts.kernel_log reads ``commands/dmesg`` whatever
format it holds).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from dolmen.frozen import frozen

# How much of a file the tests below look at: the banners are at the top, and sampling
# keeps detection linear and cheap whatever the file's size.
HEAD = 64 << 10


@frozen
class Kind:
    """One kind of pasted content: its name, what it is in words, and its tree key."""

    name: str  # nvsmi-xml, nvsmi-q, dmesg...
    label: str  # "nvidia-smi -q -x", for the detected line
    argv: tuple[str, ...]  # the command under whose key the bytes go (("dmesg",) for logs)


KINDS: Mapping[str, Kind] = {
    k.name: k
    for k in (
        Kind("nvsmi-xml", "nvidia-smi -q -x", ("nvidia-smi", "-q", "-x")),
        Kind("nvsmi-q", "nvidia-smi -q", ("nvidia-smi", "-q")),
        Kind("nvsmi-table", "nvidia-smi", ("nvidia-smi",)),
        Kind("nvsmi-failed", "nvidia-smi's own error", ("nvidia-smi",)),
        Kind("nvlink", "nvidia-smi nvlink -s", ("nvidia-smi", "nvlink", "-s")),
        Kind("dcgm-nvlink", "dcgmi nvlink --link-status", ("dcgmi", "nvlink", "--link-status")),
        Kind("topo", "nvidia-smi topo -m", ("nvidia-smi", "topo", "-m")),
        Kind("dcgm-diag", "dcgmi diag -j", ("dcgmi", "diag", "-j")),
        # facts.dcgm reads any "dcgmi diag ..." key, the table as well as the JSON
        Kind("dcgm-diag-text", "dcgmi diag (the result table)", ("dcgmi", "diag")),
        Kind("ibstat", "ibstat", ("ibstat",)),
        Kind("ibstatus", "ibstatus", ("ibstatus",)),
        Kind("ibv_devinfo", "ibv_devinfo", ("ibv_devinfo",)),
        Kind("lspci", "lspci", ("lspci", "-vvv")),
        Kind("ldconfig", "ldconfig -p", ("ldconfig", "-p")),
        Kind("nvcc", "nvcc --version", ("nvcc", "--version")),
        Kind("journal-json", "journalctl -o json", ("dmesg",)),
        Kind("kernel-log", "a kernel log", ("dmesg",)),
        # read by the same scanner as the kernel log (facts/kernel_log/lines.py)
        Kind("fm-log", "nv-fabricmanager's log", ("dmesg",)),
        # containers of several outputs, split by dolmen.host.paste.sections
        Kind("capture", "a multi-command nvidia-smi capture", ()),
        # host files, placed at their path (dolmen.host.paste.place: FILE_KINDS)
        Kind("docker-daemon", "Docker's daemon.json", ()),
        Kind("ld-so-cache", "the linker cache (etc/ld.so.cache)", ()),
        Kind("cdi-spec", "a CDI spec", ()),
        Kind("bug-report", "nvidia-bug-report.log", ()),
    )
}

# What --from accepts, for the one line an unrecognised file gets.
ACCEPTED = (
    "a host tree folder, a `dolmen snapshot` .tar.gz, a sosreport archive, "
    "nvidia-bug-report.log(.gz), or one command's output: nvidia-smi -q -x, nvidia-smi -q, "
    "nvidia-smi, nvidia-smi nvlink -s, nvidia-smi topo -m, dcgmi diag (-j or the result "
    "table), dcgmi nvlink --link-status, ibstat, ibstatus, ibv_devinfo, lspci (-nn, -vvv), "
    "a kernel log (dmesg, /dev/kmsg, journalctl -k, syslog, journalctl -o json), or a host "
    "file: Docker's daemon.json, a CDI spec, /etc/ld.so.cache; gzip-compressed or not"
)


@frozen
class Detected:
    """What a text is: its kind, and a count for the detected line (GPUs, HCAs, lines)."""

    kind: Kind
    count: int | None = None
    unit: str = ""  # "GPU", "HCA", "line"...

    def describe(self) -> str:
        """``nvidia-smi -q -x (8 GPUs)``: the kind and what it holds, in words."""
        if self.count is None or not self.unit:
            return self.kind.label
        plural = "" if self.count == 1 else "s"
        return f"{self.kind.label} ({self.count} {self.unit}{plural})"


_XML_ROOT = re.compile(r"<nvidia_smi_log\b")
_XML_GPU = re.compile(r"<gpu id=")
_NVSMI_LOG = "==============NVSMI LOG=============="
_Q_GPU = re.compile(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s*$", re.M)
# "Driver Version:", or "KMD Version:" (the kernel-mode driver) from the 610 drivers on.
_TABLE_HEAD = re.compile(r"^\|\s*NVIDIA-SMI \S+\s+(?:Driver|KMD) Version:", re.M)
_TABLE_GPU = re.compile(r"^\|\s+\d+\s+\S.*\|\s+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:", re.M)
_SMI_FAILED = re.compile(
    r"NVIDIA-SMI has failed|No devices were found|Failed to initialize NVML|"
    r"Unable to determine the device handle"
)
_NVLINK_GPU = re.compile(r"^GPU \d+: .*\(UUID: ", re.M)
_NVLINK_LINK = re.compile(r"^\s+Link \d+: ", re.M)
# Why a GPU has no links, on the line after its "GPU n:" line (no NVLink on the board,
# every link inactive, a GPU in MIG mode).
_NVLINK_NONE = re.compile(
    r"^(?:NVML: Unable to retrieve NVLink information|Device does not have or support Nvlink|"
    r"Nvlink queries are not supported)",
    re.M | re.I,
)
_TOPO_HEAD = re.compile(r"^\s*(?:\x1b\[[0-9;]*m)?GPU0(?:\s+\S+)*\s+CPU Affinity", re.M)
_TOPO_LEGEND = re.compile(r"^\s*X\s+= Self", re.M)
_TOPO_GPU = re.compile(r"^GPU\d+\s", re.M)
_IBSTAT_CA = re.compile(r"^CA '[^']+'", re.M)
_IBSTAT_PORT = re.compile(r"^\s+(?:Port \d+:|State:|Number of ports:|CA type:)", re.M)
_IBSTATUS = re.compile(r"^Infiniband device '[^']+' port \d+ status:", re.M)
_DEVINFO = re.compile(r"^hca_id:\s*\S+", re.M)
_DEVINFO_PORT = re.compile(r"^\s+(?:transport:|port:|state:|fw_ver:)", re.M)
_LSPCI = re.compile(
    r"^(?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] "  # bus id
    r"[0-9A-Za-z][^:\n]*?(?: \[[0-9a-f]{4}\])?: ",  # class name [class id]:
    re.M,
)
_LSPCI_NVIDIA_GPU = re.compile(
    r"^\S+ (?:3D|VGA compatible|Display) controller(?: \[[0-9a-f]{4}\])?: NVIDIA", re.M
)
_LDCONFIG = re.compile(r"^\d+ libs found in cache", re.M)
_NVCC = re.compile(r"^nvcc: NVIDIA \(R\) Cuda compiler driver", re.M)
_CAPTURE = re.compile(r"^# \$ \S", re.M)
_BUG_REPORT = re.compile(
    r"Start of NVIDIA bug report log file|^nvidia-bug-report\.sh Version", re.M
)
_JSON_LINE = re.compile(r'^\{.*"(?:MESSAGE|__REALTIME_TIMESTAMP)"\s*:', re.M)
_DCGM_NVLINK = re.compile(r"^\s*gpuId \d+:\s*\n\s*[UDX_](?: [UDX_])*\s*$", re.M)
_DCGM = re.compile(r'"DCGM (?:GPU )?Diagnostic"\s*:')
# dcgmi diag's table: its banner, its header row, or a section row (a pasted piece of it).
_DCGM_TABLE = re.compile(
    r"^Successfully ran diagnostic for group\.|^\|\s*Diagnostic\s+\|\s*Result\s+\||"
    r"^[|+]-{3,}\s+(?:Metadata|Deployment|Integration|Hardware|Stress)\s+-+[+|]",
    re.M,
)
# Docker's daemon.json: the keys the NVIDIA runtime is configured by.
_DOCKER_DAEMON = re.compile(r'^\s*"(?:default-runtime|runtimes)"\s*:', re.M)
_CDI = re.compile(r"^cdiVersion:\s*\S", re.M)

# Kernel-log line heads, one per format of facts/kernel_log/lines.py (host/ may not import
# facts/: these only tell a log from other text; the facts parse it line by line).
_LOG_LINE = re.compile(
    r"(?:"
    r"\d{1,3},\d+,\d+,[^;]*;"  # /dev/kmsg
    r"|(?:<\d{1,3}>)?\[\s*\d+\.\d+\]"  # dmesg, pstore
    r"|(?:[a-z0-9]+ *:[a-z]+ *: )?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d"  # iso, --decode
    r"|(?:[a-z0-9]+ *:[a-z]+ *: )?\[\s*\d+\.\d+\]"  # dmesg --decode
    r"|\[(?:[A-Z][a-z]{2} )?[A-Z][a-z]{2} +\d{1,2} [\d:]{8} \d{4}\]"  # dmesg -T
    r"|\[[A-Z][a-z]{2} +\d{1,2} \d{4} [\d:]{8}\] \[[A-Z]+\]"  # nv-fabricmanager
    r"|[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)? \S+ \S+?(?:\[\d+\])?:"  # syslog
    r"|kernel: "  # a journal line whose time and host were cut ("kernel: NVRM: Xid ...")
    r")"
)
_FM_LINE = re.compile(r"\[[A-Z][a-z]{2} +\d{1,2} \d{4} [\d:]{8}\] \[[A-Z]+\]")
_FENCE = re.compile(r"^```", re.M)
_LOG_SAMPLE = 200  # lines looked at
_LOG_SHARE = 0.6  # of the non-empty ones that must look like log lines


# glibc's linker cache, binary: both formats' magic (facts.stack.ldcache reads it)
_LD_SO_CACHE = (b"glibc-ld.so.cache", b"ld.so-1.7.0")


def detect_binary(raw: bytes) -> Detected | None:
    """The kind of a binary file dolmen reads (the linker cache), or None."""
    return Detected(KINDS["ld-so-cache"]) if raw.startswith(_LD_SO_CACHE) else None


def detect(text: str) -> Detected | None:
    """The kind of ``text`` (a whole file, decoded), or None when dolmen does not read it."""
    head = text[:HEAD]
    stripped = head.lstrip("\ufeff \t\r\n")
    if not stripped or is_markdown(head):
        return None  # a document quoting outputs (an issue thread) is not one host's output
    # Containers first: a capture or a bug report holds every other kind's banner.
    if _BUG_REPORT.search(head):
        return Detected(KINDS["bug-report"])
    if len(_CAPTURE.findall(head)) >= 2 and head.startswith("#"):
        return Detected(KINDS["capture"], len(_CAPTURE.findall(text)), "section")
    if stripped.startswith("<") and _XML_ROOT.search(head):
        return Detected(KINDS["nvsmi-xml"], len(_XML_GPU.findall(text)), "GPU")
    if stripped.startswith(("{", "[")):
        if _DCGM.search(head):
            return Detected(KINDS["dcgm-diag"])
        if _JSON_LINE.search(head):
            lines = sum(1 for ln in text.splitlines() if ln.startswith("{"))
            return Detected(KINDS["journal-json"], lines, "record")
        if stripped.startswith("{") and _DOCKER_DAEMON.search(head):
            return Detected(KINDS["docker-daemon"])
    if _CDI.search(head) and re.search(r"^containerEdits:|^devices:", head, re.M):
        return Detected(KINDS["cdi-spec"])
    if "NvLink Link Status" in head or _DCGM_NVLINK.search(head):
        return Detected(KINDS["dcgm-nvlink"], len(_DCGM_NVLINK.findall(text)), "GPU")
    if _DCGM_TABLE.search(head):
        return Detected(KINDS["dcgm-diag-text"])
    if _NVSMI_LOG in head:
        return Detected(KINDS["nvsmi-q"], len(_Q_GPU.findall(text)), "GPU")
    if _TABLE_HEAD.search(head):
        return Detected(KINDS["nvsmi-table"], len(_TABLE_GPU.findall(text)), "GPU")
    if _NVLINK_GPU.search(head) and (_NVLINK_LINK.search(head) or _NVLINK_NONE.search(head)):
        return Detected(KINDS["nvlink"], len(_NVLINK_GPU.findall(text)), "GPU")
    if _TOPO_HEAD.search(head) or (_TOPO_LEGEND.search(head) and _TOPO_GPU.search(head)):
        return Detected(KINDS["topo"], len(_TOPO_GPU.findall(text)), "GPU")
    if _IBSTAT_CA.search(head) and _IBSTAT_PORT.search(head):
        return Detected(KINDS["ibstat"], len(_IBSTAT_CA.findall(text)), "HCA")
    if _IBSTATUS.search(head):
        return Detected(KINDS["ibstatus"], len(_IBSTATUS.findall(text)), "port")
    if _DEVINFO.search(head) and _DEVINFO_PORT.search(head):
        return Detected(KINDS["ibv_devinfo"], len(_DEVINFO.findall(text)), "HCA")
    if _LDCONFIG.search(head):
        return Detected(KINDS["ldconfig"])
    if _NVCC.search(head):
        return Detected(KINDS["nvcc"])
    if _SMI_FAILED.search(stripped[:2000]) and len(stripped) < 2000:
        return Detected(KINDS["nvsmi-failed"])
    if _mostly(head, _LSPCI, headers_only=True):
        return Detected(KINDS["lspci"], len(_LSPCI_NVIDIA_GPU.findall(text)), "NVIDIA GPU")
    if _mostly(head, _FM_LINE, headers_only=True):
        return Detected(KINDS["fm-log"], text.count("\n") + 1, "line")
    if _mostly(head, _LOG_LINE, headers_only=True):  # continuation lines: a record's tail
        return Detected(KINDS["kernel-log"], text.count("\n") + 1, "line")
    return None


def is_markdown(head: str) -> bool:
    """Whether the text is a Markdown document (a title, then fenced blocks of quotes)."""
    return head.startswith("# ") and len(_FENCE.findall(head)) >= 2


def _mostly(head: str, line: re.Pattern[str], *, headers_only: bool = False) -> bool:
    """Whether most sampled lines (the unindented ones, for ``headers_only``) match ``line``."""
    seen = hits = 0
    for raw in head.splitlines():
        if not raw.strip() or (headers_only and raw[:1].isspace()):
            continue
        seen += 1
        hits += line.match(raw) is not None
        if seen >= _LOG_SAMPLE:
            break
    return seen > 0 and hits >= max(1, seen * _LOG_SHARE)
