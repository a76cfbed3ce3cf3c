"""The ``dolmen`` command: one error line and a hint, documented exit codes.

Plain ``validate`` invocations (what Slurm and node-problem-detector run on every node),
and plain ``nccl env`` and ``topo`` ones, take the lean entry, ``cli/lean.py``, which does
not import click; everything else goes through the lazy click group of ``cli/group.py``,
whose subcommands import only when they run, so `dolmen --help` stays fast too.
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False  # typing and collections.abc cost the warm validate path 5 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# command name -> ("module:attribute", help line); the modules import only when their
# command runs (cli/group.py).
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("dolmen.cli.validate:validate", "Tell whether this host is ready for AI work."),
    "facts": ("dolmen.cli.facts:facts", "Print what dolmen knows about a host."),
    "snapshot": ("dolmen.cli.snapshot:snapshot", "Capture this host as a support bundle."),
    "demo": ("dolmen.cli.demo:demo", "Write a sample bundle to try dolmen without a GPU."),
    "baseline": ("dolmen.cli.baseline:baseline", "Record or compare a known-good host."),
    "logs": ("dolmen.cli.logs:logs", "Explain XID/SXID/IB events in kernel logs."),
    "kb": ("dolmen.cli.kb:kb", "Query the knowledge base (CUDA, GPUs, XIDs)."),
    "tune": ("dolmen.cli.tune:tune", "Plan, apply, verify and roll back performance profiles."),
    "stack": ("dolmen.cli.stack:stack", "Lock, diff, plan and apply the exact software stack."),
    "audit": ("dolmen.cli.audit:audit", "Show, verify and export the audit trail."),
    "keys": ("dolmen.cli.keys:keys", "Show and rotate the keys of the site's key provider."),
    "net": ("dolmen.cli.net:net", "Isolate jobs and tenants: nftables policy, plan to rollback."),
    "integrity": ("dolmen.cli.integrity:integrity", "Seal and verify the boot chain and AI stack."),
    "crypt": (
        "dolmen.cli.crypt:crypt",
        "Enrol, unlock and rotate LUKS2 keys held in Vault or an HSM.",
    ),
    "jobs": ("dolmen.cli.jobs:jobs", "Run multi-node GPU jobs on local, Slurm or Kubernetes."),
    "users": ("dolmen.cli.users:users", "Manage users and groups of the job backends."),
    "quota": ("dolmen.cli.quota:quota", "Set and show GPU quotas."),
    "schema": ("dolmen.cli.schema:schema", "Print the JSON Schema of a --json output."),
    "setup": ("dolmen.cli.setup:setup", "Guided first steps: validate, tune, scheduler, users."),
    "containers": (
        "dolmen.cli.containers:containers",
        "NGC releases for this driver; GPU containers.",
    ),
    "topo": ("dolmen.cli.topo:topo", "Show the GPU/NIC/CPU topology from the PCI tree."),
    "nccl": ("dolmen.cli.nccl:nccl", "NCCL topology file and environment for this fabric."),
    "bench": ("dolmen.cli.bench:bench", "Benchmark GEMM, memory, NCCL, storage: JSON and plots."),
    "fleet": ("dolmen.cli.fleet:fleet", "Collect, report and validate many nodes' verdicts."),
    "serve": ("dolmen.cli.serve:serve", "Run the node agent: API, /metrics, warm quick checks."),
    "version": ("dolmen.cli.version:version", "Print dolmen, Python, driver and NVML versions."),
    "completion": ("dolmen.cli.completion:completion", "Print the bash, zsh or fish completion."),
    "manpage": ("dolmen.cli.manpage:manpage", "Write the man page dolmen(1), from the CLI."),
}

_ON = ("1", "true", "yes", "on")


def main(argv: Sequence[str] | None = None, *, lean: bool = True) -> int:
    """Entry point: run the CLI and map errors to one line, a hint and an exit code.

    ``lean=False`` sends even plain ``validate`` invocations through click (tests compare
    the two paths).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if lean:
        warm = _warm(args)
        if warm is not None:
            return warm
        if argv is None and gc.isenabled() and _is_short(args):
            # this process's own quick run (or lean read): no cyclic collector over the
            # imports either (as quickstart.collector_off over the run; 11 M instructions);
            # on again at the end
            gc.disable()
            try:
                return _main(args, argv, lean)
            finally:
                gc.enable()
    return _main(args, argv, lean)


def _main(args: list[str], argv: Sequence[str] | None, lean: bool) -> int:
    """``main`` past the warm path."""
    if lean:
        from dolmen.quickstart import find_own_modules

        find_own_modules()
    from dolmen.errors import DolmenError, ExitCode  # enum: after the warm path

    # --debug adds the traceback and changes nothing else: an exit code it changed (a raised
    # exception exits 1, "unhealthy") would drain a node for an internal error.
    debug = "--debug" in args or os.environ.get("DOLMEN_DEBUG", "").strip().lower() in _ON
    try:
        quick = read = None
        if lean:
            from dolmen.cli.lean import parse, parse_read

            quick = parse(args)
            read = parse_read(args) if quick is None else None
        if read is not None:  # a plain read-only command (cli/lean.py READS): no click either
            import importlib

            from dolmen.quickstart import DEFERRED, defer_imports, skip_final_collection

            defer_imports(DEFERRED)  # as a quick run: inspect and ipaddress, imported unused
            target, kwargs = read
            module, _, attr = target.partition(":")
            getattr(importlib.import_module(module), attr)(**kwargs)
            if argv is None:  # this process's own command
                skip_final_collection()
            return int(ExitCode.OK)
        if quick is not None:
            from dolmen.cli.validate_run import run_validate
            from dolmen.quickstart import skip_final_collection

            rc = run_validate(**quick)
            if argv is None and quick["level"] == "quick":  # this process's own command
                skip_final_collection()
            return rc
        from dolmen.cli.group import cli

        rc = cli.main(args=args, prog_name="dolmen", standalone_mode=False)
    except DolmenError as e:
        if debug:
            import traceback

            traceback.print_exc()
        _err(f"dolmen: error: {e.message}")
        if e.hint:
            _err(f"hint: {e.hint}")
        return int(e.exit_code)
    except KeyboardInterrupt:
        _err("dolmen: interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:
        handled = _click_error(e)
        if handled is not None:
            return handled
        if debug:
            import traceback

            traceback.print_exc()
        _err(f"dolmen: internal error: {e.__class__.__name__}: {e}")
        if not debug:
            _err("hint: rerun with --debug for the traceback, and report it")
        return int(ExitCode.INTERNAL)
    return rc if isinstance(rc, int) else int(ExitCode.OK)


def _is_short(args: list[str]) -> bool:
    """Whether the lean entry takes ``args`` as a plain ``validate --level quick`` or a plain
    read-only command (``READS``): short runs that make no garbage cycles worth a pass."""
    from dolmen.cli.lean import parse, parse_read

    if args[:1] == ["validate"] or args[:2] == ["--debug", "validate"]:
        quick = parse(args)
        return quick is not None and quick["level"] == "quick"
    return parse_read(args) is not None


def _warm(args: list[str]) -> int | None:
    """A plain ``validate --level quick`` answered by the local agent (``dolmen serve``,
    serve/client.py), before anything else is imported; None: run as before. Nothing here
    may stop the cold run: whatever goes wrong is None."""
    if args[:1] != ["validate"] and args[:2] != ["--debug", "validate"]:
        return None
    try:
        from dolmen.cli.lean import parse

        quick = parse(args)
        if quick is None or quick["level"] != "quick":
            return None
        from dolmen.serve.client import answer_validate

        return answer_validate(quick)
    except BrokenPipeError:  # the answer was being written: as the cold run ends then
        return 0
    except Exception:
        return None


def _click_error(e: Exception) -> int | None:
    """The exit code for click's own exceptions, None for any other (click may not be loaded:
    the lean entry never imports it)."""
    click = sys.modules.get("click")
    if click is None:
        return None
    if isinstance(e, click.exceptions.Exit):
        return int(e.exit_code)
    if isinstance(e, click.ClickException):
        from dolmen.errors import ExitCode

        e.show()
        return int(ExitCode.UNDECIDED)
    if isinstance(e, click.Abort):
        _err("dolmen: aborted")
        return 130
    return None


def _err(line: str) -> None:
    print(line, file=sys.stderr)


def exit_with(code: int) -> Any:
    """Leave a command with ``code`` (through click, so tests see it)."""
    import click

    raise click.exceptions.Exit(code)


if __name__ == "__main__":
    sys.exit(main())
