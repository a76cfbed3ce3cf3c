"""The Slurm hooks bound their run (``--timeout``, ``[slurm] hook_timeout``, else 45 s:
slurmd kills a HealthCheckProgram at 60 s): a hung nvidia-smi (a stand-in script on PATH)
leaves the node undecided and the hook's line names what it waited on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dolmen.config import parse_config
from dolmen.errors import ConfigError
from dolmen.slurm.hooks import HOOK_TIMEOUT, run_hook
from dolmen.values.duration import parse_duration


def test_the_default_leaves_slurmd_time_to_hear_the_verdict() -> None:
    assert parse_duration(HOOK_TIMEOUT).total_seconds() < 60


@pytest.mark.parametrize("value", ['"0s"', '"soon"', "30"])
def test_a_bad_hook_timeout_is_refused_at_load(value: str) -> None:
    with pytest.raises(ConfigError, match="hook_timeout"):
        parse_config(f"[slurm]\nhook_timeout = {value}\n")


def test_a_hung_nvidia_smi_leaves_the_node_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dolmen.host.gpu.nvml import read_nvml

    if not str(read_nvml()).startswith("not loaded"):
        pytest.skip("NVML loads here: the live host would not run nvidia-smi")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "nvidia-smi").write_text("#!/bin/sh\nexec sleep 3600\n")
    # scontrol as slurmd's node would answer: the node is idle, nobody drained it
    (bin_ / "scontrol").write_text('#!/bin/sh\necho "NodeName=n1 State=IDLE Reason=(null)"\n')
    for tool in bin_.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")
    conf = tmp_path / "dolmen.toml"
    conf.write_text('[slurm]\nhook_timeout = "1s"\n')
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path))
    t0 = time.monotonic()
    assert run_hook("healthcheck") == 0
    assert time.monotonic() - t0 < 4
    err = capsys.readouterr().err
    assert "dolmen: undecided: timed out after 1 s on nvidia-smi" in err
    assert "undecided: left as it is" in err
