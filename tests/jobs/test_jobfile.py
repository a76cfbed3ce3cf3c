"""TOML job files: every documented key, and mistakes named with file, line and valid keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.errors import ConfigError, UsageError
from dolmen.jobs.jobfile import KEYS, KUBERNETES_KEYS, load_jobfile, merge, parse_jobfile
from dolmen.jobs.kubernetes.options import PodOptions

FULL = """\
name = "llama-ft"
command = ["python", "train.py", "--epochs", "3"]
backend = "slurm"
nodes = 2
gpus_per_node = 8
procs_per_node = 8
image = "nvcr.io/nvidia/pytorch:24.05-py3"
checkpoint_dir = "/shared/ckpt/llama-ft"
max_restarts = 3
time_limit = "12h"
account = "research"
partition = "gpu"
workdir = "/shared/src"
elastic = false
min_nodes = 1
exclude_nodes = ["gpu-07"]
qos = "high"
constraint = "ib&h100"
mem = "500G"
cpus_per_task = 12
exclusive = true
reservation = "maint-window"
scratch = "encrypted"

[env]
NCCL_DEBUG = "WARN"

[slurm]
extra = ["--mail-type=END"]

[kubernetes]
shm_size = "64Gi"
resources = { "rdma/rdma_shared_device_a" = 1 }
networks = ["sriov-ib0"]
ipc_lock = true
gpu_product = "NVIDIA-H100-80GB-HBM3"
tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
node_selector = { "topology.kubernetes.io/zone" = "a" }
gang = "kueue"
queue = "team-a"
ttl = "1d"
workload = "jobset"
"""
SUBTABLES = {"slurm": {"extra"}, "kubernetes": set(KUBERNETES_KEYS)}


def test_every_key_of_the_documented_example() -> None:
    jf = parse_jobfile(FULL)
    assert jf.backend == "slurm"
    spec = merge(jf, {})
    assert spec.name == "llama-ft" and spec.command == ("python", "train.py", "--epochs", "3")
    assert (spec.nodes, spec.gpus_per_node, spec.procs_per_node) == (2, 8, 8)
    assert spec.time_limit_s == 12 * 3600 and spec.max_restarts == 3
    assert spec.exclude_nodes == ("gpu-07",) and spec.env == {"NCCL_DEBUG": "WARN"}
    assert (spec.qos, spec.constraint, spec.mem, spec.cpus_per_task) == (
        "high",
        "ib&h100",
        "500G",
        12,
    )
    assert spec.exclusive and spec.reservation == "maint-window"
    assert spec.slurm_extra == ("--mail-type=END",)
    assert spec.kubernetes == PodOptions(
        shm_size="64Gi",
        resources={"rdma/rdma_shared_device_a": 1},
        networks=("sriov-ib0",),
        ipc_lock=True,
        tolerations=({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},),
        node_selector={"topology.kubernetes.io/zone": "a"},
        gpu_product="NVIDIA-H100-80GB-HBM3",
        gang="kueue",
        queue="team-a",
        ttl_s=86400,
        workload="jobset",
    )
    keys = {line.split(" = ")[0] for line in FULL.splitlines() if " = " in line}
    assert set(KEYS) | SUBTABLES["kubernetes"] | SUBTABLES["slurm"] == keys - {"NCCL_DEBUG"} | {
        "env",
        "slurm",
        "kubernetes",
    }


def test_the_command_line_wins_over_the_file() -> None:
    spec = merge(parse_jobfile(FULL), {"nodes": 4, "max_restarts": None})
    assert spec.nodes == 4 and spec.max_restarts == 3


def test_docs_show_the_same_example() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "jobs.md"
    assert FULL.strip() in docs.read_text()


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('name = "x"\ngpus = 4\n', 2, "unknown key 'gpus'; valid keys: account, backend"),
        ('nodes = "two"\n', 1, "nodes must be int, not str"),
        ("elastic = 1\n", 1, "elastic must be bool"),
        ("nodes = true\n", 1, "nodes must be int, not bool"),
        ('command = ["a", 1]\n', 1, "command must be a list of strings"),
        ("[env]\nA = 1\n", 1, "[env] values must be strings"),
        ('time_limit = "soon"\n', 1, "is not a duration"),
        ('name = "x"\nnodes = [\n', None, "not valid TOML"),
        ("[slurm]\nfoo = 1\n", 2, "unknown key 'foo' in [slurm]; valid keys: extra"),
        ('[slurm]\nextra = "--qos=x"\n', 2, "[slurm] extra must be list"),
        ('[slurm]\nextra = ["--mail-type END"]\n', 2, "is not one sbatch option"),
        ('[slurm]\nextra = ["--x=a;reboot"]\n', 2, "is not one sbatch option"),
        ('[slurm]\nextra = ["--x=$(id)"]\n', 2, "is not one sbatch option"),
        ('[slurm]\nextra = ["--x=`id`"]\n', 2, "is not one sbatch option"),
        ("[slurm]\nextra = [\"--x='a'\"]\n", 2, "is not one sbatch option"),
        ('[slurm]\nextra = ["--x\\n#SBATCH --uid=0"]\n', 2, "'--x\\\\n#SBATCH"),
        ('[slurm]\nextra = ["-p gpu"]\n', 2, "is not one sbatch option"),
        ("[slurm]\nextra = [3]\n", 2, "[slurm] extra[0] must be text"),
        ('[slurm]\nextra = ["--nodes=3"]\n', 2, "dolmen writes --nodes itself"),
        ('[slurm]\nextra = ["--qos=high"]\n', 2, "set it with --qos / qos"),
        ('[kubernetes]\ngang = "yarn"\n', 2, "gang 'yarn': valid: kueue, volcano"),
        ('[kubernetes]\ngang = "kueue"\n', 2, "needs a queue"),
        ("[kubernetes]\nresources = { cpu = 2 }\n", 2, "'cpu' is not an extended resource"),
        ('[kubernetes]\nresources = { "rdma/x" = true }\n', 2, "must be a count"),
        ('[kubernetes]\ntolerations = ["x"]\n', 2, "must be tables"),
        ('[kubernetes]\ntolerations = [{ keys = "a" }]\n', 2, "unknown key 'keys'"),
        ('[kubernetes]\nshm_size = "lots"\n', 2, "not a size like 16Gi"),
        ('[kubernetes]\nnetworks = ["a b"]\n', 2, "not a Multus network"),
        ('[kubernetes]\nnode_selector = { "a b" = "c" }\n', 2, "not a label key"),
        ('[kubernetes]\nttl = "soon"\n', 2, "is not a duration"),
        ('[kubernetes]\nworkload = "pod"\n', 2, "valid: jobset, job"),
        ("[kubernetes]\nhostNetwork = true\n", 2, "unknown key 'hostNetwork' in [kubernetes]"),
    ],
)
def test_mistakes_name_file_and_line(text: str, line: int | None, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_jobfile(text, "job.toml")
    assert words in str(err.value)
    if line is not None:
        assert str(err.value).startswith(f"job.toml:{line}: ")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such job file"):
        load_jobfile(tmp_path / "absent.toml")
    junk = tmp_path / "junk.toml"
    junk.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ConfigError, match=r"cannot read|not valid TOML"):
        load_jobfile(junk)


def test_a_job_needs_a_command() -> None:
    with pytest.raises(UsageError, match="no command"):
        merge(parse_jobfile("nodes = 2\n"), {})


def test_the_default_name_is_the_programs() -> None:
    assert merge(None, {"command": ("/usr/bin/python3.11", "t.py")}).name == "t.py"
    assert merge(None, {"command": ("python", "-m", "pkg.train")}).name == "pkg.train"
    assert merge(None, {"command": ("./run.sh", "x")}).name == "run.sh"
