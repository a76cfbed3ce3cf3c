"""The site configuration: sections and keys validated at load, with the file, the line and
the valid choices; the shared TOML helpers the job file and tuning profiles use."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# Issue 9 case 8: values out of range, unknown thresholds, keys not implemented.

BAD_VALUES = [
    ("validate", "xid_window_hours", "-5"),
    ("validate", "xid_window_hours", "nan"),
    ("validate", "xid_window_hours", "0"),
    ("validate", "xid_window_hours", "inf"),
    ("validate", "expected_gpus", "-1"),
    ("validate", "expected_ib_ports", "-1"),
    ("validate", "expected_ib_ports", "2000"),
    ("validate", "expected_ib_ports", '"8"'),
    ("validate", "expected_ib_rate", "0"),
    ("validate", "expected_ib_rate", "-400"),
    ("validate", "expected_ib_rate", "nan"),
    ("validate", "expected_ib_rate", "inf"),
    ("validate", "expected_ib_rate", "4000"),
    ("validate", "expected_ib_rate", '"400G"'),
    ("validate", "expected_ib_rate", "true"),
    ("validate", "level", '"fast"'),
    ("validate", "disable", '["gpu", ""]'),
    ("validate", "baseline", '""'),
    ("validate", "slurm_drain", "true"),
    ("audit", "rotate_bytes", "-1"),
    ("audit", "rotate_seconds", "-0.5"),
    ("audit", "checkpoint_every", "-3"),
    ("audit", "path", '"/var/log/x\\ny"'),
    ("tune", "profile", '""'),
    ("jobs", "default_gpus_per_node", "-2"),
    ("jobs", "default_gpus_per_node", "100000"),
]


def test_ib_expectations_load() -> None:
    c = parse_config("[validate]\nexpected_ib_ports = 8\nexpected_ib_rate = 400\n")
    assert (c.get("validate", "expected_ib_ports"), c.get("validate", "expected_ib_rate")) == (
        8,
        400,
    )
    assert parse_config("[validate]\nexpected_ib_rate = 2.5\n").get("validate", "expected_ib_rate")


@pytest.mark.parametrize(("section", "key", "value"), BAD_VALUES)
def test_values_out_of_range_are_refused_with_file_and_line(
    section: str, key: str, value: str
) -> None:
    text = f"# site\n[{section}]\n{key} = {value}\n"
    with pytest.raises(ConfigError) as e:
        parse_config(text, "/etc/dolmen/dolmen.toml")
    assert e.value.line == 3 and e.value.path == "/etc/dolmen/dolmen.toml"
    assert str(e.value).startswith(f"/etc/dolmen/dolmen.toml:3: [{section}] {key} must ")


def test_in_range_values_load() -> None:
    c = parse_config(
        '[validate]\nxid_window_hours = 0.5\nexpected_gpus = 0\nlevel = "Quick"\n'
        'baseline = "fleet.json"\n[audit]\nrotate_bytes = 0\n'
    )
    assert c.get("validate", "xid_window_hours") == 0.5


def test_cli_refuses_a_negative_xid_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "dolmen.toml"
    bad.write_text("[validate]\nxid_window_hours = -5\n")
    assert main(["validate", "--config", str(bad), "--from", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"dolmen: error: {bad}:2: [validate] xid_window_hours must be above 0")


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ('[thresholds."gpu.temprature"]\nmax_c = 1\n', "no such check", 1),
        ('\n[thresholds."gpu.temperature"]\nmargin_warn = 1\n', "unknown key 'margin_warn'", 3),
        ('[thresholds."gpu.temperature"]\nmargin_warn_c = -3\n', "must be at least 0", 2),
        ('[thresholds."gpu.temperature"]\nmargin_warn_c = "10"\n', "must be a number", 2),
        ('[thresholds."gpu.temperature"]\nmargin_warn_c = 1.5\n', "must be an integer", 2),
        ('[thresholds."gpu.xid"]\nwindow_hours = 0\n', "must be above 0", 2),
        ('[thresholds."gpu.xid"]\nwindow_hours = nan\n', "must be above 0", 2),
    ],
)
def test_thresholds_are_checked_against_the_registry(text: str, message: str, line: int) -> None:
    from dolmen.checks import load_registry
    from dolmen.config import check_thresholds

    limits = {i: s.limits for i, s in load_registry().items()}
    config = parse_config(text, "/etc/dolmen/dolmen.toml")
    with pytest.raises(ConfigError) as e:
        check_thresholds(config, limits)
    assert message in str(e.value) and e.value.line == line


def test_cli_refuses_an_unknown_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "dolmen.toml"
    bad.write_text('[thresholds."gpu.ecc.volatile_uncorrectable"]\nmaximum = 3\n')
    assert main(["validate", "--config", str(bad), "--from", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: unknown key 'maximum'" in err and "valid keys: max" in err


def test_site_baseline_is_the_default_of_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "dolmen.toml"
    cfg.write_text('[validate]\nbaseline = "absent.json"\n')  # relative to the config folder
    assert main(["validate", "--config", str(cfg), "--from", str(tmp_path)]) == 2
    assert str(tmp_path / "absent.json") in capsys.readouterr().err


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, str):
        return '"' + value.encode("unicode_escape").decode().replace('"', '\\"') + '"'
    return repr(value)


def _numbers() -> st.SearchStrategy[object]:
    return st.one_of(
        st.integers(min_value=-(1 << 62), max_value=1 << 62), st.floats(allow_nan=True)
    )


# key -> (section, accepted?) for numbers: what each range means, written a second time.
RANGES = {
    "xid_window_hours": ("validate", lambda v: 0 < v <= 24 * 366),
    "expected_gpus": ("validate", lambda v: isinstance(v, int) and 0 <= v <= 4096),
    "expected_ib_ports": ("validate", lambda v: isinstance(v, int) and 0 <= v <= 1024),
    "rotate_bytes": ("audit", lambda v: isinstance(v, int) and 0 <= v <= 1 << 50),
    "rotate_seconds": ("audit", lambda v: 0 <= v <= 3600 * 24 * 366),
    "checkpoint_every": ("audit", lambda v: isinstance(v, int) and 0 <= v <= 1 << 31),
    "default_gpus_per_node": ("jobs", lambda v: isinstance(v, int) and 0 <= v <= 1024),
}
FUZZ = {"trials": 0, "refused": 0}


@settings(max_examples=600, deadline=None)
@given(key=st.sampled_from(sorted(RANGES)), value=_numbers(), pad=st.integers(0, 5))
def test_random_numbers_per_key_are_refused_out_of_range_with_file_and_line(
    key: str, value: object, pad: int
) -> None:
    section, ok = RANGES[key]
    text = "\n" * pad + f"[{section}]\n{key} = {_toml(value)}\n"
    typed = isinstance(value, int) or "hours" in key or "seconds" in key
    fits = typed and value == value and ok(value)  # type: ignore[operator, no-untyped-call]
    FUZZ["trials"] += 1
    if fits:
        assert parse_config(text, "s.toml").get(section, key) == value
        return
    FUZZ["refused"] += 1
    with pytest.raises(ConfigError) as e:
        parse_config(text, "s.toml")
    assert e.value.path == "s.toml" and e.value.line == pad + 2


TEXT_KEYS = [("audit", "path"), ("audit", "key"), ("tune", "profile"), ("jobs", "state")]
TEXT_KEYS += [("validate", "baseline"), ("jobs", "slurm_python")]
TEXT_FUZZ = {"trials": 0, "refused": 0}


@settings(max_examples=300, deadline=None)
@given(
    where=st.sampled_from(TEXT_KEYS),
    value=st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
)
def test_random_text_per_key_is_refused_when_empty_or_with_control_characters(
    where: tuple[str, str], value: str
) -> None:
    import json

    section, key = where
    text = f"[{section}]\n\n{key} = {json.dumps(value, ensure_ascii=False)}\n"
    fits = bool(value.strip()) and not any(ord(c) < 32 or ord(c) == 127 for c in value)
    TEXT_FUZZ["trials"] += 1
    if fits:
        assert parse_config(text, "s.toml").get(section, key) == value
        return
    TEXT_FUZZ["refused"] += 1
    with pytest.raises(ConfigError) as e:
        parse_config(text, "s.toml")
    assert e.value.line == 3


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('provider = "hsm"', "[keys] provider must be one of file, vault, pkcs11"),
        ('pkcs11_key_id = "xyz"', "[keys] pkcs11_key_id must be 1 to 32 bytes in hex"),
        ('vault_address = "vault:8200"', "[keys] vault_address must be an address"),
        ("timeout = 0", "[keys] timeout must be above 0"),
        ('vault_token = "s.abc"', "unknown key 'vault_token' in [keys]"),
    ],
)
def test_keys_section_is_checked(body: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(f"[keys]\n{body}\n", "dolmen.toml")
    assert message in str(info.value) and "dolmen.toml:2" in str(info.value)


def test_keys_section_accepted() -> None:
    cfg = parse_config(
        '[keys]\nprovider = "vault"\nvault_address = "https://127.0.0.1:8200"\n'
        'pkcs11_key_id = "0a0B"\ntimeout = 2.5\n'
    )
    assert cfg.get("keys", "provider") == "vault"
