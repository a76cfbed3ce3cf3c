"""The DGX OS host settings and warm caches, planned, applied, verified and rolled back on
host trees built from the real recordings (tests/tune/trees.py), with hostile inputs."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dolmen.demo.build import write_pci
from dolmen.host import CommandResult
from dolmen.host.tree import TreeHost
from dolmen.tune.engine import apply_plan, rollback
from dolmen.tune.journal import open_journal, tune_dir
from dolmen.tune.model import Action, Change
from dolmen.tune.planner import plan_profile
from dolmen.tune.profile import load_profile
from dolmen.tune.verify import verify_journal
from tests.conftest import recording
from tests.tune.trees import snapshot

MOUNTS = (
    "/dev/vda1 / ext4 rw,relatime 0 0\n"
    "/dev/md0 /raid ext4 rw,relatime 0 0\n"
    "nas:/export/home /home nfs4 rw,relatime,vers=4.2 0 0\n"
    "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"
)
DAEMON = '{\n  "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}},\n  "data-root": "/raid/docker"\n}\n'


def profile(config: Path, body: str, name: str = "kinds") -> str:
    (config / "profiles" / f"{name}.toml").write_text(
        f'[profile]\ndescription = "test"\npersist = false\n{body}'
    )
    return name


def write(root: Path, rel: str, text: str, mode: int = 0o644) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    p.chmod(mode)


def plan_rows(host: TreeHost, name: str) -> list[Change]:
    return list(plan_profile(host, load_profile(name)).changes)


def apply_verify_rollback(host: TreeHost, name: str) -> tuple[list[Change], list[Change]]:
    """Apply, verify (every row in sync or pending), roll back; the rows of both."""
    plan = plan_profile(host, load_profile(name))
    res = apply_plan(host, plan, tune_dir(host))
    assert res.ok, res.error
    view = open_journal(tune_dir(host))
    assert view is not None
    rows = list(verify_journal(host, view).rows)
    assert all(r.action in (Action.OK, Action.PENDING) for r in rows), rows
    back = rollback(host, view, tune_dir(host), reason="test")
    assert back.complete, [r.note for r in back.not_back]
    return list(plan.changes), rows


# --- [caches] ---------------------------------------------------------------------------------
def test_caches_on_the_data_mount_apply_verify_rollback(host_tree: Path, dolmen_dirs: Path) -> None:
    write(host_tree, "proc/self/mounts", MOUNTS)
    before = snapshot(host_tree)
    name = profile(dolmen_dirs, '[caches]\nfolder = { value = "auto", source = "test" }\n')
    host = TreeHost(host_tree)
    changes = plan_rows(host, name)
    assert [c.target.name for c in changes] == [
        "/raid/dolmen-cache (cache root)",
        "/etc/profile.d/90-dolmen-caches.sh",
    ]
    assert "filesystem on ext4 (/raid)" in changes[0].notes
    assert any("torch.backends.cudnn.benchmark = True" in n for n in changes[1].notes)
    assert changes[1].effect.value == "restart"

    plan = plan_profile(host, load_profile(name))
    assert apply_plan(host, plan, tune_dir(host)).ok
    root = host_tree / "raid/dolmen-cache"
    assert root.is_dir() and root.stat().st_mode & 0o7777 == 0o1777
    script = (host_tree / "etc/profile.d/90-dolmen-caches.sh").read_text()
    assert 'export CUDA_CACHE_PATH="$_dolmen_cache/cuda"' in script
    assert "export CUDA_CACHE_MAXSIZE=4294967296" in script and "unset CUDA_CACHE_DISABLE" in script
    assert "export TORCHINDUCTOR_FX_GRAPH_CACHE=1" in script
    # users' caches land inside; rollback takes the folder back with them (they are caches)
    (root / "1000/inductor").mkdir(parents=True)
    (root / "1000/inductor/fxgraph").write_text("compiled")
    view = open_journal(tune_dir(host))
    assert view is not None
    assert {r.action for r in verify_journal(host, view).rows} == {Action.OK}
    root.chmod(0o755)  # someone loosens it: drift, and the rollback still restores
    assert [r.target.name for r in verify_journal(host, view).drift] == [
        "/raid/dolmen-cache (cache root)"
    ]
    assert rollback(host, view, tune_dir(host), reason="test").complete
    assert snapshot(host_tree) == before


@pytest.mark.parametrize(
    ("folder", "why"),
    [
        ("/home/cache", "nfs4 (/home), a network filesystem"),
        ("/dev/shm/cache", None),  # refused at load: /dev
        ("/tmp/cache", None),
    ],
)
def test_caches_refuse_network_memory_and_aged_folders(
    host_tree: Path, dolmen_dirs: Path, folder: str, why: str | None
) -> None:
    write(host_tree, "proc/self/mounts", MOUNTS)
    name = profile(dolmen_dirs, f'[caches]\nfolder = "{folder}"\n')
    if why is None:
        with pytest.raises(Exception, match="emptied by the system"):
            load_profile(name)
        return
    (row,) = plan_rows(TreeHost(host_tree), name)
    assert row.action is Action.SKIP and why in row.reason


def test_caches_judge_tmpfs_and_say_when_the_mount_table_is_unread(
    host_tree: Path, dolmen_dirs: Path
) -> None:
    write(host_tree, "proc/self/mounts", MOUNTS + "tmpfs /scratch tmpfs rw 0 0\n")
    (row,) = plan_rows(
        TreeHost(host_tree), profile(dolmen_dirs, '[caches]\nfolder = "/scratch/c"\n')
    )
    assert row.action is Action.SKIP and "in memory: emptied at every boot" in row.reason
    (host_tree / "proc/self/mounts").unlink()
    rows = plan_rows(TreeHost(host_tree), profile(dolmen_dirs, '[caches]\nfolder = "auto"\n', "b"))
    assert rows[0].target.name == "/var/cache/dolmen (cache root)"  # no /raid seen: fallback
    assert any("not judged" in n for n in rows[0].notes)


def test_caches_name_what_undoes_them(host_tree: Path, dolmen_dirs: Path) -> None:
    write(host_tree, "etc/environment", 'PATH="/usr/bin"\nCUDA_CACHE_DISABLE=1\n')
    write(host_tree, "etc/profile.d/zz-site.sh", "export TRITON_CACHE_DIR=/home/$USER/t\n")
    rows = plan_rows(TreeHost(host_tree), profile(dolmen_dirs, '[caches]\nfolder = "/srv/c"\n'))
    notes = " ".join(rows[1].notes)
    assert "line 2 of /etc/environment sets CUDA_CACHE_DISABLE=1" in notes
    assert "/etc/profile.d/zz-site.sh also sets TRITON_CACHE_DIR" in notes


def test_caches_never_replace_a_file_or_a_fifo(host_tree: Path, dolmen_dirs: Path) -> None:
    write(host_tree, "srv/c", "not a folder")
    (host_tree / "etc/profile.d").mkdir()
    os.mkfifo(host_tree / "etc/profile.d/90-dolmen-caches.sh")
    rows = plan_rows(TreeHost(host_tree), profile(dolmen_dirs, '[caches]\nfolder = "/srv/c"\n'))
    assert rows[0].action is Action.SKIP and "exists and is not a folder" in rows[0].reason
    assert rows[1].action is Action.SKIP and "unreadable" in rows[1].reason


def test_caches_never_open_a_folder_that_holds_files_to_every_user(
    host_tree: Path, dolmen_dirs: Path
) -> None:
    """folder = "/etc" would chmod /etc 1777: anyone could add files there."""
    (host_tree / "srv/empty").mkdir(parents=True)
    (host_tree / "srv/ready").mkdir(mode=0o755)
    os.chmod(host_tree / "srv/ready", 0o1777)
    write(host_tree, "srv/ready/0/cuda/x", "a cache of an earlier apply")
    before = snapshot(host_tree)
    rows = plan_rows(TreeHost(host_tree), profile(dolmen_dirs, '[caches]\nfolder = "/etc"\n'))
    assert [r.action for r in rows] == [Action.SKIP]  # the login script is refused with it
    assert "/etc already holds files (mode 755)" in rows[0].reason
    assert "name a new or empty folder" in rows[0].reason
    host = TreeHost(host_tree)
    assert apply_plan(host, plan_profile(host, load_profile("kinds")), tune_dir(host)).ok
    assert snapshot(host_tree) == before and (host_tree / "etc").stat().st_mode & 0o7777 == 0o755
    for folder in ("/srv/empty", "/srv/ready"):  # empty, or already the cache root: fine
        name = profile(dolmen_dirs, f'[caches]\nfolder = "{folder}"\n', "ok")
        assert all(r.action is not Action.SKIP for r in plan_rows(host, name))


def test_the_login_script_makes_each_users_own_folder_and_refuses_anothers(
    tmp_path: Path,
) -> None:
    """The generated script, run by a real POSIX shell (dash, Ubuntu's /bin/sh)."""
    from dolmen.tune.settings.caches import env_script

    sh = shutil.which("dash") or shutil.which("sh")
    assert sh is not None
    root = tmp_path / "cache"
    root.mkdir()
    root.chmod(0o1777)
    script = tmp_path / "s.sh"
    script.write_text(env_script(str(root), ("cuda", "inductor", "tensorrt"), 1 << 30))
    import subprocess

    probe = f'. {script}; echo "$CUDA_CACHE_PATH|$TORCHINDUCTOR_CACHE_DIR|${{CUDA_CACHE_DISABLE-unset}}"'
    env = {"PATH": os.environ["PATH"], "CUDA_CACHE_DISABLE": "1"}
    out = subprocess.run([sh, "-c", probe], env=env, capture_output=True, text=True, check=True)
    uid = os.getuid()
    assert out.stdout.strip() == f"{root}/{uid}/cuda|{root}/{uid}/inductor|unset"
    assert (root / str(uid)).stat().st_mode & 0o777 == 0o700
    assert (root / str(uid) / "tensorrt").is_dir()
    # a folder of that name that is a link (someone else's planting): the defaults stay
    shutil.rmtree(root / str(uid))
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", root / str(uid))
    out = subprocess.run([sh, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "||1"


# --- [docker] ---------------------------------------------------------------------------------
def test_docker_shm_is_merged_keeping_every_key_and_restored_byte_for_byte(
    host_tree: Path, dolmen_dirs: Path
) -> None:
    write(host_tree, "etc/docker/daemon.json", DAEMON, 0o600)
    before = snapshot(host_tree)
    name = profile(dolmen_dirs, '[docker]\n"default-shm-size" = "1G"\n')
    host = TreeHost(host_tree)
    plan = plan_profile(host, load_profile(name))
    assert apply_plan(host, plan, tune_dir(host)).ok
    path = host_tree / "etc/docker/daemon.json"
    data = json.loads(path.read_text())
    assert data == {**json.loads(DAEMON), "default-shm-size": "1G"}
    assert list(data) == ["runtimes", "data-root", "default-shm-size"]
    assert path.stat().st_mode & 0o777 == 0o600
    view = open_journal(tune_dir(host))
    assert view is not None and not verify_journal(host, view).drift
    assert rollback(host, view, tune_dir(host), reason="test").complete
    assert snapshot(host_tree) == before


@pytest.mark.parametrize("made", ["before the plan", "after the plan"])
def test_docker_never_writes_through_a_symlinked_daemon_json(
    host_tree: Path, dolmen_dirs: Path, made: str
) -> None:
    """daemon.json -> /srv/docker/daemon.json (absent): a write through the link would make
    a file there that rollback (which removes the link) leaves; refused, the tree unchanged."""
    (host_tree / "etc/docker").mkdir(parents=True)
    link = host_tree / "etc/docker/daemon.json"
    name = profile(dolmen_dirs, '[docker]\n"default-shm-size" = "1G"\n')
    host = TreeHost(host_tree)
    if made == "before the plan":
        os.symlink("/srv/docker/daemon.json", link)
    plan = plan_profile(host, load_profile(name))
    if made == "after the plan":
        os.symlink("/srv/docker/daemon.json", link)
    before = snapshot(host_tree)
    res = apply_plan(host, plan, tune_dir(host))
    if made == "before the plan":
        (row,) = plan.changes
        assert row.action is Action.SKIP and row.reason == (
            "/etc/docker/daemon.json is a symbolic link (to /srv/docker/daemon.json): "
            "dolmen never writes through a link; make it a file"
        )
    else:
        assert not res.ok and "is a symbolic link" in str(res.error)
    assert snapshot(host_tree) == before and os.readlink(link) == "/srv/docker/daemon.json"
    assert not (host_tree / "srv/docker").exists()


def test_drop_ins_never_write_through_a_symlink(host_tree: Path, dolmen_dirs: Path) -> None:
    """Every whole-file kind (DropIn.read): a link where the file goes is skipped."""
    (host_tree / "etc/modules-load.d").mkdir(parents=True)
    os.symlink("/srv/m.conf", host_tree / "etc/modules-load.d/90-dolmen-nvidia-peermem.conf")
    (row,) = plan_rows(
        TreeHost(host_tree), profile(dolmen_dirs, '[modules]\n"nvidia-peermem" = "load"\n')
    )
    assert row.action is Action.SKIP and "is a symbolic link (to /srv/m.conf)" in row.reason


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"data-root": "/raid/docker",', "not JSON (line 1, column 30"),
        ("[1, 2]", "a JSON list, not an object"),
        ('{"a": 1, "a": 2}', "key 'a' appears twice"),
    ],
)
def test_docker_refuses_a_daemon_json_it_cannot_merge(
    host_tree: Path, dolmen_dirs: Path, text: str, why: str
) -> None:
    write(host_tree, "etc/docker/daemon.json", text)
    name = profile(dolmen_dirs, '[docker]\n"default-shm-size" = "1G"\n')
    (row,) = plan_rows(TreeHost(host_tree), name)
    assert row.action is Action.SKIP and why in row.reason and "fix it first" in row.reason


def test_docker_refuses_an_option_dockerd_already_gets_as_a_flag(
    host_tree: Path, dolmen_dirs: Path
) -> None:
    unit = "[Service]\nExecStart=/usr/bin/dockerd -H fd:// --containerd=/run/containerd.sock\n"
    write(host_tree, "lib/systemd/system/docker.service", unit)
    write(
        host_tree,
        "etc/systemd/system/docker.service.d/nv-docker-options.conf",
        "[Service]\nExecStart=\nExecStart=/usr/bin/dockerd -H fd:// --default-shm-size=1G\n",
    )
    name = profile(dolmen_dirs, '[docker]\n"default-shm-size" = "2G"\n')
    (row,) = plan_rows(TreeHost(host_tree), name)
    assert row.action is Action.SKIP and "nv-docker-options.conf passes --default-shm-size" in (
        row.reason
    )
    # no docker at all: skipped, saying so
    shutil.rmtree(host_tree / "etc/systemd/system/docker.service.d")
    (host_tree / "lib/systemd/system/docker.service").unlink()
    (row,) = plan_rows(TreeHost(host_tree), name)
    assert row.action is Action.SKIP and "Docker is not installed" in row.reason


# --- [modules] --------------------------------------------------------------------------------
def test_module_options_and_loads_are_pending_until_the_kernel_has_them(
    host_tree: Path, dolmen_dirs: Path
) -> None:
    write(host_tree, "sys/module/nvidia/parameters/NVreg_EnableGpuFirmware", "18\n")
    write(
        host_tree, "etc/modprobe.d/nvidia-site.conf", "options nvidia NVreg_EnableGpuFirmware=0\n"
    )
    before = snapshot(host_tree)
    body = '[modules]\n"nvidia-peermem" = "load"\n"nvidia.NVreg_EnableGpuFirmware" = 1\n'
    host = TreeHost(host_tree)
    changes, rows = apply_verify_rollback(host, profile(dolmen_dirs, body))
    assert [c.target.path for c in changes] == [
        "etc/modules-load.d/90-dolmen-nvidia-peermem.conf",
        "etc/modprobe.d/90-dolmen-nvidia-NVreg_EnableGpuFirmware.conf",
    ]
    assert any("nvidia-site.conf sets NVreg_EnableGpuFirmware=0 and is read later" in n
               for n in changes[1].notes)  # fmt: skip
    assert [r.action for r in rows] == [Action.PENDING, Action.PENDING]
    assert "running kernel: NVreg_EnableGpuFirmware=18" in rows[1].notes
    assert snapshot(host_tree) == before  # the folders apply made are gone too
    # the kernel loads both with the value: in effect
    write(host_tree, "sys/module/nvidia/parameters/NVreg_EnableGpuFirmware", "1\n")
    write(host_tree, "sys/module/nvidia_peermem/refcnt", "0\n")
    plan = plan_profile(host, load_profile("kinds"))
    assert apply_plan(host, plan, tune_dir(host)).ok
    view = open_journal(tune_dir(host))
    assert view is not None
    assert {r.action for r in verify_journal(host, view).rows} == {Action.OK}


def test_module_drop_in_refuses_a_fifo(host_tree: Path, dolmen_dirs: Path) -> None:
    (host_tree / "etc/modules-load.d").mkdir(parents=True)
    os.mkfifo(host_tree / "etc/modules-load.d/90-dolmen-nvidia-peermem.conf")
    (row,) = plan_rows(
        TreeHost(host_tree), profile(dolmen_dirs, '[modules]\n"nvidia-peermem" = "load"\n')
    )
    assert row.action is Action.SKIP and "unreadable" in row.reason


# --- [pcie_power] -----------------------------------------------------------------------------
def test_gpu_parent_bridges_power_on_with_a_boot_line(host_tree: Path, dolmen_dirs: Path) -> None:
    """An HGX-like path: root port 15:01.0, switch 16:00.0 -> 17:01.0, GPU 19:00.0 (the
    recorded H100 host's topology, lspci -vvv), and an NVMe drive on the same root port."""
    bridges = ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"]
    for i, bdf in enumerate(bridges):
        write_pci(
            host_tree,
            {
                "bdf": bdf,
                "bridges": bridges[:i],
                "device": "0x352a",
                "class": "0x060400",
                "vendor": "0x8086",
            },
        )
    write_pci(
        host_tree,
        {"bdf": "0000:19:00.0", "bridges": bridges, "device": "0x2330", "class": "0x030200"},
    )
    write_pci(
        host_tree,
        {
            "bdf": "0000:18:00.0",
            "bridges": bridges[:1],
            "device": "0x51c3",
            "class": "0x010802",
            "vendor": "0x1344",
        },
    )
    for i in range(len(bridges)):
        dev = host_tree / "sys/devices/pci0000:15" / "/".join(bridges[: i + 1])
        (dev / "power").mkdir()
        (dev / "power/control").write_text("auto\n")
    before = snapshot(host_tree)
    name = "power"
    (dolmen_dirs / "profiles/power.toml").write_text(
        '[profile]\ndescription = "t"\n[pcie_power]\ngpu_bridges = "on"\n'
    )
    host = TreeHost(host_tree)
    changes, _ = apply_verify_rollback(host, name)
    power = [c for c in changes if c.target.setting == "pcie_power"]
    assert [c.target.name for c in power] == [
        f"{b} (above GPU 0000:19:00.0) power/control" for b in bridges
    ]
    (boot,) = [c for c in changes if c.target.setting == "boot"]
    assert "w /sys/bus/pci/devices/0000:17:01.0/power/control - - - - on" in boot.target.desired
    assert snapshot(host_tree) == before


# --- [pcie_acs] -------------------------------------------------------------------------------
def acs_tree(root: Path, virt: str) -> None:
    lspci = recording("lspci/gpud__lspci-vvv").read_text()
    write(root, "commands/lspci%20-vvv", lspci)
    write(root, "commands/systemd-detect-virt%20--vm", f"{virt}\n")
    if virt == "none":
        write(root, "commands/systemd-detect-virt%20--vm.rc", "1\n")


def test_acs_plan_on_the_recorded_h100_hgx(host_tree: Path, dolmen_dirs: Path) -> None:
    acs_tree(host_tree, "none")
    rows = plan_rows(
        TreeHost(host_tree), profile(dolmen_dirs, '[pcie_acs]\ndownstream_ports = "disabled"\n')
    )
    # 38 switch downstream ports: 34 (Broadcom PEX890xx) already off, 4 (PMC-Sierra) on
    assert len(rows) == 38
    on = [r for r in rows if r.current != "0000"]
    assert [r.target.extra["bdf"] for r in on] == [f"0000:82:0{i}.0" for i in range(4)]
    assert {r.current for r in on} == {"001d"}  # SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+
    assert {r.action for r in on} == {Action.SKIP} and "cannot run setpci" in on[0].reason
    assert {r.action for r in rows if r not in on} == {Action.OK}


@pytest.mark.parametrize(("virt", "why"), [("kvm", "a virtual machine (kvm)"), ("", "cannot tell")])
def test_acs_is_refused_in_a_vm_or_where_it_cannot_tell(
    host_tree: Path, dolmen_dirs: Path, virt: str, why: str
) -> None:
    acs_tree(host_tree, virt)
    if not virt:
        (host_tree / "commands/systemd-detect-virt%20--vm").unlink()
        write(host_tree, "proc/cpuinfo", "processor\t: 0\n")  # no flags line, no DMI
    (row,) = plan_rows(
        TreeHost(host_tree), profile(dolmen_dirs, '[pcie_acs]\ndownstream_ports = "disabled"\n')
    )
    assert row.action is Action.SKIP and why in row.reason


def test_acs_without_root_says_so(host_tree: Path, dolmen_dirs: Path) -> None:
    """lspci run by a plain user prints ``<access denied>`` for every capability."""
    acs_tree(host_tree, "none")
    denied = "17:01.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)\n"
    denied += "\tCapabilities: <access denied>\n"
    write(host_tree, "commands/lspci%20-vvv", denied)
    (row,) = plan_rows(
        TreeHost(host_tree), profile(dolmen_dirs, '[pcie_acs]\ndownstream_ports = "disabled"\n')
    )
    assert row.action is Action.SKIP and "without root" in row.reason


# --- [net] -------------------------------------------------------------------------------------
class CountingTree(TreeHost):
    """A host tree that counts the commands a plan runs."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.ran: dict[str, int] = {}

    def run(self, argv: Sequence[str], **kw: Any) -> CommandResult:
        self.ran[" ".join(argv)] = self.ran.get(" ".join(argv), 0) + 1
        return super().run(argv, **kw)


def test_net_reads_the_interfaces_once_per_plan(host_tree: Path, dolmen_dirs: Path) -> None:
    links = "1: lo: <LOOPBACK,UP> mtu 65536\n2: ens1f0: <UP> mtu 9000\n3: ens2f0: <UP> mtu 9000\n"
    write(host_tree, "commands/ip%20-o%20link%20show", links)
    for name in ("ens1f0", "ens2f0"):
        write(
            host_tree,
            f"commands/ethtool%20-i%20{name}",
            "driver: mlx5_core\nbus-info: 0000:1a:00.0\n",
        )
        write(host_tree, f"commands/ethtool%20-g%20{name}", "Pre-set maximums:\nRX: 8192\nTX: 8192\n"
              "Current hardware settings:\nRX: 1024\nTX: 1024\n")  # fmt: skip
        write(host_tree, f"commands/ethtool%20-k%20{name}", "large-receive-offload: off\n")
    body = '[net]\nrx_ring = "max"\ntx_ring = "max"\nlro = "on"\n'
    host = CountingTree(host_tree)
    rows = plan_rows(host, profile(dolmen_dirs, body))
    assert sorted((r.target.name, r.target.desired) for r in rows) == [
        ("ens1f0 large-receive-offload", "on"), ("ens1f0 rx_ring", "8192"),
        ("ens1f0 tx_ring", "8192"), ("ens2f0 large-receive-offload", "on"),
        ("ens2f0 rx_ring", "8192"), ("ens2f0 tx_ring", "8192"),
    ]  # fmt: skip
    # the links and drivers once for the three entries, the maximums once per interface
    assert host.ran["ip -o link show"] == 1 and host.ran["ethtool -i ens1f0"] == 1
    assert host.ran["ethtool -g ens2f0"] == 1 + 2  # + each ring target's own read
