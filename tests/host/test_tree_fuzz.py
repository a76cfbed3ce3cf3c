"""Property (issue 9, "random non-regular files in trees"): FIFOs, sockets, character
devices, link loops and huge sparse files put at random paths of a scenario tree.

``validate --from`` always ends within a time bound, never crashes, and never invents
a fault: a finding that fails on the fuzzed tree fails on the clean tree too (what
cannot be read is unknown or skip). Trials: ``DOLMEN_FUZZ_TRIALS`` (default 12). The
draws are random: a failure prints the ``@reproduce_failure`` that replays it, and each
fault it found has a test of its own below, which runs every time.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hosts.scenarios import build

TRIALS = int(os.environ.get("DOLMEN_FUZZ_TRIALS", "12"))
BOUND_S = 60.0  # one validate of a tree takes about a second; a hang is caught here
KINDS = ["fifo", "socket", "chardev", "loop", "self-link", "sparse", "dev-zero-link", "dir"]
META = "dolmen-snapshot.json"
_RUN = "import sys; from dolmen.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _validate(tree: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", _RUN, "validate", "--from", str(tree), "--json"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=BOUND_S, check=False)


def _statuses(doc: dict[str, object]) -> dict[tuple[str, str], str]:
    findings = doc["findings"]
    assert isinstance(findings, list)
    return {(f["check"], f["subject"]): f["status"] for f in findings}


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[tuple[str, str], str]]:
    tree = build("h100-xid79", tmp_path_factory.mktemp("clean") / "tree")
    done = _validate(tree)
    return tree, _statuses(json.loads(done.stdout))


def _plant(path: Path, kind: str) -> None:
    """Replace the file at ``path`` by something that is not a regular file (or a huge one)."""
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        short = Path(tempfile.mkdtemp(dir="/tmp")) / "s"  # AF_UNIX paths are 107 bytes at most
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(short))  # the socket file stays, nobody listens
        os.rename(short, path)
        short.parent.rmdir()
    elif kind == "chardev":
        try:
            os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
        except PermissionError:
            os.mkfifo(path)  # not root: a FIFO instead
    elif kind == "loop":
        os.symlink(path.name + ".loop", path)
        os.symlink(path.name, path.with_name(path.name + ".loop"))
    elif kind == "self-link":
        os.symlink(path.name, path)
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(2 << 30)  # 2 GiB of hole, no disk used
    elif kind == "dev-zero-link":
        os.symlink("/dev/zero", path)  # re-rooted inside the tree: absent there
    elif kind == "dir":
        path.mkdir()


def _files(tree: Path) -> list[str]:
    return sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file())


@settings(
    max_examples=TRIALS,
    deadline=None,
    print_blob=True,  # a failure prints @reproduce_failure(...): paste it to rerun that draw
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_hostile_files_never_hang_crash_or_invent_a_fault(
    clean: tuple[Path, dict[tuple[str, str], str]], tmp_path: Path, data: st.DataObject
) -> None:
    source, before = clean
    files = _files(source)
    picks = data.draw(
        st.lists(st.tuples(st.sampled_from(files), st.sampled_from(KINDS)), min_size=1, max_size=4)
    )
    tree = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
    shutil.copytree(source, tree, symlinks=True)
    try:
        planted = {}
        for rel, kind in picks:
            if (tree / rel).is_file() and not (tree / rel).is_symlink():
                _plant(tree / rel, kind)
                planted[rel] = kind
        done = _validate(tree)  # TimeoutExpired here is the hang this test exists for
        assert "Traceback" not in done.stderr, (planted, done.stderr)
        if META in planted:  # the tree's own description is unreadable: one line, exit 2
            assert done.returncode == 2 and done.stderr.startswith("dolmen: error:"), planted
            return
        assert done.returncode in (0, 1, 2), (planted, done.stderr)
        after = _statuses(json.loads(done.stdout))
        invented = {
            k: s for k, s in after.items() if s in ("fail", "warn", "error") and before.get(k) != s
        }
        assert not invented, (planted, invented)
    finally:
        shutil.rmtree(tree, ignore_errors=True)


@pytest.mark.parametrize("kind", ["loop", "self-link"])
def test_a_snapshot_description_behind_a_bad_link_is_refused(
    clean: tuple[Path, dict[tuple[str, str], str]], tmp_path: Path, kind: str
) -> None:
    """Found by the fuzz above: a link loop at dolmen-snapshot.json read as "no metadata"."""
    tree = tmp_path / "t"
    shutil.copytree(clean[0], tree, symlinks=True)
    _plant(tree / META, kind)
    done = _validate(tree)
    assert done.returncode == 2 and done.stderr.startswith("dolmen: error:"), done.stderr


def test_a_fifo_at_a_link_layer_makes_its_port_unknown_not_warned(
    clean: tuple[Path, dict[tuple[str, str], str]], tmp_path: Path
) -> None:
    """Found by the fuzz above: a FIFO at the RoCE port's link_layer read as InfiniBand, and
    interconnect.ib.rate warned that the Ethernet port ran below InfiniBand's capability."""
    tree = tmp_path / "t"
    shutil.copytree(clean[0], tree, symlinks=True)
    _plant(tree / "sys/class/infiniband/mlx5_bond_0/ports/1/link_layer", "fifo")
    done = _validate(tree)
    after = _statuses(json.loads(done.stdout))
    for check in ("interconnect.ib.rate", "interconnect.roce"):
        assert after[(check, "ib:mlx5_bond_0/1")] == "unknown", after
    invented = {k: s for k, s in after.items() if s in ("fail", "warn") and clean[1].get(k) != s}
    assert not invented, invented
