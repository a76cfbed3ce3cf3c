"""The KB's compatibility rules, applied to a lock before a plan is printed.

- the driver in the lock runs every CUDA toolkit in it (``kb.cuda.check``: too old for
  the toolkit's family breaks rule ``minor-version``; meeting only the family minimum is
  a note: it runs with a limited feature set);
- Blackwell GPUs need the open kernel modules (rule ``open-modules-blackwell``);
- the fabric manager's version equals the driver's (rule ``fabricmanager-equals-driver``).

A rule that cannot be checked (a version unknown in the lock, a toolkit the table does
not list) is a note, never a pass in silence.
"""

from __future__ import annotations

from dataclasses import dataclass

from dolmen.kb import KnowledgeBase
from dolmen.kb.cuda import CompatMode
from dolmen.stack.model import Component, Lock
from dolmen.stack.packages import upstream


@dataclass(frozen=True)
class Violation:
    """A rule the lock breaks, with the rule's words and source from the KB."""

    rule: str
    detail: str  # what in the lock breaks it
    text: str
    source: str

    def line(self) -> str:
        """One line: the detail, then the rule id."""
        return f"{self.detail} (rule {self.rule}: {self.text})"


def _rule(kb: KnowledgeBase, rule_id: str, detail: str) -> Violation:
    rule = next((r for r in kb.cuda.rules if r.id == rule_id), None)
    if rule is None:  # the KB and this module ship together: a test holds them equal
        return Violation(rule_id, detail, "(rule not in the KB)", "")
    return Violation(rule_id, detail, rule.text, rule.source)


def check_lock(lock: Lock, kb: KnowledgeBase) -> tuple[list[Violation], list[str]]:
    """(violations, notes) of ``lock`` against the rules (module docstring)."""
    comps = lock.by_id()
    driver = comps.get("driver")
    out: list[Violation] = []
    notes: list[str] = []
    toolkits = [c for c in lock.components if c.kind == "cuda" and c.known]
    if driver is None or not driver.known:
        if toolkits:
            notes.append("driver for CUDA not checked: the lock does not know the driver")
    else:
        for tk in toolkits:
            assert tk.version is not None and driver.version is not None
            v = kb.cuda.check(tk.version, driver.version)
            if v.mode is CompatMode.TOO_OLD:
                out.append(
                    _rule(
                        kb,
                        "minor-version",
                        f"driver {driver.version} cannot run CUDA {tk.version} ({v.why})",
                    )
                )
            elif v.mode is CompatMode.MINOR_VERSION:
                notes.append(f"CUDA {tk.version}: {v.why}")
            elif v.mode is CompatMode.UNKNOWN:
                notes.append(f"CUDA {tk.version} with driver {driver.version} not checked: {v.why}")
    out += _open_modules(lock, comps, kb, notes)
    out += _fabric_manager(comps, kb, notes)
    return out, notes


def _flavour(comps: dict[str, Component]) -> str | None:
    for cid in ("module", "driver"):
        c = comps.get(cid)
        if c is not None and c.details.get("flavour"):
            return c.details["flavour"]
    return None


def _open_modules(
    lock: Lock, comps: dict[str, Component], kb: KnowledgeBase, notes: list[str]
) -> list[Violation]:
    archs = set(lock.gpu_architectures)
    for c in lock.components:
        model = c.details.get("model") if c.kind == "vbios" else None
        if model and (m := kb.gpus.match(model)) is not None:
            archs.add(m.architecture)
    if "Blackwell" not in archs:
        return []
    flavour = _flavour(comps)
    if flavour == "proprietary":
        return [
            _rule(
                kb,
                "open-modules-blackwell",
                "the lock has the proprietary kernel modules for Blackwell GPUs",
            )
        ]
    if flavour is None:
        notes.append(
            "open modules for Blackwell not checked: the lock does not say the module flavour"
        )
    return []


def _fabric_manager(
    comps: dict[str, Component], kb: KnowledgeBase, notes: list[str]
) -> list[Violation]:
    fm, driver = comps.get("fabric-manager"), comps.get("driver")
    if fm is None or not fm.known:
        return []
    if driver is None or driver.version is None:
        notes.append(
            "fabric manager against the driver not checked: the lock does not know the driver"
        )
        return []
    fm_version = fm.version or ""
    if upstream(fm_version) != driver.version:
        detail = f"fabric manager {fm_version} with driver {driver.version}"
        return [_rule(kb, "fabricmanager-equals-driver", detail)]
    return []
