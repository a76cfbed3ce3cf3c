"""The site configuration: sections and keys validated at load, with the file, the line and
the valid choices; the shared TOML helpers the job file and tuning profiles use."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.config import check_keys, load_config, parse_config, parse_toml
from dolmen.errors import ConfigError


def test_valid_config() -> None:
    c = parse_config(
        '[validate]\nlevel = "quick"\nexpected_gpus = 8\ndisable = ["tuning"]\n\n'
        '[thresholds."gpu.temperature"]\nmargin_warn_c = 10\n'
    )
    assert c.get("validate", "expected_gpus") == 8
    assert c.thresholds("gpu.temperature") == {"margin_warn_c": 10}
    assert c.thresholds("gpu.power") == {}


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("[validat]\nlevel = 1\n", "unknown section [validat]; valid sections: audit,", 1),
        (
            "[validate]\n\nexpected_gpu = 8\n",
            "unknown key 'expected_gpu' in [validate]; valid keys:",
            3,
        ),
        ('[validate]\nexpected_gpus = "8"\n', "[validate] expected_gpus must be int, not str", 2),
        ("[validate]\nexpected_gpus = true\n", "[validate] expected_gpus must be int, not bool", 2),
        ("[validate\nlevel = 1\n", "not valid TOML", 1),
        ("validate = 3\n", "validate must be a table", 1),
    ],
)
def test_bad_config_names_file_line_and_choices(text: str, message: str, line: int) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(text, "/etc/dolmen/dolmen.toml")
    assert message in str(e.value)
    assert e.value.path == "/etc/dolmen/dolmen.toml" and e.value.line == line


def test_default_file_and_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path))
    assert load_config().sections == {}  # no file: defaults
    (tmp_path / "dolmen.toml").write_text("[validate]\nexpected_gpus = 4\n")
    assert load_config().get("validate", "expected_gpus") == 4
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "absent.toml")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(ConfigError, match="cannot read the configuration file"):
        load_config(tmp_path / "bin.toml")


def test_cli_reports_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "dolmen.toml"
    bad.write_text("[validate]\nexpected_gpus = 8\nlevel = 3\n")
    assert main(["validate", "--config", str(bad), "--from", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"dolmen: error: {bad}:3: [validate] level must be str, not int"]


def test_shared_helpers() -> None:
    assert parse_toml('a = 1\n[b]\nc = "x"\n', "f.toml") == {"a": 1, "b": {"c": "x"}}
    with pytest.raises(ConfigError, match=r"f\.toml:2: not valid TOML"):
        parse_toml("a = 1\nb = \n", "f.toml")
    check_keys({"n": 2, "t": "1h"}, {"n": int, "t": (str, int)}, text="", path="job.toml")
    with pytest.raises(ConfigError, match="t must be str or int, not float"):
        check_keys({"t": 1.5}, {"t": (str, int)}, text="t = 1.5\n", path="job.toml")
