"""Block-device I/O errors in the kernel log ("blk_update_request: I/O error",
"critical medium error", "Buffer I/O error on dev").

The kernel-log facts do not extract these events yet (``kernel_log_events`` knows
Xids, link flaps, PCIe and AER lines), so the check says so rather than pass: a log
scanned without them would look clean. It needs an ``io_error`` event kind (device,
sector) in ``dolmen.facts.kernel_log_events`` to do its work.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, skipped


@check(
    "storage.io_errors",
    title="No block-device I/O errors in the kernel log",
    level=Level.QUICK,
    remedy=(
        "Find the device in dmesg, read its health (nvme smart-log /dev/nvmeX, smartctl -a "
        "/dev/sdX) and replace it if media errors grow; check the filesystem (fsck) afterwards."
    ),
)
def io_errors(ctx: Context) -> list[Outcome]:
    """Reads nothing yet: the kernel-log facts have no block I/O error events."""
    return [skipped("host", "the kernel-log facts do not extract block I/O errors yet")]
