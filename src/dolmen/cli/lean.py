"""The lean entry: ``dolmen validate`` parsed without click, for the callers that run it
every few seconds on every node (Slurm's HealthCheckProgram, node-problem-detector).

Importing click and building the command group costs 15 to 25 ms a start (measured on
top of the standard library the quick tier imports anyway), a tenth of a quick run.
``parse`` accepts only plain invocations of ``validate`` (the options below, each once,
``--only`` repeated, ``--opt VALUE`` or ``--opt=VALUE``, ``--debug`` before ``validate``)
and gives ``None`` for anything else: help, ``--list``, unknown or repeated options, a bad
``--level``, a value that looks like an option, ``DOLMEN_DEBUG`` set. Those go through
click as before, so its messages, help texts and exit codes stay the only ones.
A test runs a table of invocations both ways and compares output and exit codes.

``parse_read`` does the same for plain invocations of the read-only commands in ``READS``
(``nccl env``, which launches ask for, and ``topo``): only their options listed there, each
once; their bodies (cli/nccl_run.py, cli/topo_run.py) are the ones the click commands run.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: importing typing costs the warm path (serve/client.py) 5 ms
if TYPE_CHECKING:
    from collections.abc import Sequence

LEVELS = ("quick", "standard", "full")
# option -> run_validate argument; click's definitions are in cli/validate.py
VALUES = {
    "--level": "level",
    "--from": "source",
    "--config": "config_path",
    "--baseline": "baseline_path",
    "--only": "only",
    "--junit": "junit_path",
    "--prometheus": "prom_path",
    "--status": "statuses",  # checked by run_validate, so both entries refuse a bad word alike
    "--gpu": "gpu",
    "--timeout": "timeout",
    "--device": "device",
}
FLAGS = {
    "--json": "as_json",
    "--npd": "npd",
    "--slurm": "slurm",
    "-v": "verbose",
    "--verbose": "verbose",
    "--matrix": "matrix",
    "--force": "force",
}


if TYPE_CHECKING:  # a TypedDict compiles each annotation when made: 2 ms a start, for a type
    from typing import TypedDict

    class ValidateArgs(TypedDict):
        """The arguments of ``run_validate``, as click would have passed them."""

        level: str | None
        source: str | None
        config_path: str | None
        baseline_path: str | None
        only: tuple[str, ...]
        as_json: bool
        junit_path: str | None
        prom_path: str | None
        npd: bool
        slurm: bool
        timeout: str | None
        verbose: bool
        list_checks: bool
        matrix: bool
        statuses: str | None
        gpu: str | None
        device: str | None
        force: bool


def parse(argv: Sequence[str]) -> ValidateArgs | None:
    """The arguments of a plain ``validate`` invocation, or None to let click parse it."""
    args = list(argv)
    if args[:1] == ["--debug"]:
        args = args[1:]
    # click parses DOLMEN_DEBUG as a boolean and rejects other words: leave that to it.
    if args[:1] != ["validate"] or "DOLMEN_DEBUG" in os.environ:
        return None
    scanned = _scan(args[1:], VALUES, FLAGS)
    if scanned is None:
        return None
    flags, given = scanned
    if any(len(v) > 1 for k, v in given.items() if k != "only"):
        return None
    values = {k: v[0] for k, v in given.items() if k != "only"}
    only = given.get("only", [])
    device = values.get("device", "").lower()
    if "device" in values and device not in ("cpu", "cuda"):
        return None  # click names the choices
    if "device" in values:
        values["device"] = device
    level = values.get("level", "").lower()
    if "level" in values and level not in LEVELS:
        return None
    if "level" in values:  # click's Choice(case_sensitive=False) gives "quick"
        values["level"] = level
    return {
        "level": values.get("level"),
        "source": values.get("source"),
        "config_path": values.get("config_path"),
        "baseline_path": values.get("baseline_path"),
        "only": tuple(only),
        "as_json": "as_json" in flags,
        "junit_path": values.get("junit_path"),
        "prom_path": values.get("prom_path"),
        "npd": "npd" in flags,
        "slurm": "slurm" in flags,
        "timeout": values.get("timeout"),
        "verbose": "verbose" in flags,
        "list_checks": False,
        "matrix": "matrix" in flags,
        "statuses": values.get("statuses"),
        "gpu": values.get("gpu"),
        "device": values.get("device"),
        "force": "force" in flags,
    }


# Read-only commands the lean entry runs: their words -> (the body, "module:function"; its
# value options; its flags), each option by its click name -> the body's argument. Any other
# option (--write, --svg...) goes through click.
READS: dict[tuple[str, ...], tuple[str, dict[str, str], dict[str, str]]] = {
    ("nccl", "env"): (
        "dolmen.cli.nccl_run:show_env",
        {"--from": "source"},
        {"--json": "as_json", "--export": "as_shell"},
    ),
    ("topo",): ("dolmen.cli.topo_run:show_topo", {"--from": "source"}, {"--json": "as_json"}),
}


def parse_read(argv: Sequence[str]) -> tuple[str, dict[str, str | bool | None]] | None:
    """The body and its arguments for a plain invocation of a command in ``READS``, or None
    to let click parse it."""
    args = list(argv)
    if args[:1] == ["--debug"]:
        args = args[1:]
    if "DOLMEN_DEBUG" in os.environ:
        return None
    words = next((w for w in READS if tuple(args[: len(w)]) == w), None)
    if words is None:
        return None
    target, values, flags = READS[words]
    scanned = _scan(args[len(words) :], values, flags)
    if scanned is None or any(len(v) > 1 for v in scanned[1].values()):
        return None
    kwargs: dict[str, str | bool | None] = {key: None for key in values.values()}
    kwargs.update((key, key in scanned[0]) for key in flags.values())
    kwargs.update((key, v[0]) for key, v in scanned[1].items())
    return target, kwargs


def _scan(
    args: Sequence[str], values: dict[str, str], flags: dict[str, str]
) -> tuple[set[str], dict[str, list[str]]] | None:
    """The flags given and the values of each value option (``--opt VALUE`` or
    ``--opt=VALUE``), or None for anything else: an unknown option, a repeated flag, an
    argument, a missing value or one that looks like an option."""
    seen: set[str] = set()
    given: dict[str, list[str]] = {}
    rest = iter(args)
    for arg in rest:
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        key = flags.get(name) if not eq else None
        if key is not None:
            if key in seen:
                return None
            seen.add(key)
            continue
        key = values.get(name)
        if key is None:
            return None
        if not eq:
            value = next(rest, "")
        if not value or value.startswith("-"):
            return None
        given.setdefault(key, []).append(value)
    return seen, given
