"""``dolmen containers`` in-process: resolve from a scenario tree and from --driver, the
JSON documents against their schemas, exit codes, run --dry-run on this machine."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from dolmen.cli.main import main
from tests.hosts import scenarios
from tests.report.contract import assert_valid


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_resolve_from_a_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """8x H100 on 580.105.08: CUDA 13.0 releases run natively, 25.12 (13.1) needs 590."""
    root = scenarios.build("h100-hgx-healthy", tmp_path / "h100")
    rc, out, _ = _run(capsys, "containers", "resolve", "pytorch", "--from", str(root), "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 0 and doc["driver"] == "580.105.08" and doc["datacenter"] is True
    assert doc["choice"]["release"] == "25.09" and doc["choice"]["mode"] == "native"
    assert len(doc["gpus"]) == 8
    rc, out, _ = _run(capsys, "containers", "resolve", "tritonserver", "--from", str(root))
    assert rc == 0 and out.startswith("nvcr.io/nvidia/tritonserver:25.08-py3  (native)")
    assert "CUDA         13.0.0" in out and "source: https://docs.nvidia.com/" in out


def test_resolve_unknown_driver_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = scenarios.build("missing-driver", tmp_path / "nodrv")
    rc, out, err = _run(capsys, "containers", "resolve", "jax", "--from", str(root))
    assert rc == 2 and out == "" and "does not guess" in err
    rc, out, _ = _run(capsys, "containers", "resolve", "jax", "--from", str(root), "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 2 and doc["choice"] is None and "does not guess" in doc["refused"]


def test_resolve_with_driver(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("containers", "resolve", "pytorch", "--driver", "535.104.05", "--datacenter")
    rc, out, _ = _run(capsys, *argv, "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 0 and doc["choice"]["mode"] == "forward-compat"
    assert doc["choice"]["compat_branch"] == "535.86" and doc["native"]["release"] == "23.10"
    rc, out, err = _run(
        capsys, "containers", "resolve", "pytorch", "--driver", "450.80.02", "--no-datacenter"
    )
    assert rc == 1 and "older than every pytorch release" in err
    for bad in ("x", "", " "):  # an empty one read the host's driver instead, quietly
        rc, out, err = _run(capsys, "containers", "resolve", "pytorch", "--driver", bad)
        assert rc == 2 and out == "" and f"--driver {bad!r} is not a driver version" in err
        assert "hint: give the version nvidia-smi prints" in err
    rc, _, err = _run(capsys, "containers", "resolve", "mxnet", "--driver", "580.65.06")
    assert rc == 2 and "mxnet" in err
    rc, _, err = _run(
        capsys, "containers", "resolve", "pytorch", "--driver", "580.65.06", "--cuda", "x.y"
    )
    assert rc == 2 and "not a CUDA version" in err


def test_run_dry_run(capsys: pytest.CaptureFixture[str]) -> None:
    image = "nvcr.io/nvidia/pytorch:24.05-py3"
    rc, out, _ = _run(
        capsys,
        "containers",
        "run",
        "--dry-run",
        "--runtime",
        "docker",
        "--json",
        "--checkpoint",
        "/ckpt",
        image,
        "--",
        "python",
        "-c",
        "print(1)",
    )
    doc = assert_valid(json.loads(out))
    assert doc["argv"][-4:] == [image, "python", "-c", "print(1)"]
    assert "--ipc=host" in doc["argv"] and "memlock=-1" in doc["argv"]
    assert "/ckpt:/checkpoints:rw" in doc["argv"]
    assert rc == (3 if doc["problems"] else 0)
    rc, out, _ = _run(capsys, "containers", "run", "--dry-run", "--runtime", "apptainer", image)
    line = [x for x in out.splitlines() if not x.startswith("#")][-1]
    assert shlex.split(line)[:3] == ["apptainer", "run", "--nv"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--runtime", "lxc", "img"],
        ["--gpus", "0;1", "img"],
        ["--mount", "a:b", "img"],
        ["--json", "img"],  # --json without --dry-run
        ["--shm-size", "big", "img"],
        ["a b"],
        ["UPPER/Case:tag"],
        ["x;rm -rf /"],
    ],
)
def test_run_bad_input_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, "containers", "run", *argv)
    assert rc == 2 and err.startswith("dolmen: error:")


def test_run_refuses_a_plan_with_a_problem(capsys: pytest.CaptureFixture[str]) -> None:
    """A runtime that is not here: exit 3 and nothing started, nothing audited."""
    rc, _, err = _run(capsys, "containers", "run", "--runtime", "enroot", "some/image:1")
    assert rc == 3 and "cannot start the container" in err
