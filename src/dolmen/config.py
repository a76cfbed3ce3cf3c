"""The site configuration: ``/etc/dolmen/dolmen.toml`` (``$DOLMEN_CONFIG_DIR``, ``--config``).

Each section has a schema below; an unknown section or key, a value of the
wrong type or out of its range (RULES), is refused at load with the file, the line and
the valid choices; `[thresholds]` ids and keys are checked against the check registry.

    [validate]
    level = "standard"            # quick | standard | full
    expected_gpus = 8
    expected_ib_ports = 8         # RDMA ports (IB or RoCE) ACTIVE at expected_ib_rate or more
    expected_ib_rate = 400        # Gb/s every InfiniBand port links at (the fabric's rate)
    disable = ["tuning.thp"]      # check ids or categories not to run
    baseline = "/etc/dolmen/baseline.json"
    stack_lock = "/etc/dolmen/stack.toml"  # stack.lock: this node runs the fleet's stack
    integrity_manifest = "/etc/dolmen/integrity.manifest"  # docs/integrity.md

    [slurm]
    hook_timeout = "45s"          # bounds each Slurm hook's checks (slurmd kills it at 60 s)
    extra = ["--gres-flags=enforce-binding"]  # sbatch options for every job (docs/jobs-slurm.md)
    [net]
    policy = "/etc/dolmen/net.toml"  # isolate every job as it starts (docs/net-prove.md)
    [workloads]                   # --level full (docs/validate-full.md)
    gemm_s = 30                   # seconds per GPU; memory_s per GPU; the others in all
    memory_s = 15
    collective_s = 15
    storage_s = 20
    dcgm_s = 90                   # default: by dcgm_level (1: 90 s, 2: 5 min, 3: 25 min)
    dcgm_level = 1                # dcgmi diag -r N (3: DCGM's "about 15 minutes" run)
    device = "cuda"               # cuda | cpu: where the workloads run (--device)
    scratch = ["/raid"]           # data mounts the storage workload writes to

    [keys]                        # key providers: file | vault | pkcs11 (docs/keys.md)
    provider = "vault"
    vault_address = "https://vault.example:8200"
    vault_token_file = "/etc/dolmen/vault-token"

    [thresholds."gpu.temperature"]  # per-check limits; `dolmen validate --list` names them
    margin_warn_c = 10
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from dolmen.errors import ConfigError
from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.fsutil import not_utf8, read_regular
from dolmen.paths import config_dir

# The workloads of dolmen.workloads.RUNNERS (config sits below it and cannot import it;
# tests/workloads hold the two lists equal).
WORKLOAD_NAMES = ("gemm", "memory", "collective", "storage", "dcgm")

# The [keys] fields (dolmen.keys.settings.KeySettings; config sits beside keys and cannot
# import it). Hex fields are PKCS#11 CKA_IDs.
KEYS_TEXT = (
    "provider",
    "kek_file",
    "signing_key_file",
    "vault_address",
    "vault_token_file",
    "vault_mount",
    "vault_key",
    "vault_signing_key",
    "vault_ca_cert",
    "vault_client_cert",
    "vault_client_key",
    "vault_namespace",
    "pkcs11_module",
    "pkcs11_token",
    "pkcs11_pin_file",
    "pkcs11_key_id",
    "pkcs11_signing_key_id",
)

# section -> key -> accepted Python type(s). Add a section here with the feature that reads it.
SCHEMA: dict[str, dict[str, type | tuple[type, ...]]] = {
    "validate": {
        "level": str,
        "expected_gpus": int,
        "expected_ib_ports": int,
        "expected_ib_rate": (int, float),
        "disable": list,
        "baseline": str,
        "stack_lock": str,  # checks/stack/lock.py: the fleet's stack lock (docs/stack.md)
        "integrity_manifest": str,  # checks/integrity/manifest.py (docs/integrity.md)
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
    "slurm": {"hook_timeout": str, "extra": list},  # hooks' --timeout; jobs/slurm/extra.py
    "net": {"policy": str},  # a job's isolation at its start and end (docs/net-prove.md)
    "workloads": {
        **{f"{name}_s": (int, float) for name in WORKLOAD_NAMES},
        "device": str,
        "scratch": list,
        "dcgm_level": int,
    },
    "jobs": {
        "backend": str,
        "state": str,
        "default_gpus_per_node": int,
        "slurm_log_dir": str,  # a folder every node sees (job output, per rank)
        "slurm_python": str,  # the Python with dolmen installed, on every node
    },
    "serve": {  # dolmen serve (serve/settings.py)
        **dict.fromkeys(("listen", "interval", "run_timeout", "max_age", "state", "fleet"), str),
        **dict.fromkeys(("tls_cert", "tls_key", "tls_client_ca"), str),
        "open_reads": bool,
    },
    "keys": {  # key providers (keys/settings.py, docs/keys.md)
        **dict.fromkeys(KEYS_TEXT, str),
        "timeout": (int, float),
    },
}
FREE_SECTIONS = {"thresholds"}  # validated against the check registry: check_thresholds

# section -> key -> what the value must be besides its type: None when it fits, else the
# words after "[section] key must ". A value out of range changes verdicts without a word
# (xid_window_hours = -5 hid a logged Xid 48), so it is refused at load like a bad type.
Rule = Callable[[Any], str | None]


def _between(lo: float, hi: float, *, above: bool = False) -> Rule:
    def rule(value: Any) -> str | None:
        low_ok = value > lo if above else value >= lo
        if (isinstance(value, float) and not math.isfinite(value)) or not low_ok or value > hi:
            return f"be {'above' if above else 'at least'} {lo:g} and at most {hi:g}"
        return None

    return rule


def _choice(*choices: str) -> Rule:
    return lambda value: None if value.lower() in choices else f"be one of {', '.join(choices)}"


def _name(value: Any) -> str | None:
    """A path, profile or backend name: not empty, no control character (a newline in a
    path reaches scripts and logs)."""
    if not value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "be a non-empty text without control characters"
    return None


def _names(value: Any) -> str | None:
    bad = [v for v in value if not isinstance(v, str) or _name(v)]
    return f"be a list of check ids or categories, not {bad[0]!r}" if bad else None


def _duration(value: Any) -> str | None:
    """A duration as ``values.duration`` reads it (``50s``, ``1m``), longer than zero."""
    from dolmen.errors import UsageError
    from dolmen.values.duration import parse_duration

    try:
        parse_duration(value, positive=True)
    except UsageError:
        return "be a duration longer than zero, such as 50s or 2m"
    return None


def _hex_id(value: Any) -> str | None:
    """A PKCS#11 CKA_ID base: 1 to 32 bytes in hex (a version is appended to it)."""
    if not _HEX_BYTES.fullmatch(value):
        return "be 1 to 32 bytes in hex, such as 646f6c6d656e"
    return None


def _url(value: Any) -> str | None:
    if not _URL.fullmatch(value):
        return "be an address such as https://vault.example:8200"
    return None


def _refused(why: str) -> Rule:
    return lambda _value: why


_HOURS_MAX = 24 * 366
RULES: dict[str, dict[str, Rule]] = {
    "validate": {
        "level": _choice("quick", "standard", "full"),
        "expected_gpus": _between(0, 4096),
        "expected_ib_ports": _between(0, 1024),
        # Gb/s: SDR 1X is 2.5, XDR 4X 800; a rate of 0 would pass every port, so it is refused.
        "expected_ib_rate": _between(0, 3200, above=True),
        "disable": _names,
        "baseline": _name,
        "stack_lock": _name,
        "integrity_manifest": _name,
        "xid_window_hours": _between(0, _HOURS_MAX, above=True),
        "slurm_drain": _refused(
            "not be set: it is not implemented (run `dolmen validate --slurm`, which drains "
            "an unhealthy node)"
        ),
    },
    "audit": {
        "path": _name,
        "key": _name,
        "trusted_keys": _name,
        "rotate_bytes": _between(0, 1 << 50),
        "rotate_seconds": _between(0, 3600 * _HOURS_MAX),
        "checkpoint_every": _between(0, 1 << 31),
    },
    "tune": {"profile": _name},
    # extra: each item is checked as one sbatch option when a job is planned (jobs layer)
    "slurm": {"hook_timeout": _duration, "extra": lambda v: _names(v) and "be a list of options"},
    "net": {"policy": _name},
    "workloads": {
        # A budget of 0 would run nothing and a day is past any health check.
        **{f"{name}_s": _between(0, 86400, above=True) for name in WORKLOAD_NAMES},
        "device": _choice("cpu", "cuda"),
        "dcgm_level": _between(1, 4),
        "scratch": lambda value: _names(value) and "be a list of folder paths",
    },
    "jobs": {
        "backend": _name,
        "state": _name,
        "default_gpus_per_node": _between(0, 1024),
        "slurm_log_dir": _name,
        "slurm_python": _name,
    },
    "serve": {
        **dict.fromkeys(("interval", "run_timeout", "max_age"), _duration),
        **dict.fromkeys(
            ("listen", "state", "fleet", "tls_cert", "tls_key", "tls_client_ca"), _name
        ),
    },
    "keys": {
        **dict.fromkeys(KEYS_TEXT, _name),
        "provider": _choice("file", "vault", "pkcs11"),
        "vault_address": _url,
        "vault_namespace": lambda v: None,  # "" is the root namespace
        "pkcs11_key_id": _hex_id,
        "pkcs11_signing_key_id": _hex_id,
        "timeout": _between(0, 300, above=True),
    },
}


@frozen
class Config:
    """The loaded site configuration; empty when there is no file."""

    path: Path | None = None
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    lines: Mapping[str, int] = field(default_factory=dict)  # "<check id>[.<key>]" -> line

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
            _check_ranges(body, RULES[section], text=text, path=path, section=section)
    return Config(Path(path) if path != "<config>" else None, data, _threshold_lines(text))


def _check_ranges(
    table: Mapping[str, Any], rules: Mapping[str, Rule], *, text: str, path: str, section: str
) -> None:
    for key, value in table.items():
        rule = rules.get(key)  # a flag has no range: its type is all
        why = rule(value) if rule else None
        if why:
            shown = value if not isinstance(value, str) else repr(value[:60])
            raise ConfigError(
                f"[{section}] {key} must {why} (got {shown})", path=path, line=line_of(text, key)
            )


_HEADER = pattern(r'^[ \t]*\[[ \t]*thresholds[ \t]*\.[ \t]*"?([^"\]]+?)"?[ \t]*\]', re.M)
_KEY = pattern(r'^[ \t]*"?([A-Za-z0-9_.-]+?)"?[ \t]*=', re.M)
_HEX_BYTES = pattern(r"(?:[0-9a-fA-F]{2}){1,32}")
_URL = pattern(r"https?://[^\s/]+(:\d+)?/?")
_TOML_LINE = pattern(r"line (\d+)")  # in tomllib's message


def _threshold_lines(text: str) -> dict[str, int]:
    """The line of each ``[thresholds."<id>"]`` header and of each key under it."""
    out: dict[str, int] = {}
    current = None
    for n, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            current = header.group(1).strip()
            out.setdefault(current, n)
        elif line.lstrip().startswith("["):
            current = None
        elif current and (key := _KEY.match(line)):
            out.setdefault(f"{current}.{key.group(1)}", n)
    return out


def check_thresholds(config: Config, limits: Mapping[str, Mapping[str, Any]]) -> None:
    """Every ``[thresholds."<id>"]`` names a check of ``limits`` (id -> the check's default
    limits) and only its limits, each a value like the default: the type, finite, not
    negative, a window above 0. ConfigError with the file and line otherwise. The caller
    passes the registry (the config cannot import the checks)."""
    path = str(config.path) if config.path else "<config>"
    for check_id, table in config.sections.get("thresholds", {}).items():
        line = config.lines.get(check_id)
        if check_id not in limits:
            raise ConfigError(
                f'[thresholds."{check_id}"]: no such check (dolmen validate --list names them)',
                path=path,
                line=line,
            )
        own = limits[check_id]
        if not isinstance(table, Mapping):
            raise ConfigError(f'thresholds."{check_id}" must be a table', path=path, line=line)
        for key, value in table.items():
            where = config.lines.get(f"{check_id}.{key}", line)
            if key not in own:
                valid = ", ".join(sorted(own)) or "none (it takes no limits)"
                raise ConfigError(
                    f'unknown key {key!r} in [thresholds."{check_id}"]; valid keys: {valid}',
                    path=path,
                    line=where,
                )
            why = _limit_error(key, value, own[key])
            if why:
                raise ConfigError(
                    f'[thresholds."{check_id}"] {key} must {why} (got {value!r})',
                    path=path,
                    line=where,
                )


def _limit_error(key: str, value: Any, default: Any) -> str | None:
    """Why ``value`` cannot replace the check's ``default`` limit, or None."""
    if isinstance(default, list | tuple):
        return None if isinstance(value, list) else "be a list"
    if isinstance(default, Mapping):
        if not isinstance(value, Mapping):
            return "be a table"
        bad = [k for k, v in value.items() if _limit_error(f"{key}.{k}", v, 0)]
        return f"hold numbers of at least 0 (not {bad[0]!r})" if bad else None
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "be true or false"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "be a number"
    if isinstance(default, int) and not isinstance(value, int) and not key.endswith("hours"):
        return "be an integer"
    return _between(0, 1e18, above=key.endswith("window_hours"))(value)


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
        raise ConfigError(
            f"no such {what}", path=str(path), hint=f"check the path of the {what}"
        ) from e
    except OSError as e:
        raise ConfigError(
            f"cannot read the {what}: {e.strerror or e}",
            path=str(path),
            hint=f"name a regular file this user may read as the {what}",
        ) from e
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"cannot read the {what}: {not_utf8(e)}",
            path=str(path),
            hint=f"save the {what} as UTF-8 text (iconv -t UTF-8)",
        ) from e


def parse_toml(text: str, path: str) -> dict[str, Any]:
    """TOML text as a dict; ConfigError with the line of a syntax error."""
    from dolmen.compat import tomllib  # 5 ms a start; a host without a dolmen.toml never needs it

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _TOML_LINE.search(str(e))
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
