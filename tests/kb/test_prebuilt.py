"""kb/prebuilt.py (the tables as code that a run imports) matches kb/data/*.toml exactly, and
the build matrix of cuDNN, NCCL and TensorRT loads and validates like the other tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.kb import KbDataError, load_kb, prebuilt
from dolmen.kb.builds import load_builds
from dolmen.kb.generate import _tables, prebuilt_source

PREBUILT = Path(prebuilt.__file__)


def test_the_prebuilt_module_is_current() -> None:
    """A data file edited without regenerating would silently keep the old figures."""
    assert PREBUILT.read_text() == prebuilt_source(), "run: python -m dolmen.kb"


@pytest.mark.parametrize(("name", "load"), [(n, load) for n, _, load in _tables()])
def test_each_prebuilt_table_equals_its_data_file(name: str, load: object) -> None:
    assert callable(load)
    assert getattr(prebuilt, name)() == load()


def test_the_kb_serves_the_prebuilt_tables() -> None:
    kb = load_kb()
    assert kb.builds == load_builds() and kb.builds is load_kb().builds
    assert kb.gpus.match("NVIDIA H100 80GB HBM3") is not None  # patterns compiled


def test_build_table_rows() -> None:
    table = load_builds()
    assert [b.id for b in table.libraries] == ["cudnn", "nccl", "tensorrt"]
    cudnn = table.get("cudnn")
    assert cudnn.name == "cuDNN" and cudnn.rows[0] == (11, (8, 0), (9, 10))
    assert cudnn.range_text(11) == "8.0 to 9.10" and cudnn.range_text(13) == "9.12 or later"
    with pytest.raises(KeyError):
        table.get("cublas")


ROW = 'id = "x"\nname = "X"\nsource = "s"\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"[[library]]\n{ROW}builds = []\n", "each CUDA major once"),
        (
            f"[[library]]\n{ROW}builds = [{{ cuda = 12, first = '1' }}, {{ cuda = 12, first = '2' }}]\n",
            "each CUDA major once",
        ),
        (f"[[library]]\n{ROW}builds = [{{ cuda = 12 }}]\n", "no 'first'"),
        (f"[[library]]\n{ROW}builds = [{{ cuda = 12, first = '9.x' }}]\n", "not a version"),
        (f"[[library]]\n{ROW}builds = [{{ cuda = true, first = '9' }}]\n", "CUDA major"),
        (f"[[library]]\n{ROW}builds = [{{ cuda = 12, first = '9', lats = '9.1' }}]\n", "cuda = N"),
        (f"[[library]]\n{ROW}builds = [{{ cuda = 12, first = '9' }}]\n" * 2, "duplicate id"),
        ('[[library]]\nid = "x"\nname = "X"\nbuilds = []\n', "no source"),
    ],
)
def test_a_broken_build_table_fails_naming_the_row(text: str, message: str) -> None:
    with pytest.raises(KbDataError, match=message) as e:
        load_builds(text)
    assert str(e.value).startswith("builds.toml: ")
