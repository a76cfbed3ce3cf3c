"""What a recording alone must make ``validate`` conclude, and how a finding is matched.

A case is one recording (a file, a block of an excerpt compilation, a folder, or a GCM
map of sysfs paths) at the tree key it belongs under, and its conclusion written from the
file itself and PROVENANCE.md:

- ``healthy``: the file shows nothing wrong. No finding may ``fail``.
- ``fault``: the file shows a fault. Each flag in ``expect`` must be raised, and every
  ``fail`` must be on a subject some failing flag names (the right GPU, port or netdev).
- ``unread``: validate reads nothing from this file today (or ever: a dmidecode). No
  finding may ``fail``; the checks say unknown or skip.

Whatever the kind, a one-file bundle is never HEALTHY (too little was read to say so) and no
check ends in ``error``. Subjects and check ids are ``fnmatch`` patterns; a ``gpu:`` or
``pci:`` bus id is compared in one canonical spelling, so ``gpu:0000:19:00`` names the
``gpu:00000000:19:00.0`` of nvidia-smi.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from dolmen.checks.model import Finding
from dolmen.values.busid import BusId

Kind = Literal["healthy", "fault", "unread"]
Build = Literal["file", "tree", "map"]

BAD = frozenset({"warn", "fail"})
FAIL = frozenset({"fail"})
JUDGED = frozenset({"pass", "warn", "fail"})  # the check read the device and said something


@dataclass(frozen=True)
class Flag:
    """A finding of ``check`` (pattern) with one of ``status`` on ``subject`` (pattern) whose
    summary matches ``words`` (a regex; empty: any)."""

    check: str
    status: frozenset[str]
    subject: str = "*"
    words: str = ""

    def matches(self, f: Finding) -> bool:
        return (
            fnmatchcase(f.check, self.check)
            and f.status.value in self.status
            and subject_matches(self.subject, f.subject)
            and (not self.words or re.search(self.words, f.summary) is not None)
        )

    def matches_subject(self, f: Finding) -> bool:
        return subject_matches(self.subject, f.subject)

    def __str__(self) -> str:
        words = f" /{self.words}/" if self.words else ""
        return f"{self.check} {'|'.join(sorted(self.status))} on {self.subject}{words}"


def fails(check: str, subject: str, words: str = "") -> Flag:
    return Flag(check, FAIL, subject, words)


def flags(check: str, subject: str, words: str = "") -> Flag:
    """Warn or fail: the file shows it, how grave it is is the check's judgement."""
    return Flag(check, BAD, subject, words)


def judged(check: str, subject: str) -> Flag:
    """The check judged this device (pass, warn or fail): the file proves the device exists."""
    return Flag(check, JUDGED, subject)


def passes(check: str, subject: str = "host") -> Flag:
    return Flag(check, frozenset({"pass"}), subject)


def gpus_judged(check: str, *bus_ids: str) -> tuple[Flag, ...]:
    return tuple(judged(check, f"gpu:{b}") for b in bus_ids)


@dataclass(frozen=True)
class Case:
    """One recording and what validate must conclude from it alone."""

    id: str  # the test id: the path under recordings, and #block
    rel: str  # the file (or folder) under ../shared/recordings
    key: str  # where it lies in the bundle: commands/<command_key> or a host path
    kind: Kind
    why: str  # the conclusion in words, from the file and PROVENANCE.md
    expect: tuple[Flag, ...] = ()
    forbid: tuple[Flag, ...] = ()
    block: str | None = None  # excerpt heading URL, or capture section title
    start: str | None = None  # keep the block's lines from this regex on...
    stop: str | None = None  # ...up to this one
    build: Build = "file"
    answered: bool = False  # nvidia-smi answered in it: the driver is loaded, by definition
    unpasteable: str = ""  # why no one hands this file to ``--from FILE`` as it is

    @property
    def single_file(self) -> bool:
        """Whether a user could hand it to ``--from FILE`` as it is: not a tree, and not a
        GCM sysfs map (a JSON of sysfs paths GCM's tests load; no tool prints it for a
        user to paste), nor a case whose ``unpasteable`` says why not."""
        return self.build == "file" and not self.unpasteable


def canonical(subject: str) -> str:
    kind, _, rest = subject.partition(":")
    if kind in ("gpu", "pci") and rest:
        bus = BusId.parse(rest)
        if bus is not None:
            return f"{kind}:{bus.nvsmi}"
    return subject


def subject_matches(pattern: str, subject: str) -> bool:
    if fnmatchcase(subject, pattern):
        return True
    return canonical(subject) == canonical(pattern)
