"""``python -m dolmen.nccl``: this node's NCCL variables as shell lines, for a batch script.

Prints ``[ -n "${NAME+x}" ] || export NAME=value`` for each value ``site.launch_env``
gives (none where /etc/nccl.conf exists or the node has no GPU), so a variable the job
already has is kept. The Slurm batch script evaluates it on the node (jobs/slurm/sbatch.py).
Prints nothing and exits 0 on any problem: a job must not fail for want of a hint.
"""

from __future__ import annotations

import shlex
import sys


def shell_lines(values: dict[str, str]) -> str:
    """The lines (module docstring)."""
    return "".join(
        f'[ -n "${{{k}+x}}" ] || export {k}={shlex.quote(v)}\n' for k, v in sorted(values.items())
    )


def main() -> int:
    """Entry point."""
    try:
        from dolmen.host import open_host
        from dolmen.nccl.site import launch_env

        with open_host() as host:
            sys.stdout.write(shell_lines(launch_env(host)))
    except Exception as e:
        print(f"dolmen.nccl: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
