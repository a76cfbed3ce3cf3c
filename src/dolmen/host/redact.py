"""What a snapshot never takes off the machine: secret paths and credential-like variables.

A deny list of host paths (shadow files, keys, tokens, process environments)
and an allow list of environment variables, minus any whose name looks like a
credential.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

# Never captured, whatever a collector reads (shell patterns on host-relative paths).
SECRET_PATHS = (
    "etc/shadow*",
    "etc/gshadow*",
    "etc/security/opasswd",
    "etc/sudoers*",
    "etc/ssh/*key*",
    "etc/ssl/private/*",
    "etc/munge/*",
    "etc/dolmen/keys/*",
    "var/lib/dolmen/keys/*",
    "root/*",
    "home/*",
    "proc/*/environ",
    "proc/*/cmdline",
    "proc/kcore",
    "proc/kallsyms",
    "sys/firmware/efi/efivars/*" + "-*",  # except SecureBoot/SetupMode, allowed below
    "*.key",
    "*.pem",
    "*token*",
    "*secret*",
    "*password*",
    "*kubeconfig*",
)
SECRET_ALLOW = ("sys/firmware/efi/efivars/SecureBoot-*", "sys/firmware/efi/efivars/SetupMode-*")

# Environment variables worth a support engineer's eyes; everything else is dropped.
ENV_ALLOW = re.compile(
    r"^(PATH|LD_LIBRARY_PATH|LD_PRELOAD|CUDA_[A-Z_]+|NVIDIA_[A-Z_]+|NCCL_[A-Z_]+|"
    r"SLURM_[A-Z_]+|OMPI_MCA_[a-z_]+|UCX_[A-Z_]+|PYTHONPATH|VIRTUAL_ENV|CONDA_PREFIX|"
    r"TORCH_[A-Z_]+|HF_HOME|LANG|LC_ALL)$"
)
ENV_DENY = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL|AUTH)", re.I)

# Home folders are private, but that a PATH entry like /root/.cargo/bin exists is not:
# existence-only captures (an empty placeholder, no bytes) may enter them.
_PRIVATE_TREES = ("root/*", "home/*")


def is_secret(rel: str, how: str = "read") -> bool:
    """Whether a host path must never leave the machine (its bytes, or for ``how="exists"``
    even its name)."""
    rel = rel.strip("/")
    if any(fnmatch.fnmatch(rel, p) for p in SECRET_ALLOW):
        return False
    patterns: tuple[str, ...] = SECRET_PATHS
    if how in ("exists", "link"):
        patterns = tuple(p for p in SECRET_PATHS if p not in _PRIVATE_TREES)
    return any(fnmatch.fnmatch(rel, p) for p in patterns)


def safe_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed variables, minus any whose name looks like a credential."""
    return {k: v for k, v in sorted(env.items()) if ENV_ALLOW.match(k) and not ENV_DENY.search(k)}
