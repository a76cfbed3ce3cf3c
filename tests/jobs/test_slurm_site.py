"""Slurm at a real site, without Slurm: the site options' #SBATCH lines, the [slurm] extra
passthrough, pyxis rendering and detection, and the multi-node warning (docs/jobs-slurm.md).
The real cluster's half is tests/slurm/test_jobs_site.py."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from dolmen.config import parse_config
from dolmen.errors import ConfigError, UsageError
from dolmen.host.tree import TreeHost
from dolmen.jobs.backend import get_backend
from dolmen.jobs.slurm import pyxis
from dolmen.jobs.slurm.sbatch import SbatchOptions, render
from dolmen.jobs.spec import JobSpec
from dolmen.slurm.client import SlurmClient
from tests.conftest import make_tree

BASE = {"name": "train.py", "command": ("python", "train.py"), "nodes": 2, "gpus_per_node": 4}


def _spec(**kw: object) -> JobSpec:
    return JobSpec(**{**BASE, **kw})  # type: ignore[arg-type]


def _site_lines(script: str) -> list[str]:
    """The #SBATCH lines after dolmen's fixed ones (--output and --time come before)."""
    lines = [x.removeprefix("#SBATCH ") for x in script.splitlines() if x.startswith("#SBATCH")]
    return lines[lines.index(next(x for x in lines if x.startswith("--output="))) + 1 :]


@pytest.mark.parametrize(
    ("fields", "extra", "expected"),
    [
        ({}, (), []),
        ({"partition": "gpu,debug"}, (), ["--partition=gpu,debug"]),
        ({"qos": "high"}, (), ["--qos=high"]),
        ({"constraint": "ib&(h100|a100)"}, (), ["--constraint=ib&(h100|a100)"]),
        ({"mem": "500G"}, (), ["--mem=500G"]),
        ({"mem": "64000"}, (), ["--mem=64000"]),
        ({"cpus_per_task": 12}, (), ["--cpus-per-task=12"]),
        ({"exclusive": True}, (), ["--exclusive"]),
        ({"reservation": "maint"}, (), ["--reservation=maint"]),
        ({"slurm_extra": ("--mail-type=END",)}, (), ["--mail-type=END"]),
        # the site's extra first, the job's after (sbatch: the last one wins)
        (
            {"slurm_extra": ("--comment=job",)},
            ("--gres-flags=enforce-binding", "--comment=site"),
            ["--gres-flags=enforce-binding", "--comment=site", "--comment=job"],
        ),
        (
            {"partition": "gpu", "qos": "q", "constraint": "ib", "mem": "1T"},
            (),
            ["--partition=gpu", "--qos=q", "--constraint=ib", "--mem=1T"],
        ),
    ],
)
def test_site_options_become_sbatch_lines(
    fields: dict[str, object], extra: tuple[str, ...], expected: list[str]
) -> None:
    spec = _spec(**fields)
    spec.check()
    assert _site_lines(render(spec, SbatchOptions(extra=extra))) == expected


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"partition": "gpu debug"}, "is not a partition name"),
        ({"partition": "gpu;reboot"}, "is not a partition name"),
        ({"qos": "$(id)"}, "is not a QOS name"),
        ({"constraint": "ib h100"}, "is not a feature expression"),
        ({"constraint": "ib`id`"}, "is not a feature expression"),
        ({"mem": "lots"}, "is not a size"),
        ({"mem": "1.5G"}, "is not a size"),
        ({"mem": "64Gi"}, "is not a size"),
        ({"reservation": "a'b"}, "is not a reservation name"),
        ({"cpus_per_task": 0}, "--cpus-per-task must be 1 to"),
        ({"partition": "gpu\n#SBATCH --uid=0"}, "partition holds a control character"),
        ({"slurm_extra": ("--x=1 --uid=0",)}, "is not one sbatch option"),
        ({"slurm_extra": ("--output=/etc/passwd",)}, "dolmen writes --output itself"),
    ],
)
def test_bad_site_words_are_refused_naming_the_field(fields: dict[str, object], words: str) -> None:
    with pytest.raises(UsageError, match=words.replace("$", r"\$").replace("(", r"\(")):
        _spec(**fields).check()


def test_site_extra_from_dolmen_toml_is_checked(tmp_path: Path) -> None:
    cfg = parse_config('[slurm]\nextra = ["--gres-flags=enforce-binding"]\n')
    assert cfg.get("slurm", "extra") == ["--gres-flags=enforce-binding"]
    with pytest.raises(ConfigError, match="be a list of options"):
        parse_config('[slurm]\nextra = ["a\\nb"]\n')
    b = get_backend("slurm", host=TreeHost(tmp_path), extra=["--x=1;reboot"])
    with pytest.raises(UsageError, match=r"dolmen.toml's \[slurm\] extra\[0\]"):
        b.plan(_spec())


def test_an_image_runs_through_pyxis_without_dolmen_inside(tmp_path: Path) -> None:
    spec = _spec(
        image="nvcr.io/nvidia/pytorch:24.05-py3",
        checkpoint_dir="/shared/ckpt",
        workdir="/shared/src",
        procs_per_node=4,
    )
    script = render(spec, SbatchOptions(python="/opt/dolmen/bin/python"))
    srun = shlex.split(next(x for x in script.splitlines() if x.startswith("srun ")))
    assert srun[:7] == [
        "srun",
        "--label",
        "--kill-on-bad-exit=1",
        "--container-image=nvcr.io/nvidia/pytorch:24.05-py3",
        "--container-mounts=/shared/ckpt:/shared/ckpt,/shared/src:/shared/src",
        "--container-workdir=/shared/src",
        "bash",
    ]
    assert srun[9:] == ["dolmen-rank", "python", "train.py", "&"]
    # nothing runs dolmen in the image; on the node only the optional NCCL environment
    # (dolmen nccl env, read by the batch shell: nothing when dolmen or its answer is absent)
    assert "dolmen.jobs.launch" not in script
    uses = [x for x in script.splitlines() if "/opt/dolmen" in x]
    assert uses == ['eval "$(/opt/dolmen/bin/python -m dolmen.nccl 2>/dev/null)"'], uses
    assert 'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"' in script
    assert "LOCAL_WORLD_SIZE=4" in script


def test_a_container_job_runs_in_the_folder_it_was_submitted_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a workdir the image's own (NGC: /workspace) would not hold train.py: the
    submission folder is mounted and made the working folder, as sbatch's default is."""
    from dolmen.cli.main import main

    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    argv = ["jobs", "plan", "--backend", "slurm", "--gpus-per-node", "4", "--image", "img"]
    for extra, where in (([], tmp_path), (["--workdir", "src"], tmp_path / "src")):
        assert main([*argv, *extra, "--", "python", "train.py"]) == 0
        out = capsys.readouterr().out
        srun = shlex.split(next(x for x in out.splitlines() if x.startswith("srun ")))
        assert f"--container-mounts={where}:{where}" in srun
        assert f"--container-workdir={where}" in srun and f"#SBATCH --chdir={where}" in out
    assert main([*argv[:-2], "--", "python", "train.py"]) == 0  # no image: sbatch's default
    assert "--chdir" not in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_pyxis_script_is_valid_bash_and_its_rank_shell_sets_the_ranks(tmp_path: Path) -> None:
    script = render(_spec(image="img", env={"A": "$(rm -rf /)"}), SbatchOptions())
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    # What one task runs inside the container, run here with srun's variables.
    srun = shlex.split(next(x for x in script.splitlines() if x.startswith("srun ")))
    i = srun.index("bash")
    env = {"SLURM_PROCID": "5", "SLURM_LOCALID": "1", "SLURM_NODEID": "1", "PATH": "/usr/bin:/bin"}
    probe = ["sh", "-c", 'echo "$RANK $LOCAL_RANK $GROUP_RANK"']
    done = subprocess.run([*srun[i : i + 4], *probe], env=env, capture_output=True, text=True)
    assert done.stdout == "5 1 1\n"


def test_a_multi_node_plan_warns_when_the_paths_are_this_machine_s(tmp_path: Path) -> None:
    host = TreeHost(tmp_path)
    bare = get_backend("slurm", host=host)
    (warning,) = bare.plan(_spec()).warnings
    assert warning.startswith("slurm_log_dir and slurm_python not set in [jobs] of dolmen.toml")
    assert bare.plan(_spec(nodes=1)).warnings == ()
    half = get_backend("slurm", host=host, log_dir="/shared/logs")
    assert half.plan(_spec()).warnings[0].startswith("slurm_python not set")
    site = get_backend("slurm", host=host, log_dir="/shared/logs", python="/shared/py")
    assert site.plan(_spec()).warnings == ()


PYXIS_HELP = """\
Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]
      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH
                              [pyxis] the image to use for the container
      --container-mounts=SRC:DST[:FLAGS][,SRC:DST...]
                              [pyxis] bind mount[s] inside the container.
"""
PLAIN_HELP = """\
Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]
  -A, --account=name          charge job to specified account
      --container=PATH        path to OCI container bundle
"""


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (PYXIS_HELP, True),
        (PLAIN_HELP, False),  # Slurm's own --container (OCI bundles) is not pyxis
        (PYXIS_HELP[:120], False),  # cut before the plugin's lines: no claim either way
        ("", False),
        ("\x00\xff junk --container-image", False),
    ],
)
def test_pyxis_in_srun_help(text: str, found: bool) -> None:
    assert pyxis.in_help(text) is found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so\n", True),
        ("optional spank_pyxis.so runtime_path=/run/pyxis\n", True),
        ("# required /usr/lib/slurm/spank_pyxis.so\n", False),
        ("required /usr/lib/slurm/other.so # spank_pyxis.so later\n", False),
        ("include /etc/slurm/plugstack.conf.d/*\n", False),
        ("", False),
    ],
)
def test_pyxis_in_plugstack(text: str, found: bool) -> None:
    assert pyxis.in_plugstack(text) is found


def _client(tree: Path) -> tuple[SlurmClient, TreeHost]:
    host = TreeHost(tree)
    return SlurmClient(host), host


def test_detect_asks_srun_then_plugstack_and_says_when_it_cannot_tell(tmp_path: Path) -> None:
    help_yes = make_tree(tmp_path / "a", commands={"srun --help": PYXIS_HELP})
    assert pyxis.detect(*_client(help_yes))[0] is True
    help_no = make_tree(tmp_path / "b", commands={"srun --help": PLAIN_HELP})
    assert pyxis.detect(*_client(help_no)) == (False, "srun --help lists no --container-image")
    included = make_tree(
        tmp_path / "c",
        files={
            "etc/slurm/plugstack.conf": "include /etc/slurm/plugstack.conf.d/*.conf\n",
            "etc/slurm/plugstack.conf.d/pyxis.conf": "required spank_pyxis.so\n",
        },
        commands={"srun --help": ("", 1, "srun: error: cannot talk to slurmctld")},
    )
    assert pyxis.detect(*_client(included)) == (
        True,
        "/etc/slurm/plugstack.conf loads spank_pyxis.so",
    )
    nothing = make_tree(tmp_path / "d")  # no srun recorded, no plugstack: unknown
    found, why = pyxis.detect(*_client(nothing))
    assert found is None and why.startswith("srun --help failed")


def test_an_image_without_pyxis_is_refused_in_one_line(tmp_path: Path) -> None:
    client, host = _client(make_tree(tmp_path, commands={"srun --help": PLAIN_HELP}))
    with pytest.raises(UsageError, match="needs the pyxis SPANK plugin, which this cluster lacks"):
        pyxis.require(client, host)
    pyxis.require(client, host, known=True)  # the site says so: no question asked
    with pytest.raises(UsageError, match="whether this cluster has it is unknown"):
        pyxis.require(*_client(make_tree(tmp_path / "none")))
