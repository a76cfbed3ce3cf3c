"""The in-container benchmark (containers/smoke.py): its script run for real with this
machine's Pythons, its output parsed from a table of outputs, malformed ones included,
and the store probe's answers (containers/images.py) judged from a table."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from dolmen.containers import images, smoke

RUN = {"gpu": None, "name": "cpu", "dtype": "fp32", "n": 512, "iterations": 9, "seconds": 1.0}


def _line(doc: object) -> str:
    return smoke.MARK + json.dumps(doc)


@pytest.mark.parametrize(
    ("output", "runs", "missing", "error"),
    [
        (_line({"device": "cpu", "torch": "2.13.0", "runs": [{**RUN, "tflops": 0.2}]}), 1, None, None),
        # NGC's entrypoint banner first, then the line
        ("=== PyTorch ===\nNVIDIA Release 25.09\n" + _line({"device": "cuda", "runs": [
            {**RUN, "gpu": 0, "name": "NVIDIA H100 80GB HBM3", "dtype": "bf16", "tflops": 700.0},
            {**RUN, "gpu": 1, "name": "NVIDIA H100 80GB HBM3", "dtype": "bf16", "tflops": 690.0},
        ]}), 2, None, None),
        (_line({"device": "cpu", "missing": "torch", "error": "ModuleNotFoundError: x"}), 0, "torch", "ModuleNotFoundError: x"),
        (_line({"device": "cuda", "missing": "gpu", "error": "no"}), 0, "gpu", "no"),
        ("", 0, None, "the output holds no DOLMEN-BENCH line"),
        ("Error: executable file `python3` not found", 0, None, "the output holds no DOLMEN-BENCH line"),
        (smoke.MARK + "{not json", 0, None, "the DOLMEN-BENCH line is not JSON"),
        (smoke.MARK + "[1, 2]", 0, None, "the DOLMEN-BENCH line is not a JSON object"),
        (_line({"device": "cpu", "runs": []}), 0, None, "the DOLMEN-BENCH line holds no run"),
        (smoke.MARK + '{"runs": [{"gpu": null, "name": "cpu", "dtype": "fp32", "n": 1, '
         '"iterations": 1, "seconds": 1, "tflops": NaN}]}', 0, None, "is not JSON"),
        (_line({"runs": [{**RUN, "tflops": -1}]}), 0, None, "tflops -1 is not a finite number"),
        (_line({"runs": [{**RUN, "tflops": "fast"}]}), 0, None, "tflops 'fast' is not a finite"),
        (_line({"runs": [{**RUN, "seconds": 0, "tflops": 1}]}), 0, None, "no iteration was timed"),
        (_line({"runs": [{**RUN, "gpu": -1, "tflops": 1}]}), 0, None, "gpu -1 is not an index"),
        (_line({"runs": [{**RUN, "gpu": True, "tflops": 1}]}), 0, None, "gpu True is not an index"),
        (_line({"runs": [{**RUN, "dtype": 3, "tflops": 1}]}), 0, None, "not a string"),
        (_line({"runs": ["x"]}), 0, None, "a run is not an object"),
    ],
)  # fmt: skip
def test_parse(output: str, runs: int, missing: str | None, error: str | None) -> None:
    got = smoke.parse(output)
    assert len(got.runs) == runs and got.missing == missing
    if error is None:
        assert got.error is None
    else:
        assert got.error is not None and error in got.error


def test_the_last_marked_line_wins() -> None:
    first = _line({"device": "cpu", "missing": "torch", "error": "e"})
    last = _line({"device": "cpu", "runs": [{**RUN, "tflops": 0.1}]})
    assert smoke.parse(f"{first}\n{last}\n").runs[0].tflops == 0.1


def test_gemm_result_is_the_bench_shape() -> None:
    got = smoke.parse(
        _line({"device": "cuda", "runs": [
            {**RUN, "gpu": i, "name": "NVIDIA H100 80GB HBM3", "dtype": "bf16", "tflops": t}
            for i, t in enumerate((700.0, 600.0, 650.0))
        ]})
    )  # fmt: skip
    doc = smoke.gemm_result(
        got, ("gpu:0000:18:00.0", "gpu:0000:2a:00.0"), {"NVIDIA H100 80GB HBM3": 989.4}
    )
    subjects = [g["subject"] for g in doc["gpus"]]
    assert subjects == ["gpu:0000:18:00.0", "gpu:0000:2a:00.0", "gpu:2"]  # beyond the facts
    assert {g["median_tflops"] for g in doc["gpus"]} == {650.0}
    assert doc["gpus"][0]["peak_tflops"] == 989.4 and doc["gpus"][0]["throttled"] is None
    assert doc["gpus"][0]["sampler"] == "" and doc["skipped"] == []  # nothing sampled there


def test_command_refuses_an_unknown_device() -> None:
    assert smoke.command("cpu")[:2] == ("python3", "-c")
    with pytest.raises(ValueError, match="one of cuda, cpu"):
        smoke.command("tpu")


def _script(python: str, device: str) -> tuple[int, smoke.Smoke]:
    done = subprocess.run(
        [python, *smoke.command(device)[1:]], capture_output=True, text=True, timeout=120
    )
    return done.returncode, smoke.parse(done.stdout)


def test_the_script_measures_on_cpu_torch() -> None:
    pytest.importorskip("torch")
    rc, got = _script(sys.executable, "cpu")
    assert rc == 0 and got.error is None and got.torch is not None
    [run] = got.runs
    assert run.gpu is None and run.dtype == "fp32" and run.n == 512
    assert run.seconds >= 1.0 and run.tflops == pytest.approx(
        2 * 512**3 * run.iterations / run.seconds / 1e12
    )


def test_the_script_says_torch_sees_no_gpu() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU torch can use")
    rc, got = _script(sys.executable, "cuda")
    assert rc == smoke.NO_GPU and got.missing == "gpu"


def test_the_script_says_torch_is_missing() -> None:
    python = shutil.which("python3", path="/usr/bin")
    if python is None:
        pytest.skip("no /usr/bin/python3")
    done = subprocess.run([python, "-c", "import torch"], capture_output=True, timeout=60)
    if done.returncode == 0:
        pytest.skip("/usr/bin/python3 has torch")
    rc, got = _script(python, "cpu")
    assert rc == smoke.NO_TORCH and got.missing == "torch" and "torch" in (got.error or "")


@pytest.mark.parametrize(
    ("runtime", "rc", "stderr", "present", "why"),
    [
        ("podman", 0, "", True, ""),
        ("podman", 1, "", False, ""),
        ("podman", 125, "Error: database is locked\n", None, "podman image exists: exit 125: Error: database is locked"),
        ("docker", 0, "", True, ""),
        ("docker", 1, "Error: No such image: nvcr.io/nvidia/pytorch:25.09-py3\n", False, ""),
        ("docker", 1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n", None, "docker image inspect: exit 1: Cannot connect"),
        ("docker", 1, "permission denied while trying to connect to the Docker daemon socket\n", None, "permission denied"),
        ("docker", None, "", None, "timed out"),
    ],
)  # fmt: skip
def test_store_answers(
    runtime: str, rc: int | None, stderr: str, present: bool | None, why: str
) -> None:
    got = images.judge(runtime, "IMG", rc, stderr, "timed out after 30 s")
    assert got.present is present and why in got.why
    assert got.pull == f"{runtime} pull IMG"


def test_only_docker_and_podman_stores_are_asked() -> None:
    with pytest.raises(ValueError, match="only docker, podman"):
        images.argv("apptainer", "x.sif")
