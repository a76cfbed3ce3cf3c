"""Per-job encrypted scratch on a real fscrypt v2 filesystem (a loop-mounted ext4 made with
``-O encrypt``): the key added, the policy set, the files readable during the job and
ciphertext after it (crypto-shredding), the resumed job reading its checkpoints back, and the
local backend's supervisor doing both ends."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen.audit.reader import read_entries
from dolmen.config import Config
from dolmen.crypt.keys import provider_for
from dolmen.crypt.scratch import close_scratch, open_scratch, record_path
from dolmen.errors import EnvironmentProblem, UsageError
from dolmen.host import fscrypt
from tests.crypt.fsmount import encrypted_ext4


@pytest.fixture(scope="module")
def mount(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with encrypted_ext4(tmp_path_factory.mktemp("fscrypt")) as point:
        yield point


def actions(state: Path) -> list[tuple[str, str]]:
    log = state / "audit" / "audit.log"
    return [(e.event.action, e.event.outcome) for e in read_entries(log) if e.event]


def test_scratch_is_shredded_at_the_end(mount: Path, dolmen_dirs: Path) -> None:
    provider = provider_for(Config(), "file")
    folder = mount / "job-7"
    s = open_scratch(folder, "7", provider)
    assert fscrypt.policy_identifier(folder) == s.identifier
    assert fscrypt.key_status(mount, s.identifier) == "present"
    (folder / "step-100.pt").write_bytes(b"weights" * 1000)
    assert (folder / "step-100.pt").read_bytes().startswith(b"weights")
    assert record_path("7").stat().st_mode & 0o777 == 0o600

    removal = close_scratch(s)
    assert not removal.busy and fscrypt.key_status(mount, s.identifier) == "absent"
    names = os.listdir(folder)
    assert names != ["step-100.pt"] and len(names) == 1  # the names are ciphertext too
    with pytest.raises(OSError) as e:
        (folder / names[0]).read_bytes()
    assert e.value.errno == errno.ENOKEY
    assert not record_path("7").exists()  # the wrapped key is gone: nobody can bring it back
    assert actions(dolmen_dirs) == [
        ("crypt.scratch_open", "unknown"),
        ("crypt.scratch_open", "success"),
        ("crypt.scratch_shred", "success"),
    ]


def test_a_resumed_job_reads_its_checkpoints_back(mount: Path, dolmen_dirs: Path) -> None:
    provider = provider_for(Config(), "file")
    folder = mount / "job-8"
    first = open_scratch(folder, "8", provider)
    (folder / "ckpt").write_text("step 5")
    fscrypt.remove_key(mount, first.identifier)  # the supervisor died; the key went with it
    again = open_scratch(folder, "8", provider)  # a key release, audited
    assert again.identifier == first.identifier and (folder / "ckpt").read_text() == "step 5"
    assert ("keys.release", "success") in actions(dolmen_dirs)
    with pytest.raises(EnvironmentProblem, match="not encrypted with job 9"):
        record_path("9").write_bytes(record_path("8").read_bytes())
        open_scratch(folder, "9", provider)  # a record of another job: another context
    close_scratch(again)


def test_refusals(mount: Path, dolmen_dirs: Path, tmp_path: Path) -> None:
    provider = provider_for(Config(), "file")
    used = mount / "used"
    used.mkdir()
    (used / "old").write_text("x")
    with pytest.raises(UsageError, match="not an empty folder"):
        open_scratch(used, "10", provider)
    with pytest.raises(EnvironmentProblem, match="cannot create it"):
        open_scratch(mount / "no" / "parent", "11", provider)
    with pytest.raises(EnvironmentProblem, match="cannot add an fscrypt key") as e:
        open_scratch(tmp_path / "plain", "12", provider)  # tmpfs or ext4 without encrypt
    assert "mkfs.ext4 -O encrypt" in (e.value.hint or "")
    assert not (tmp_path / "plain").exists()  # nothing left behind
    assert actions(dolmen_dirs)[-1] == ("crypt.scratch_open", "failure")


def test_the_local_supervisor_encrypts_and_shreds(mount: Path, dolmen_dirs: Path) -> None:
    from dolmen.jobs.backend import JobState
    from dolmen.jobs.spec import JobSpec
    from tests.jobs.conftest import make_local, stop_all, wait_for

    folder = mount / "job-local"
    code = (
        "import os, pathlib; d = pathlib.Path(os.environ['DOLMEN_CHECKPOINT_DIR']);"
        "(d / 'w.pt').write_text('secret')"
    )
    spec = JobSpec(
        name="enc",
        command=(sys.executable, "-c", code),
        checkpoint_dir=str(folder),
        scratch="encrypted",
    )
    local = make_local()
    try:
        job = local.submit(spec).job_id
        st = wait_for(lambda: (s := local.status(job)).state.done and s, what=job)
        assert st.state is JobState.COMPLETED, st
    finally:
        stop_all(local)
    names = os.listdir(folder)
    assert len(names) == 1 and names != ["w.pt"]
    with pytest.raises(OSError):
        (folder / names[0]).read_text()
    seen = actions(dolmen_dirs)
    assert ("crypt.scratch_shred", "success") in seen


def test_the_job_option_is_checked() -> None:
    from dolmen.jobs.jobfile import merge, parse_jobfile
    from dolmen.jobs.spec import JobSpec

    text = 'command = ["true"]\ncheckpoint_dir = "/x"\nscratch = "encrypted"\n'
    spec = merge(parse_jobfile(text, "job.toml"), {})
    assert spec.scratch == "encrypted"
    spec.check()
    for bad in (
        JobSpec(name="a", command=("true",), scratch="encrypted"),  # no checkpoint_dir
        JobSpec(name="a", command=("true",), checkpoint_dir="/x", scratch="tmpfs"),
    ):
        with pytest.raises(UsageError, match='only "encrypted", with a checkpoint_dir'):
            bad.check()
