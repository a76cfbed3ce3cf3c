"""Named bench baselines under the state folder, and where a run writes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from dolmen.compat import UTC
from dolmen.errors import EnvironmentProblem, InputError, UsageError
from dolmen.report.bench import store
from dolmen.report.bench.output import run_folder, runs_dir, write_run
from tests.report.bench.conftest import fixture_doc


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def test_save_list_load(state: Path) -> None:
    assert store.baseline_names() == []
    doc = fixture_doc("cpu-smoke")
    path = store.save_baseline("before-tune", doc)
    assert path == state / "bench" / "baselines" / "before-tune.json"
    store.save_baseline("v1.2_x", fixture_doc("h100x8"))
    assert store.baseline_names() == ["before-tune", "v1.2_x"]
    assert store.load_baseline("before-tune") == doc


@pytest.mark.parametrize("name", ["../x", "a/b", ".hidden", "", "x" * 65, "a b", "é"])
def test_names_are_never_paths(name: str) -> None:
    with pytest.raises(UsageError, match="is not allowed"):
        store.baseline_path(name)


def test_an_unknown_name_lists_the_stored_ones() -> None:
    with pytest.raises(InputError, match=r"no bench baseline named 'x' \(stored: none yet\)"):
        store.load_baseline("x")
    store.save_baseline("a", fixture_doc("cpu-smoke"))
    with pytest.raises(InputError, match=r"\(stored: a\)"):
        store.load_baseline("x")


def test_a_corrupt_baseline_is_an_input_error(state: Path) -> None:
    path = store.save_baseline("a", fixture_doc("cpu-smoke"))
    path.write_text("{")
    with pytest.raises(InputError, match=r"a\.json: not JSON"):
        store.load_baseline("a")


def test_an_unwritable_state_folder_is_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state "folder" that is a file refuses even root (the tests may run as root)."""
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "file"))
    with pytest.raises(EnvironmentProblem, match="cannot store bench baseline 'a'"):
        store.save_baseline("a", fixture_doc("cpu-smoke"))
    with pytest.raises(EnvironmentProblem, match="cannot create"):
        run_folder(None, NOW)


NOW = datetime(2026, 12, 1, 16, 30, 5, tzinfo=UTC)


def test_default_run_folder_is_timestamped_under_the_state() -> None:
    assert run_folder(None, NOW) == runs_dir() / "20261201T163005Z"
    assert (runs_dir() / "20261201T163005Z").is_dir()


def test_out_folder_new_existing_and_refused(tmp_path: Path) -> None:
    assert run_folder(str(tmp_path / "new"), NOW) == tmp_path / "new"
    assert run_folder(str(tmp_path / "new"), NOW) == tmp_path / "new"  # exists: fine
    with pytest.raises(UsageError, match="does not exist"):
        run_folder(str(tmp_path / "a" / "b"), NOW)  # no parents created
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a regular file, not a folder"):
        run_folder(str(tmp_path / "file"), NOW)


def test_write_run_without_plots(tmp_path: Path) -> None:
    written, note = write_run(fixture_doc("cpu-smoke"), tmp_path, plots=False)
    assert written == [tmp_path / "bench.json"] and note == "plots skipped: --no-plots"
