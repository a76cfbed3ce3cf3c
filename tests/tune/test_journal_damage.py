"""Issue 9 case 3: a damaged journal is never half-read, and a rollback never says "restored"
unless every original reads back as saved.

Journals are made by real applies of the crash profile on the test host (in-process), then
damaged the way a disk, an editor or an older dolmen would.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.host.tree import TreeHost
from dolmen.tune.journal import journals, tune_dir
from dolmen.tune.journal_lines import line_sum
from dolmen.tune.journal_view import JournalView, State
from tests.tune.test_crash import CRASHY, dolmen
from tests.tune.trees import copy_tree, snapshot


@pytest.fixture
def config(dolmen_dirs: Path) -> Path:
    (dolmen_dirs / "profiles" / "crashy.toml").write_text(CRASHY)
    return dolmen_dirs


def run(capsys: pytest.CaptureFixture[str], tree: Path, *args: str) -> tuple[int, str, str]:
    rc = main(["tune", *args, "--root", str(tree)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def applied(
    capsys: pytest.CaptureFixture[str], pristine: Path, tmp_path: Path
) -> tuple[Path, Path]:
    """A tree with crashy applied, and its journal."""
    tree = copy_tree(pristine, tmp_path / "tree")
    rc, out, err = run(capsys, tree, "apply", "crashy", "--yes")
    assert rc == 0, out + err
    (path,) = journals(tune_dir(TreeHost(tree)))
    return tree, path


def rewrite(path: Path, records: list[dict]) -> None:
    """Write ``records`` back with valid sums: damage no checksum can see."""
    prev, lines = "", []
    for r in records:
        r = {k: v for k, v in r.items() if k != "sum"}
        r["sum"] = prev = line_sum(prev, r)
        lines.append(json.dumps(r, sort_keys=True) + "\n")
    path.write_text("".join(lines))


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b.replace(b'"after": "10"', b'"after": "11"'), id="valid-json"),
        pytest.param(lambda b: b[: len(b) // 2] + b"\n", id="cut-in-half"),
        pytest.param(lambda b: b"", id="deleted"),
    ],
)
def test_a_damaged_middle_line_stops_every_command_with_file_and_line(
    damage, config: Path, pristine_host: Path, tmp_path: Path, capsys
) -> None:
    tree, path = applied(capsys, pristine_host, tmp_path)
    tuned = snapshot(tree)
    rows = lines(path)
    assert b'"after": "10"' in rows[2]  # the done record of vm.swappiness
    rows[2] = damage(rows[2])
    path.write_bytes(b"".join(rows))
    for cmd in (["rollback", "--yes"], ["status"], ["verify"], ["apply", "crashy", "--yes"]):
        rc, out, err = run(capsys, tree, *cmd)
        assert rc == 2, (cmd, rc, out, err)
        assert f"{path}:3: tune journal damaged" in err, err
        assert "Traceback" not in err
    assert snapshot(tree) == tuned  # nothing restored from a half-read journal


def test_an_emptied_or_junk_journal_is_not_no_profile_active(
    config: Path, pristine_host: Path, tmp_path: Path, capsys
) -> None:
    tree, path = applied(capsys, pristine_host, tmp_path)
    for content, line in ((b"", 1), (b"junk\n", 1), (b'{"seq": 0, "type": "begin"', 1)):
        path.write_bytes(content)
        rc, out, err = run(capsys, tree, "status")
        assert rc == 2 and f"{path}:{line}: tune journal damaged" in err, (content, out, err)
        rc, out, err = run(capsys, tree, "rollback", "--yes")
        assert rc == 2 and "nothing to roll back" not in out


@pytest.mark.timeout(60)
def test_a_fifo_among_the_journals_is_damage_not_a_hang(
    config: Path, pristine_host: Path, tmp_path: Path, capsys
) -> None:
    """tune status blocked for ever opening a FIFO planted in the journals folder."""
    import os

    tree, path = applied(capsys, pristine_host, tmp_path)
    path.unlink()
    os.mkfifo(path)
    rc, _out, err = run(capsys, tree, "status")
    assert rc == 2 and f"{path}:1: tune journal damaged: not a regular file (FIFO)" in err


def test_a_done_without_its_save_is_refused(
    config: Path, pristine_host: Path, tmp_path: Path, capsys
) -> None:
    tree, path = applied(capsys, pristine_host, tmp_path)
    records = [json.loads(r) for r in lines(path)]
    assert records[1]["type"] == "save"
    del records[1]
    for n, r in enumerate(records):
        r["seq"] = n
    rewrite(path, records)
    rc, _, err = run(capsys, tree, "status")
    assert rc == 2 and f"{path}:2:" in err and "without its save record" in err


@pytest.mark.parametrize(
    "begin",
    [
        {"steps": 5},
        {"steps": ["0"]},
        {"changes": "x"},
        {"changes": [1]},
        {"changes": [{"target": []}]},
        {"profile": ["a"]},
        {"steps": [999]},
    ],
    ids=str,
)
def test_a_begin_record_of_the_wrong_type_crashes_no_command(
    begin: dict, config: Path, pristine_host: Path, tmp_path: Path, capsys
) -> None:
    tree, path = applied(capsys, pristine_host, tmp_path)
    records = [json.loads(r) for r in lines(path)]
    records[0].update(begin)
    rewrite(path, records)
    for cmd in (["status"], ["verify"], ["rollback", "--yes"], ["recover", "--rollback"]):
        rc, _, err = run(capsys, tree, *cmd)
        assert rc == 2 and f"{path}:1: tune journal damaged: the begin record" in err, (cmd, err)
    rc, _, err = run(capsys, tree, "plan", "crashy")  # planning never writes: a warning
    assert rc == 0 and "warning" in err and f"{path}:1" in err


def test_a_torn_last_line_is_ignored_and_cut_before_the_next_line(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    tree, state = copy_tree(pristine_host, tmp_path / "t"), tmp_path / "s"
    assert dolmen(tree, state, config, "apply", "crashy", "--yes", crash="6").returncode == -9
    (path,) = (state / "tune" / "trees").glob("*/journals/*.jsonl")
    with open(path, "ab") as f:
        f.write(b'{"after": "4')  # power lost while the done record was written
    rec = dolmen(tree, state, config, "recover", "--rollback")
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert snapshot(tree) == snapshot(pristine_host)
    assert JournalView.read(path).state is State.CLOSED  # the fragment is gone, not buried


def test_rollback_fails_unless_every_original_reads_back(
    config: Path, pristine_host: Path, tmp_path: Path, capsys
) -> None:
    """The saved original of vm.swappiness says 61 while the host read 60 before the apply
    (a journal whose sums are valid, so only the read-back can tell): today's code said
    "11 originals restored", exit 0."""
    tree, path = applied(capsys, pristine_host, tmp_path)
    records = [json.loads(r) for r in lines(path)]
    save = records[1]
    assert save["before"].strip() == "60"
    save["original"]["b64"] = base64.b64encode(b"61\n").decode()
    rewrite(path, records)
    rc, out, err = run(capsys, tree, "rollback", "--yes")
    assert rc == 3, out + err
    assert "rollback incomplete" in out and "vm.swappiness" in out
    assert JournalView.read(path).state is State.ROLLING_BACK  # open: a rerun retries


def test_a_folder_apply_created_that_is_not_empty_is_not_back(
    config: Path, pristine_host: Path, tmp_path: Path, capsys
) -> None:
    tree, _ = applied(capsys, pristine_host, tmp_path)
    foreign = tree / "etc/default/grub.d/50-site.cfg"
    foreign.write_text("# someone else's\n")
    rc, out, err = run(capsys, tree, "rollback", "--yes")
    assert rc == 3 and "etc/default/grub.d" in out and "50-site.cfg" in out, out + err
    foreign.unlink()
    rc, out, err = run(capsys, tree, "recover", "--rollback")
    assert rc == 0, out + err
    assert snapshot(tree) == snapshot(pristine_host)


def test_a_journal_of_the_previous_format_is_still_recovered(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    """Format 1 (no ``format``, no sums: what dolmen wrote before) is read and appended to
    in format 1, so an apply interrupted before an upgrade can be rolled back after it."""
    tree, state = copy_tree(pristine_host, tmp_path / "t"), tmp_path / "s"
    assert dolmen(tree, state, config, "apply", "crashy", "--yes", crash="9").returncode == -9
    (path,) = (state / "tune" / "trees").glob("*/journals/*.jsonl")
    old = [json.loads(r) for r in lines(path)]
    for r in old:
        r.pop("sum")
        r.pop("format", None)
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in old))
    rec = dolmen(tree, state, config, "recover", "--rollback")
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert snapshot(tree) == snapshot(pristine_host)
    after = [json.loads(r) for r in lines(path)]
    assert after[-1]["type"] == "end" and not any("sum" in r for r in after)
