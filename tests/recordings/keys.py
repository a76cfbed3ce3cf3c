"""The tree key each kind of recording belongs under (DESIGN.md: ``commands/<command_key>``
for a command's output, the host path for a file)."""

from __future__ import annotations

from dolmen.host import command_key


def cmd(argv: str) -> str:
    return "commands/" + command_key(argv.split(" "))


XML = cmd("nvidia-smi -q -x")
QUERY = cmd("nvidia-smi -q")
TABLE = cmd("nvidia-smi")
NVLINK = cmd("nvidia-smi nvlink -s")
TOPO = cmd("nvidia-smi topo -m")
IBSTAT = cmd("ibstat")
IBSTATUS = cmd("ibstatus")
DMESG = "commands/dmesg"  # the kernel log, whatever command printed it (kernel_log.TREE_KEY)
LSPCI_VVV = cmd("lspci -vvv")
LSPCI_NN = cmd("lspci -nn")
LSPCI = cmd("lspci")
DMIDECODE = cmd("dmidecode")
LDCONFIG = cmd("ldconfig -p")
NVCC = cmd("nvcc --version")  # `nvcc -V` prints the same
DCGM_NVLINK = cmd("dcgmi nvlink --link-status")
DCGM_DIAG_2 = cmd("dcgmi diag -r 2")
DCGM_DIAG_3 = cmd("dcgmi diag -r 3")
DCGM_DIAG_2_G7 = cmd("dcgmi diag -r 2 -g 7")
LD_SO_CACHE = "etc/ld.so.cache"
DAEMON_JSON = "etc/docker/daemon.json"
CDI_SPEC = "etc/cdi/nvidia.yaml"
FM_LOG = "var/log/fabricmanager.log"  # nvidia-fabricmanager's default LOG_FILE_NAME
PSTORE_ARCHIVE = "var/lib/systemd/pstore"  # systemd-pstore's <id>/dmesg.txt (GPUd reads it)
PSTORE = "sys/fs/pstore"
IB_CLASS = "sys/class/infiniband"
