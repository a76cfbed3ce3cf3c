"""The running kernel against the kernel the NVIDIA module was built for.

After a kernel update, DKMS (or the distribution's precompiled modules) must build
nvidia.ko for the new kernel; if it did not, the module fails to load at boot
("version magic ... should be ..."). A loaded module was built for the running
kernel (the loader checks its vermagic), so that case passes. When the module is not
loaded, the facts do not list which kernels have an nvidia module installed
(``lib/modules/<release>``), so the check cannot tell a missing build from another
cause and says so; ``stack.*`` reports the unloaded driver itself.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown


@check(
    "system.kernel",
    title="The NVIDIA kernel module is built for the running kernel",
    level=Level.QUICK,
    needs=("os", "stack"),
    when=("nvidia_gpu",),
    remedy=(
        "Build the module for the running kernel (dkms autoinstall, or install the "
        "linux-modules-nvidia package matching uname -r), or boot the kernel it was built for."
    ),
)
def kernel(ctx: Context) -> list[Outcome]:
    """Reads the kernel release and whether the nvidia module is loaded (its version)."""
    release = ctx.os.kernel_release
    if release is None:
        why = ctx.os.unread.get("kernel_release", "not reported")
        return [unknown("host", f"running kernel unreadable: {why}")]
    version = ctx.stack.module_version
    if version is not None:
        return [
            passed(
                "host",
                f"nvidia {version} is loaded in kernel {release}: built for it",
                kernel=release,
                module_version=version,
            )
        ]
    return [
        skipped(
            "host",
            f"nvidia module not loaded in kernel {release}; the facts do not list the kernels "
            "it is installed for (lib/modules), so a missing build cannot be told apart",
            kernel=release,
        )
    ]
