"""The storage workload: fio's JSON parsed (real fio 3.33 output made here, then truncated,
junk and hostile), its command line, the choice of data mounts, the refusal on a full
mount, both engines on a small file in tmp_path, and the test file removed on Ctrl-C."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dolmen.facts.storage import Mount
from dolmen.host.live import LiveHost
from dolmen.workloads import storage, storage_builtin
from dolmen.workloads.model import Request, Unavailable
from dolmen.workloads.storage_fio import PHASES, fio_argv, parse_fio_json

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]
FOUR = (DATA / "fio-3.33-four-phases.json").read_text()
HAS_FIO = shutil.which("fio") is not None


def test_parse_real_fio_run() -> None:
    report = parse_fio_json(FOUR)
    assert report.problem is None and report.version == "fio-3.33"
    assert list(report.jobs) == list(PHASES)
    jobs = report.jobs
    assert jobs["seq_write"].write_bytes_s > 0 and jobs["seq_write"].read_bytes_s == 0
    assert jobs["seq_read"].read_bytes_s > 0 and jobs["rand_read"].read_iops > 0
    assert jobs["rand_write"].write_iops > 0 and all(j.error == 0 for j in jobs.values())


def test_parse_real_fio_error_and_buffered_runs() -> None:
    err = parse_fio_json((DATA / "fio-3.33-eisdir.json").read_text())
    assert err.problem is None and err.jobs["seq_read"].error == 21  # EISDIR
    buffered = parse_fio_json((DATA / "fio-3.33-buffered.json").read_text())
    assert list(buffered.jobs) == ["seq_write", "seq_read"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no JSON"),
        ("fio: engine libaio not loadable\nfio: failed to load engine\n", "no JSON"),
        (FOUR[: len(FOUR) // 2], "not complete"),
        ("fio: warning\n" + FOUR, None),  # a warning line before the document
        ("[1, 2]", "no JSON"),
        ('{"jobs": "many"}', "no 'jobs' list"),
        ('{"jobs": [{"jobname": 3}, "x", {"jobname": "a", "error": 0}]}', "holds no job"),
        (
            json.dumps(
                {
                    "jobs": [
                        {
                            "jobname": "a",
                            "error": 0,
                            "read": {"bw_bytes": -1, "iops": 0},
                            "write": {"bw_bytes": 0, "iops": 0},
                        }
                    ]
                }
            ),
            "holds no job",
        ),
        (
            json.dumps(
                {
                    "jobs": [
                        {
                            "jobname": "a",
                            "error": 0,
                            "read": {"bw_bytes": True, "iops": 0},
                            "write": {"bw_bytes": 0, "iops": 0},
                        }
                    ]
                }
            ),
            "holds no job",
        ),
        ("{" * 100_000, "not complete"),  # hostile: deep nesting is a parse error, not a crash
    ],
)
def test_parse_bad_fio_output(text: str, problem: str | None) -> None:
    report = parse_fio_json(text)
    if problem is None:
        assert report.problem is None and len(report.jobs) == 4
    else:
        assert report.problem is not None and problem in report.problem and not report.jobs


def test_fio_argv_direct_and_buffered() -> None:
    argv = fio_argv("/raid/x", 1 << 30, 7.4)
    assert argv[:2] == ["fio", "--output-format=json"] and "--direct=1" in argv
    assert argv.count("--stonewall") == 3 and argv.count("--runtime=7") == 3
    assert "--invalidate=1" not in argv
    buffered = fio_argv("/raid/x", 1 << 30, 0.2, direct=False, phases=("seq_write",))
    assert "--direct=0" in buffered and "--invalidate=1" in buffered
    assert "--stonewall" not in buffered
    assert fio_argv("/mnt/a:b/x", 1 << 20, 1)[2] == "--filename=/mnt/a\\:b/x"


def _mount(point: str, kind: str = "disk", ro: bool = False) -> Mount:
    return Mount("/dev/x", point, "ext4", (), ro, kind)


def test_data_mounts_leave_the_system_out() -> None:
    mounts = [
        _mount("/"),
        _mount("/boot"),
        _mount("/boot/efi"),
        _mount("/raid"),
        _mount("/raid"),  # listed twice
        _mount("/mnt/ckpt", "network"),
        _mount("/dev/shm", "memory"),
        _mount("/data/ro", ro=True),
        _mount("/var/lib/docker/overlay2/x", "overlay"),
        _mount("/snap/core/1"),
    ]
    assert storage.data_mounts(mounts) == ["/mnt/ckpt", "/raid"]


def test_full_mount_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(storage.Refused) as e:
        storage.room(str(tmp_path), 1 << 60)
    line = str(e.value)
    assert "\n" not in line and "GB free" in line and "needed" in line
    with pytest.raises(storage.Refused, match="cannot be read"):
        storage.room(str(tmp_path / "absent"), 1 << 20)


def test_run_reports_refused_mounts_and_measures_the_others(tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("")
    request = Request(device="cpu", smoke=True, scratch=(str(file), str(tmp_path)))
    result = storage.run(request, _NoFio())
    assert list(result.refused) == [str(file)] and "not a folder" in result.refused[str(file)]
    (m,) = result.mounts
    assert m.engine == "builtin" and m.file_bytes == storage.SMOKE_FILE_BYTES
    assert list(tmp_path.iterdir()) == [file]  # the test file is gone
    doc = result.to_json()["mounts"][0]
    assert {"mount", "engine", "file_bytes", "seq_read_mbps", "seq_write_mbps"} <= doc.keys()


class _NoFio(LiveHost):
    """The live host where fio does not answer: the built-in engine runs."""

    def run(self, argv: Any, **kw: Any) -> Any:
        return super().run(("/nonexistent/fio", *argv[1:]), **kw)


def test_no_data_mount_says_how_to_name_one(tmp_path: Path) -> None:
    from tests.conftest import make_tree

    root = make_tree(tmp_path, files={"proc/self/mounts": "/dev/vda / ext4 rw 0 0\n"})
    from dolmen.host.tree import TreeHost

    with pytest.raises(Unavailable, match=r"\[workloads\] scratch"):
        storage.run(Request(device="cpu", smoke=True), TreeHost(root))


def test_builtin_direct_and_buffered(tmp_path: Path) -> None:
    direct = storage._builtin(str(tmp_path / "d"), str(tmp_path), 8 << 20, 0.1, None)
    assert direct.seq_read_mbps > 0 and direct.seq_write_mbps > 0
    assert (direct.rand_read_iops or 0) > 0 and (direct.rand_write_iops or 0) > 0
    fd, is_direct = storage_builtin.open_file(str(tmp_path / "b"), direct=False)
    try:
        assert not is_direct
        assert storage_builtin.seq_write(fd, 4 << 20) > 0
        storage_builtin.drop_cache(fd, False)
        assert storage_builtin.seq_read(fd, 4 << 20, 0.05) > 0
    finally:
        os.close(fd)
    with pytest.raises(FileExistsError):  # never an existing file
        storage_builtin.open_file(str(tmp_path / "b"))


@pytest.mark.skipif(not HAS_FIO, reason="fio is not installed (Debian package fio)")
def test_fio_engine_on_a_small_file(tmp_path: Path) -> None:
    m = storage.measure(LiveHost(), str(tmp_path), 8 << 20, 1.0, use_fio=True)
    assert m.engine == "fio" and m.note is None and m.seq_read_mbps > 0
    assert (m.rand_write_iops or 0) > 0
    assert list(tmp_path.iterdir()) == []


SCRIPT = """
import sys
from dolmen.host.live import LiveHost
from dolmen.workloads import storage
if __name__ == "__main__":
    print("start", flush=True)
    try:
        storage.measure(LiveHost(), sys.argv[1], 32 << 20, 60.0, use_fio=sys.argv[2] == "fio")
    except KeyboardInterrupt:
        sys.exit(7)
"""


@pytest.mark.parametrize(
    "engine",
    ["builtin", pytest.param("fio", marks=pytest.mark.skipif(not HAS_FIO, reason="no fio"))],
)
def test_ctrl_c_removes_the_test_file(tmp_path: Path, engine: str) -> None:
    script = tmp_path / "io.py"
    script.write_text(SCRIPT)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(scratch), engine],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "start"
        deadline = time.monotonic() + 20
        while not list(scratch.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(scratch.iterdir()), "the test file never appeared"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 7
        assert list(scratch.iterdir()) == []
        fio = subprocess.run(["pgrep", "-f", str(scratch)], capture_output=True, text=True)
        assert fio.stdout == "", "fio outlived the run"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
