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
    flags: set[str] = set()
    values: dict[str, str] = {}
    only: list[str] = []
    rest = iter(args[1:])
    for arg in rest:
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        key = FLAGS.get(name) if not eq else None
        if key is not None:
            if key in flags:
                return None
            flags.add(key)
            continue
        key = VALUES.get(name)
        if key is None:
            return None
        if not eq:
            value = next(rest, "")
        if not value or value.startswith("-") or key in values:
            return None
        if key == "only":
            only.append(value)
        elif key == "device" and value.lower() not in ("cpu", "cuda"):
            return None  # click names the choices
        elif key == "device":
            values[key] = value.lower()
        elif key != "level":
            values[key] = value
        elif value.lower() in LEVELS:  # click's Choice(case_sensitive=False) gives "quick"
            values[key] = value.lower()
        else:
            return None
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
