"""The tools that state a component's version: modinfo, nvidia-ctk, Fabric Manager, dcgmi,
ofed_info; the Fabric Manager version from a real log recording."""

from __future__ import annotations

import pytest

from dolmen.stack.sources import (
    module_flavour,
    parse_ctk_version,
    parse_dcgmi_version,
    parse_fm_version,
    parse_modinfo,
    parse_ofed_info,
)
from tests.conftest import recording

# The shape of `modinfo nvidia` for the open modules, signed by a DKMS MOK key.
MODINFO_OPEN_SIGNED = """\
filename:       /lib/modules/6.8.0-45-generic/updates/dkms/nvidia.ko.zst
import_ns:      DMA_BUF
alias:          char-major-195-*
version:        550.127.05
supported:      external
license:        Dual MIT/GPL
firmware:       nvidia/550.127.05/gsp_ga10x.bin
srcversion:     3F1E04C6E2AB4E34B7C0A1D
depends:
name:           nvidia
vermagic:       6.8.0-45-generic SMP preempt mod_unload modversions
sig_id:         PKCS#7
signer:         gpu-node-01 Secure Boot Module Signature key
sig_key:        4A:CF:62:1B:0D:92:7E:60:11:28
sig_hashalgo:   sha512
signature:      30:82:02:A4:06:09:2A:86
parm:           NVreg_OpenRmEnableUnsupportedGpus:int
"""
MODINFO_PROPRIETARY_UNSIGNED = """\
filename:       /lib/modules/5.15.0-126-generic/kernel/drivers/video/nvidia.ko
version:        535.183.01
license:        NVIDIA
name:           nvidia
vermagic:       5.15.0-126-generic SMP mod_unload modversions
"""


def test_modinfo_open_signed() -> None:
    info = parse_modinfo(MODINFO_OPEN_SIGNED)
    assert info["version"] == "550.127.05" and info["sig_key"].startswith("4A:CF")
    assert info["signer"] == "gpu-node-01 Secure Boot Module Signature key"
    assert module_flavour(info["license"]) == "open"
    assert "depends" not in info  # empty values are not fields


def test_modinfo_proprietary_unsigned_and_junk() -> None:
    info = parse_modinfo(MODINFO_PROPRIETARY_UNSIGNED)
    assert module_flavour(info["license"]) == "proprietary" and "signer" not in info
    assert parse_modinfo("modinfo: ERROR: Module nvidia not found.\n") == {}
    assert (
        parse_modinfo("") == {} and module_flavour(None) is None and module_flavour("BSD") is None
    )


@pytest.mark.parametrize(
    ("parse", "text", "want"),
    [
        (
            parse_ctk_version,
            "NVIDIA Container Toolkit CLI version 1.14.6\ncommit: 5605d19\n",
            "1.14.6",
        ),
        (parse_ctk_version, "nvidia-ctk: command not found", None),
        (parse_fm_version, "Fabric Manager version is : 550.54.15\n", "550.54.15"),
        (parse_fm_version, "Fabric Manager version is", None),
        (parse_dcgmi_version, "dcgmi  version: 3.3.5\n", "3.3.5"),
        (parse_dcgmi_version, "", None),
        (parse_ofed_info, "MLNX_OFED_LINUX-23.10-1.1.9.0:\n", ("MLNX_OFED", "23.10-1.1.9.0")),
        (parse_ofed_info, "OFED-internal-24.04-0.6.6:\n", ("DOCA-OFED", "24.04-0.6.6")),
        (parse_ofed_info, "ofed_info: not found\n", None),
    ],
)
def test_tool_versions(parse: object, text: str, want: object) -> None:
    assert callable(parse)
    assert parse(text) == want


def test_fabric_manager_version_from_its_real_log() -> None:
    text = recording("fabric-manager/gpud__fabric-manager.0.log").read_text(errors="replace")
    assert parse_fm_version(text) == "535.161.08"
