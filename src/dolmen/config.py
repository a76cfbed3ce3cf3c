"""The site configuration: ``/etc/dolmen/dolmen.toml`` (``$DOLMEN_CONFIG_DIR``, ``--config``).

Each section has a schema below; an unknown section or key, or a value of the
wrong type, is refused at load with the file, the line and the valid choices.

    [validate]
    level = "standard"            # quick | standard | full
    expected_gpus = 8
    disable = ["tuning.thp"]      # check ids or categories not to run
    baseline = "/etc/dolmen/baseline.json"

    [thresholds."gpu.temperature"]  # per-check limits; `dolmen validate --list` names them
    margin_warn_c = 10
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dolmen.errors import ConfigError
from dolmen.fsutil import read_regular
from dolmen.paths import config_dir

# section -> key -> accepted Python type(s). Add a section here with the feature that reads it.
SCHEMA: dict[str, dict[str, type | tuple[type, ...]]] = {
    "validate": {
        "level": str,
        "expected_gpus": int,
        "disable": list,
        "baseline": str,
        "xid_window_hours": (int, float),
        "slurm_drain": bool,
    },
    "audit": {
        "path": str,
        "key": str,
        "trusted_keys": str,
        "fail_open": bool,
        "rotate_bytes": int,
        "rotate_seconds": (int, float),
        "checkpoint_every": int,
    },
    "tune": {"profile": str},
    "jobs": {
        "backend": str,
        "state": str,
        "default_gpus_per_node": int,
        "slurm_log_dir": str,  # a folder every node sees (job output, per rank)
        "slurm_python": str,  # the Python with dolmen installed, on every node
    },
}
FREE_SECTIONS = {"thresholds"}  # validated against the check registry by its reader


@dataclass(frozen=True)
class Config:
    """The loaded site configuration; empty when there is no file."""

    path: Path | None = None
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def get(self, section: str, key: str, default: Any = None) -> Any:
        """One value, or ``default`` when the file does not set it."""
        return self.sections.get(section, {}).get(key, default)

    def thresholds(self, check_id: str) -> Mapping[str, Any]:
        """The site's limits for one check (``[thresholds."<check id>"]``)."""
        raw = self.sections.get("thresholds", {}).get(check_id, {})
        return raw if isinstance(raw, Mapping) else {}


def load_config(path: str | Path | None = None) -> Config:
    """Load ``path`` (must exist), else ``<config dir>/dolmen.toml`` when it exists."""
    if path is None:
        default = config_dir() / "dolmen.toml"
        if not default.exists():
            return Config()
        path = default
    path = Path(path)
    return parse_config(read_text(path, "configuration file"), str(path))


def parse_config(text: str, path: str = "<config>") -> Config:
    """Parse and validate the text of a dolmen.toml."""
    data = parse_toml(text, path)
    valid_sections = sorted([*SCHEMA, *FREE_SECTIONS])
    for section, body in data.items():
        line = line_of(text, section)
        if section not in SCHEMA and section not in FREE_SECTIONS:
            raise ConfigError(
                f"unknown section [{section}]; valid sections: {', '.join(valid_sections)}",
                path=path,
                line=line,
            )
        if not isinstance(body, dict):
            raise ConfigError(f"{section} must be a table ([{section}])", path=path, line=line)
        if section not in FREE_SECTIONS:
            check_keys(body, SCHEMA[section], text=text, path=path, section=section)
    return Config(Path(path) if path != "<config>" else None, data)


# The TOML files dolmen reads (this configuration, job files, tuning profiles) share the
# three helpers below, so every one of them names the file, the line and the valid
# choices the same way.


# Configurations, job files and profiles are a few KiB; a MiB is far past any real one.
MAX_TEXT_BYTES = 1 << 20


def read_text(path: Path, what: str) -> str:
    """A UTF-8 file's text; ConfigError naming ``what`` when it is absent or unreadable."""
    try:
        # Regular files only, and bounded: `--file /dev/zero` once filled the machine.
        return read_regular(path, MAX_TEXT_BYTES).decode("utf-8")
    except FileNotFoundError as e:
        raise ConfigError(f"no such {what}", path=str(path)) from e
    except OSError as e:
        raise ConfigError(f"cannot read the {what}: {e.strerror or e}", path=str(path)) from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"cannot read the {what}: {e}", path=str(path)) from e


def parse_toml(text: str, path: str) -> dict[str, Any]:
    """TOML text as a dict; ConfigError with the line of a syntax error."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise ConfigError(
            f"not valid TOML: {e}", path=path, line=int(m.group(1)) if m else None
        ) from e


def check_keys(
    table: Mapping[str, Any],
    schema: Mapping[str, type | tuple[type, ...]],
    *,
    text: str,
    path: str,
    section: str | None = None,
) -> None:
    """Every key of ``table`` is in ``schema`` with a value of its type (a bool is never
    taken for an int); ConfigError names the file, the line and the valid keys."""
    where = f" in [{section}]" if section else ""
    prefix = f"[{section}] " if section else ""
    for key, value in table.items():
        line = line_of(text, key)
        if key not in schema:
            raise ConfigError(
                f"unknown key {key!r}{where}; valid keys: {', '.join(sorted(schema))}",
                path=path,
                line=line,
            )
        types = _as_tuple(schema[key])
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            names = " or ".join(t.__name__ for t in types)
            raise ConfigError(
                f"{prefix}{key} must be {names}, not {type(value).__name__}", path=path, line=line
            )


def line_of(text: str, key: str) -> int | None:
    """The first line of ``text`` that defines ``key`` (for error messages), if any."""
    pat = re.compile(rf'^[ \t]*(\[+[ \t]*)?"?{re.escape(key)}"?[ \t]*(=|\]|\.)', re.M)
    m = pat.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _as_tuple(t: type | tuple[type, ...]) -> tuple[type, ...]:
    return t if isinstance(t, tuple) else (t,)
