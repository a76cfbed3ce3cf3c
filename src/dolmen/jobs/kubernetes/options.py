"""What a job file's ``[kubernetes]`` table says about the pods (docs/jobs-kubernetes.md).

A multi-node NCCL job needs more of a pod than a GPU count: a /dev/shm larger than the
container runtime's 64 MiB default (NCCL's intra-node transport and PyTorch's data
loaders live there), the RDMA devices and the secondary networks of the fabric, the
IPC_LOCK capability that lets verbs pin memory, the GPU nodes' taints tolerated and their
GPU-feature-discovery labels selected, and a gang scheduler that starts every pod or none.
The table holds those; ``check`` refuses a value the API server would refuse, naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.errors import UsageError

# Kubernetes' own grammars (apimachinery validation): a qualified name (label keys,
# extended resource names), a label value, a DNS-1123 label.
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
QUALIFIED = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
EXTENDED = re.compile(rf"^{_PREFIX}/{_NAME}$")  # rdma/hca_shared_devices_a, nvidia.com/hostdev
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# A Multus network: [namespace/]name[@interface] (k8s.v1.cni.cncf.io/networks).
NETWORK = re.compile(
    r"^([a-z0-9][-a-z0-9]{0,62}/)?[a-z0-9][-a-z0-9.]{0,252}(@[A-Za-z0-9_.-]{1,15})?$"
)
QUANTITY = re.compile(r"^[0-9]{1,12}(Ki|Mi|Gi|Ti|K|M|G|T)?$")
OPERATORS = ("Exists", "Equal")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_KEYS = ("key", "operator", "value", "effect")
GANGS = ("kueue", "volcano")
WORKLOADS = ("jobset", "job")
# Set elsewhere (gpus_per_node, cpus_per_task, mem): a second value here would disagree.
OWN_RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "ephemeral-storage")


@dataclass(frozen=True)
class PodOptions:
    """The ``[kubernetes]`` table of a job file; every field optional (module docstring)."""

    shm_size: str | None = None  # /dev/shm as a memory emptyDir of this size (default 16Gi)
    resources: Mapping[str, int] = field(default_factory=dict)  # rdma/..., nvidia.com/hostdev
    networks: tuple[str, ...] = ()  # Multus: k8s.v1.cni.cncf.io/networks
    ipc_lock: bool | None = None  # default: on when resources or networks are asked for
    tolerations: tuple[Mapping[str, str], ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    gpu_product: str | None = None  # nodeSelector nvidia.com/gpu.product (GFD's label)
    gang: str | None = None  # kueue | volcano
    queue: str | None = None  # the Kueue LocalQueue or the Volcano queue
    ttl_s: int | None = None  # ttlSecondsAfterFinished (default a day)
    workload: str | None = None  # jobset | job (default: JobSet when the cluster has it)

    def check(self) -> None:
        """Refuse what the API server would refuse (UsageError naming the key)."""
        if self.shm_size is not None and not QUANTITY.match(self.shm_size):
            raise UsageError(f"[kubernetes] shm_size {self.shm_size!r} is not a size like 16Gi")
        for name, count in self.resources.items():
            if name in OWN_RESOURCES or not EXTENDED.match(name):
                raise UsageError(
                    f"[kubernetes] resources: {name!r} is not an extended resource",
                    hint="a domain/name such as rdma/rdma_shared_device_a or nvidia.com/hostdev;"
                    " GPUs, CPU and memory have their own keys",
                )
            if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 1024:
                raise UsageError(f"[kubernetes] resources: {name} must be a count 1..1024")
        for net in self.networks:
            if not isinstance(net, str) or not NETWORK.match(net):
                raise UsageError(
                    f"[kubernetes] networks: {net!r} is not a Multus network",
                    hint="[namespace/]name[@interface], e.g. sriov-ib0 or net/roce@net1",
                )
        for i, tol in enumerate(self.tolerations):
            _check_toleration(i, tol)
        selector = dict(self.node_selector)
        for key, value in selector.items():
            if not QUALIFIED.match(key) or not isinstance(value, str):
                raise UsageError(f"[kubernetes] node_selector: {key!r} is not a label key")
            if not LABEL_VALUE.match(value):
                raise UsageError(f"[kubernetes] node_selector: {value!r} is not a label value")
        if self.gpu_product is not None and not LABEL_VALUE.match(self.gpu_product):
            raise UsageError(
                f"[kubernetes] gpu_product {self.gpu_product!r} is not a label value",
                hint="as GPU feature discovery writes it: NVIDIA-H100-80GB-HBM3",
            )
        if self.gang is not None and self.gang not in GANGS:
            raise UsageError(f"[kubernetes] gang {self.gang!r}: valid: {', '.join(GANGS)}")
        if self.queue is not None and not DNS_LABEL.match(self.queue):
            raise UsageError(f"[kubernetes] queue {self.queue!r} is not a DNS-1123 name")
        if self.gang == "kueue" and self.queue is None:
            raise UsageError(
                "[kubernetes] gang = 'kueue' needs a queue",
                hint="queue = the LocalQueue of the namespace",
            )
        if self.workload is not None and self.workload not in WORKLOADS:
            raise UsageError(
                f"[kubernetes] workload {self.workload!r}: valid: {', '.join(WORKLOADS)}"
            )
        if self.ttl_s is not None and not 0 <= self.ttl_s <= 366 * 86400:
            raise UsageError("[kubernetes] ttl must be 0 to 366 days")


def _check_toleration(i: int, tol: Mapping[str, str]) -> None:
    where = f"[kubernetes] tolerations[{i}]"
    stray = sorted(set(tol) - set(TOLERATION_KEYS))
    if stray:
        raise UsageError(f"{where}: unknown key {stray[0]!r}; valid: {', '.join(TOLERATION_KEYS)}")
    if not all(isinstance(v, str) for v in tol.values()):
        raise UsageError(f"{where}: values must be text")
    op = tol.get("operator", "Equal")
    if op not in OPERATORS:
        raise UsageError(f"{where}: operator {op!r}; valid: {', '.join(OPERATORS)}")
    if "effect" in tol and tol["effect"] not in EFFECTS:
        raise UsageError(f"{where}: effect {tol['effect']!r}; valid: {', '.join(EFFECTS)}")
    if "key" in tol and not QUALIFIED.match(tol["key"]):
        raise UsageError(f"{where}: {tol['key']!r} is not a taint key")
    if op == "Exists" and tol.get("value"):
        raise UsageError(f"{where}: operator Exists takes no value")
    if "value" in tol and not LABEL_VALUE.match(tol["value"]):
        raise UsageError(f"{where}: {tol['value']!r} is not a taint value")
    if op == "Equal" and "key" not in tol:
        raise UsageError(f"{where}: operator Equal needs a key")
