"""torch.distributed.checkpoint checkpoints: real DCP saves (one rank writing 50 shards, two
gloo ranks on 127.0.0.1 each writing their own), found by ``checkpoint.latest`` with
``.metadata`` as the COMPLETE marker, and ``.metadata`` read without running a pickle."""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.jobs import checkpoint, checkpoint_dcp

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed.checkpoint")
REPO = Path(__file__).resolve().parents[2]


def _state(n: int = 50, size: int = 256, seed: float = 0.0) -> dict[str, object]:
    return {f"layer{i}.weight": torch.full((size,), seed + i) for i in range(n)}


def _save(root: Path, step: int, **kw: object) -> Path:
    # one file per tensor: 50 shards from one rank, as 50 ranks would write them
    kw.setdefault("single_file_per_rank", False)
    with pytest.warns(UserWarning, match="single process"):
        return checkpoint_dcp.save(root, step, _state(seed=step), **kw)  # type: ignore[arg-type]


def test_a_50_shard_checkpoint_is_found_and_loads(tmp_path: Path) -> None:
    _save(tmp_path, 10)
    path = _save(tmp_path, 20)
    ck = checkpoint.latest(tmp_path)
    assert ck is not None and ck.step == 20 and ck.path == path
    assert ck.format == checkpoint_dcp.FORMAT and len(ck.files) == 50
    assert all(name.endswith(".distcp") for name in ck.files)
    assert all(ck.sizes[n] <= (path / n).stat().st_size for n in ck.files)
    into = {k: torch.zeros(256) for k in _state()}
    checkpoint_dcp.load(ck, into)  # type: ignore[arg-type]
    assert float(into["layer7.weight"][0]) == 27.0  # step 20's values: seed 20 + 7


def test_no_metadata_means_partial(tmp_path: Path) -> None:
    _save(tmp_path, 1)
    crashed = _save(tmp_path, 2)
    (crashed / ".metadata").unlink()  # the coordinator died before writing it
    assert checkpoint.latest(tmp_path).step == 1  # type: ignore[union-attr]


def test_a_cut_shard_fails_the_size_check(tmp_path: Path) -> None:
    _save(tmp_path, 1)
    path = _save(tmp_path, 2)
    shard = next(p for p in sorted(path.iterdir()) if p.suffix == ".distcp")
    shard.write_bytes(shard.read_bytes()[:10])
    assert checkpoint.latest(tmp_path).step == 1  # type: ignore[union-attr]
    assert checkpoint.latest(tmp_path, verify="none").step == 2  # type: ignore[union-attr]


def test_hashes_are_opt_in_and_hash_verification_needs_them(tmp_path: Path) -> None:
    _save(tmp_path, 1, hashes=True)
    path = _save(tmp_path, 2, hashes=True)
    assert checkpoint.latest(tmp_path, verify="hash").step == 2  # type: ignore[union-attr]
    shard = next(p for p in sorted(path.iterdir()) if p.suffix == ".distcp")
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF  # same size, one bit flipped
    shard.write_bytes(bytes(data))
    assert checkpoint.latest(tmp_path).step == 2  # type: ignore[union-attr]
    assert checkpoint.latest(tmp_path, verify="hash").step == 1  # type: ignore[union-attr]
    _save(tmp_path, 3)  # no digests recorded: "hash" cannot vouch for it
    assert checkpoint.latest(tmp_path, verify="hash").step == 1  # type: ignore[union-attr]


def test_a_rerun_of_a_step_is_never_complete_half_way(tmp_path: Path) -> None:
    path = _save(tmp_path, 5, hashes=True)
    marker = (path / ".metadata").stat().st_mtime_ns
    _save(tmp_path, 5)  # the old .metadata and digests go first
    assert (path / ".metadata").stat().st_mtime_ns >= marker
    assert not any(n.startswith(".dolmen-sha256-") for n in os.listdir(path))
    for step in (6, 7):
        _save(tmp_path, step, keep=2)
    assert sorted(os.listdir(tmp_path)) == ["step-000000000006", "step-000000000007"]


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch PWNED",))


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"junk",
        pickle.dumps({"storage_data": {}}),
        pickle.dumps(["a", 1]),
        pickle.dumps(_Boom()),
    ],
    ids=["empty", "junk", "a-dict", "a-list", "hostile"],
)
def test_metadata_that_is_not_a_checkpoint(
    raw: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert checkpoint_dcp.parse_metadata(raw) is None
    assert not (tmp_path / "PWNED").exists()  # nothing the pickle named was run


def test_truncated_metadata(tmp_path: Path) -> None:
    path = _save(tmp_path, 1)
    raw = (path / ".metadata").read_bytes()
    assert checkpoint_dcp.parse_metadata(raw) is not None
    for cut in (1, len(raw) // 2, len(raw) - 1):
        assert checkpoint_dcp.parse_metadata(raw[:cut]) is None
    (path / ".metadata").write_bytes(raw[: len(raw) // 2])
    assert checkpoint.latest(tmp_path) is None


RANK = """
import os, sys, torch, torch.distributed as dist
from dolmen.jobs import checkpoint, checkpoint_dcp
dist.init_process_group("gloo")
r = dist.get_rank()
state = {f"rank{r}.w{i}": torch.full((1024,), float(r * 100 + i)) for i in range(3)}
checkpoint_dcp.save(sys.argv[1], 4, state)
dist.barrier()
ck = checkpoint.latest(sys.argv[1])
back = {k: torch.zeros(1024) for k in state}
checkpoint_dcp.load(ck, back)
print(r, ck.step, sorted(ck.files), float(back[f"rank{r}.w2"][0]), flush=True)
dist.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_two_gloo_ranks_each_write_their_shard(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "WORLD_SIZE": "2",
        "GLOO_SOCKET_IFNAME": "lo",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RANK, str(tmp_path)],
            env={**env, "RANK": str(r)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(2)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-2000:]
        outs.append(out.split())
    assert [o[0] for o in outs] == ["0", "1"]
    shards = "['__0_0.distcp', '__1_0.distcp']"
    assert all(" ".join(o[2:4]) == shards for o in outs)
    assert [o[-1] for o in outs] == ["2.0", "102.0"]
    assert sorted(os.listdir(tmp_path / "step-000000000004")) == [
        ".metadata",
        "__0_0.distcp",
        "__1_0.distcp",
    ]
