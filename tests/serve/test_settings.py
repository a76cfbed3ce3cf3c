"""``dolmen serve``'s settings: flags over ``[serve]`` over defaults, each refused early
with the form it takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dolmen.config import Config, load_config
from dolmen.errors import ConfigError, UsageError
from dolmen.serve.server import parse_listen
from dolmen.serve.settings import resolve


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("127.0.0.1:9405", ("127.0.0.1", 9405)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("[::1]:9405", ("::1", 9405)),
        ("node-1.example:9405", ("node-1.example", 9405)),
        ("9405", None),
        (":9405", None),
        ("host:", None),
        ("host:99999", None),
        ("host:-1", None),
        ("host:port", None),
        ("", None),
    ],
)
def test_parse_listen(text: str, want: tuple[str, int] | None) -> None:
    if want is None:
        with pytest.raises(UsageError, match="HOST:PORT"):
            parse_listen(text)
    else:
        assert parse_listen(text) == want


def _flags(**kw: Any) -> dict[str, Any]:
    return {"listen": None, "interval": None, "run_timeout": None, "max_age": None,
            "state": None, "tls_cert": None, "tls_key": None, "tls_client_ca": None,
            "fleet": None, "source": None} | kw  # fmt: skip


def test_defaults_flags_and_config(tmp_path: Path) -> None:
    s = resolve(_flags(), Config())
    assert (s.listen.host, s.listen.port, s.interval, s.run_timeout) == ("127.0.0.1", 9405, 300, 60)
    assert s.open_reads is True and s.max_age is None  # loopback: reads open
    conf = tmp_path / "dolmen.toml"
    conf.write_text('[serve]\nlisten = "0.0.0.0:9500"\ninterval = "30s"\nmax_age = "2m"\n')
    s = resolve(_flags(), load_config(conf))
    assert (s.listen.port, s.interval, s.max_age, s.open_reads) == (9500, 30, 120, False)
    s = resolve(_flags(interval="10s", listen="127.0.0.1:1"), load_config(conf))
    assert (s.listen.port, s.interval) == (1, 10)  # a flag wins over the file
    assert resolve(_flags(state=str(tmp_path)), Config()).folder == tmp_path / "serve"


@pytest.mark.parametrize(
    "body",
    ['interval = "0s"', 'interval = "soon"', "interval = 5", 'max_age = "-1m"',
     "open_reads = 1", 'listen = ""', 'unknown = "x"', 'state = "a\\nb"'],
)  # fmt: skip
def test_bad_serve_config_is_refused_at_load(tmp_path: Path, body: str) -> None:
    conf = tmp_path / "dolmen.toml"
    conf.write_text(f"[serve]\n{body}\n")
    with pytest.raises(ConfigError):
        load_config(conf)


def test_bad_flags_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="--interval"):
        resolve(_flags(interval="never"), Config())
    with pytest.raises(UsageError, match="go together"):
        resolve(_flags(tls_key="/k.pem"), Config())
    with pytest.raises(UsageError, match="mutual TLS"):
        resolve(_flags(tls_client_ca="/ca.pem"), Config())


@pytest.mark.parametrize("flag", ["state", "fleet"])
def test_a_state_or_fleet_that_is_no_folder_is_refused(tmp_path: Path, flag: str) -> None:
    """A FIFO as --fleet was served (and its page failed); a file as --state got two lines,
    'serving read-only' then a token file error."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=f"--{flag} {fifo}: a FIFO, not a folder"):
        resolve(_flags(**{flag: str(fifo)}), Config())
    made_later = tmp_path / "new"
    assert getattr(resolve(_flags(**{flag: str(made_later)}), Config()), flag) == made_later
