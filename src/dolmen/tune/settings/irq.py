"""``[irq]``: interrupts of NICs and NVMe drives on their own NUMA node's cores.

``affinity = { value = "local-numa", devices = ["nic", "nvme"] }`` sets each
MSI interrupt of those PCI devices (``<device>/msi_irqs``) to the CPUs of the
device's NUMA node (``numa_node`` -> ``node<N>/cpulist``), as Mellanox
``mlnx_tune`` HIGH_THROUGHPUT and ``set_irq_affinity_bynode.sh`` do. A device
that reports no node (``-1``) is left alone. Interrupts the kernel manages
itself (NVMe queues since 4.x) refuse the write with EIO: they are reported
and skipped, not an error. IRQ numbers change across boots, so this is not
persisted: rerun ``dolmen tune apply`` at boot.

``irqbalance = "stop"`` disables and stops irqbalance (it would move the
interrupts back within seconds); ``"ban"`` keeps it running but bans these
interrupts with a systemd drop-in (``IRQBALANCE_ARGS=--banirq=N ...``);
``"keep"`` leaves it alone.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import Change, Reading, StepSkipped, Target
from dolmen.tune.settings.base import Entry, choice_error
from dolmen.tune.settings.dropin import HEADER, read_whole, show_whole
from dolmen.tune.settings.kernel_file import KernelFileSetting
from dolmen.tune.settings.services import Services
from dolmen.values.cpulist import CpuList, parse_cpulist

DEVICE_CLASSES = {"nic": "sys/class/net", "nvme": "sys/class/nvme"}
IRQBALANCE = ("stop", "ban", "keep")
BAN_DROPIN = "etc/systemd/system/irqbalance.service.d/90-dolmen-ban.conf"


def device_irqs(host: Host, classes: tuple[str, ...]) -> list[tuple[str, str, list[str]]]:
    """(device name, its NUMA node's CPU list, its MSI IRQs) for PCI devices of ``classes``;
    devices without a node (``numa_node`` -1), or whose node has no CPUs or a list that
    does not parse, are left out."""
    out = []
    for cls in classes:
        for path in host.glob(f"{DEVICE_CLASSES[cls]}/*"):
            dev = f"{path}/device"
            irqs = host.listdir(f"{dev}/msi_irqs")
            node = host.read_value(f"{dev}/numa_node")
            if not irqs or node is None or not node.isdigit():
                continue
            cpus = _cpus(host.read_value(f"sys/devices/system/node/node{node}/cpulist"))
            if cpus:
                out.append((path.rsplit("/", 1)[-1], str(cpus), sorted(irqs, key=int)))
    return out


def _cpus(text: str | None) -> CpuList | None:
    try:
        return None if text is None else parse_cpulist(text)
    except ValueError:
        return None


class Irq(KernelFileSetting):
    """IRQ affinity of NICs and NVMe drives, and irqbalance."""

    section = "irq"
    keys = ("affinity", "irqbalance")
    persists = False  # IRQ numbers change across boots (module docstring)
    title = "IRQ affinity to the device's NUMA node; irqbalance"
    extra_fields = frozenset({"devices"})
    key_order = ("irqbalance", "affinity")  # stop irqbalance before it can move them back

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if key == "irqbalance":
            if value not in IRQBALANCE:
                raise choice_error("irqbalance", value, IRQBALANCE)
            return str(value)
        if value != "local-numa":
            raise choice_error("affinity", value, ["local-numa"])
        devices = fields.get("devices", ["nic", "nvme"])
        if not isinstance(devices, list) or not devices or set(devices) - set(DEVICE_CLASSES):
            raise choice_error("devices", devices, sorted(DEVICE_CLASSES))
        return "local-numa"

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        classes = tuple(entry.fields.get("devices", ["nic", "nvme"]))
        if entry.key == "irqbalance":
            return self._irqbalance_targets(host, entry, classes)
        out = []
        for name, cpus, irqs in device_irqs(host, classes):
            for irq in irqs:
                path = f"proc/irq/{irq}/smp_affinity_list"
                if host.exists(path):
                    out.append(
                        Target(
                            self.section,
                            entry.key,
                            f"irq {irq} ({name})",
                            cpus,
                            path,
                            entry.origin,
                            entry.source,
                            {"device": name},  # tune reapply checks the number is still its
                        )
                    )
        return out or f"no {'/'.join(classes)} device with a NUMA node and MSI interrupts here"

    def _irqbalance_targets(
        self, host: Host, entry: Entry, classes: tuple[str, ...]
    ) -> list[Target] | str:
        if entry.value == "keep":
            return "irqbalance is left as it is (irqbalance = keep)"
        if entry.value == "stop":
            unit = "irqbalance.service"
            return [
                Target(self.section, entry.key, unit, "disabled", "", entry.origin, entry.source)
            ]
        irqs = sorted({i for _, _, irqs in device_irqs(host, classes) for i in irqs}, key=int)
        if not irqs:
            return "no device interrupts to ban"
        args = " ".join(f"--banirq={i}" for i in irqs)
        content = HEADER + f'[Service]\nEnvironment="IRQBALANCE_ARGS={args}"\n'
        return [
            Target(
                self.section,
                entry.key,
                "irqbalance bans",
                content,
                BAN_DROPIN,
                entry.origin,
                entry.source,
            )
        ]

    def _unit(self, target: Target) -> bool:
        return target.key == "irqbalance" and not target.path

    def read(self, host: Host, target: Target) -> Reading:
        if self._unit(target):
            return Services().read(host, target)
        if target.key == "irqbalance":
            return read_whole(host, target.path)
        return super().read(host, target)

    def plan(self, target: Target, reading: Reading) -> Change:
        if self._unit(target):
            return Services().plan(target, reading)
        return super().plan(target, reading)

    def same(self, current: str, desired: str) -> bool:
        a, b = _cpus(current), _cpus(desired)
        if a is None or b is None:  # the irqbalance drop-in: whole file
            return current == desired
        return a == b

    def show(self, value: str | None) -> str:
        if value is not None and value.startswith("#"):
            return show_whole(value)
        return super().show(value)

    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        if self._unit(change.target):
            return Services().capture(host, change)
        return super().capture(host, change)

    def apply(self, host: Host, change: Change) -> None:
        t = change.target
        if self._unit(t):
            Services().apply(host, change)
            return
        if t.key == "irqbalance":
            host.write(t.path, t.desired, mode=0o644)
            _restart_irqbalance(host)
            return
        try:
            super().apply(host, change)
        except OSError as e:
            if e.errno == errno.EIO:
                raise StepSkipped("kernel-managed interrupt: its driver places it") from e
            raise

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        if self._unit(change.target):
            Services().revert(host, change, saved)
            return
        super().revert(host, change, saved)
        if change.target.key == "irqbalance":
            _restart_irqbalance(host)

    def boot_line(self, target: Target) -> tuple[str, str] | None:
        return None  # IRQ numbers change across boots (module docstring)

    def moved(self, host: Host, target: Target) -> str | None:
        if target.key != "affinity":
            return None
        irq, device = target.path.split("/")[2], target.extra.get("device")
        if device is None:
            return "the journal does not name the interrupt's device (an older dolmen's)"
        if any(
            irq in host.listdir(f"{c}/{device}/device/msi_irqs") for c in DEVICE_CLASSES.values()
        ):
            return None
        return f"irq {irq} is no longer {device}'s (IRQ numbers change across boots)"


def _restart_irqbalance(host: Host) -> None:
    if host.kind == "live":
        host.run(["systemctl", "daemon-reload"], timeout=60)
        host.run(["systemctl", "try-restart", "irqbalance.service"], timeout=90)
