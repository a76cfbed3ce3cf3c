"""A host recorded as a directory tree (DESIGN.md "Host"): files at their paths,
command outputs under ``commands/<key>``, and ``dolmen-snapshot.json``.

Every path is resolved *inside* the tree, as ``openat2(RESOLVE_IN_ROOT)`` would:
absolute links are re-rooted and ``..`` stops at the root, so a hostile tree
cannot make dolmen read outside it.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from dolmen.errors import InputError
from dolmen.fsutil import NotRegularFile, TooLarge, not_a_file, read_regular
from dolmen.host.base import DEFAULT_TIMEOUT, MAX_READ, Host
from dolmen.host.command import NOT_IN_BUNDLE, CommandResult, RunStatus, command_key

SNAPSHOT_META = "dolmen-snapshot.json"
COMMANDS_DIR = "commands"
_MAX_LINKS = 40


class TreeHost(Host):
    """A host tree on disk: a support bundle, a test scenario, an extracted snapshot."""

    kind = "tree"

    def __init__(self, root: Path) -> None:
        root = Path(os.path.realpath(root))
        if not root.is_dir():
            raise InputError(
                f"not a host tree ({not_a_file(root, 'folder')})",
                path=str(root),
                hint="pass a folder made by `dolmen snapshot` or a .tar.gz snapshot",
            )
        super().__init__(root)
        self._prefix = str(root).rstrip("/") + "/"
        # Resolved folders, by host path. A sysfs walk reads many files of one folder;
        # resolving the folder once and only lstat'ing the last component keeps reads of
        # a big tree (224 CPUs, 500 PCI functions) cheap. Folders are not expected to turn
        # into links while a host is open.
        self._dirs: dict[str, str] = {"": str(root)}

    def path(self, rel: str) -> Path:
        return Path(self._real(rel.strip("/")))

    def _real(self, rel: str) -> str:
        known = self._dirs.get(rel)
        if known is not None:  # a folder resolved before, or a link (a sysfs device entry)
            return known
        parent, _, name = rel.rpartition("/")
        base = self._dirs.get(parent)
        if base is None:
            base = self._dirs[parent] = self._real(parent)
        if name in (".", ".."):
            return self._confined(rel)
        full = f"{base}/{name}"
        if not os.path.islink(full):
            return full
        # A link is resolved once: a PCI function's entry is listed, read under and
        # read as a link, each through the whole chain of links (realpath) otherwise.
        real = self._dirs[rel] = self._confined(rel)
        return real

    def _confined(self, rel: str) -> str:
        fast = os.path.realpath(os.path.join(self._prefix, rel))
        if fast.startswith(self._prefix) or fast == str(self.root):
            return fast
        return self._resolve_in_root(rel)

    def _resolve_in_root(self, rel: str) -> str:
        """Walk ``rel`` component by component, re-rooting links that leave the tree."""
        todo = [p for p in rel.split("/") if p]
        todo.reverse()
        done: list[str] = []
        links = 0
        while todo:
            part = todo.pop()
            if part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            candidate = self._prefix + "/".join([*done, part])
            try:
                target = os.readlink(candidate)
            except OSError:  # not a link, or absent: keep the name as it is
                done.append(part)
                continue
            links += 1
            if links > _MAX_LINKS:
                raise OSError(40, "too many levels of symbolic links", rel)
            if target.startswith("/"):
                done = []
            todo.extend(reversed([p for p in target.split("/") if p]))
        return self._prefix + "/".join(done)

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, key: str | None = None
    ) -> CommandResult:
        args = tuple(argv)
        name = key or command_key(args)
        base = f"{COMMANDS_DIR}/{name}"
        try:
            out = self.read(base)
        except IsADirectoryError:
            return CommandResult(args, RunStatus.MISSING, reason=f"{base} is not a file")
        except (NotRegularFile, TooLarge) as e:
            # Recorded, but not as output can be: unreadable (an unknown), never "absent".
            return CommandResult(args, RunStatus.FAILED, reason=f"unreadable: {base}: {e.strerror}")
        except OSError:
            if name in self.not_captured:  # the snapshot tried: its reason is evidence
                return CommandResult(args, RunStatus.MISSING, reason=self.not_captured[name])
            if self._unrecorded(name):
                return CommandResult(args, RunStatus.UNRECORDED, reason=NOT_IN_BUNDLE)
            return CommandResult(args, RunStatus.MISSING, reason="not recorded in this host tree")
        err = self.read_opt(base + ".err") or ""
        try:
            rc_text = self.read(base + ".rc").strip()
        except (NotRegularFile, TooLarge) as e:
            reason = f"unreadable: {base}.rc: {e.strerror}"
            return CommandResult(args, RunStatus.FAILED, out, err, reason=reason)
        except OSError:
            rc_text = "0"  # no .rc: the command exited 0 (snapshot writes .rc only for others)
        try:
            rc = int(rc_text)
        except ValueError:
            return CommandResult(
                args,
                RunStatus.MISSING,
                out,
                err,
                reason=f"{base}.rc is not an exit code: {rc_text!r}",
            )
        status = RunStatus.OK if rc == 0 else RunStatus.FAILED
        return CommandResult(args, status, out, err, rc, "" if rc == 0 else f"exit code {rc}")

    @cached_property
    def partial(self) -> bool:
        """Whether this tree is a part of a host (a pasted file, a sosreport, a bug report):
        its metadata says ``"partial": true``. In a partial tree nothing absent is evidence."""
        return self.meta.get("partial") is True

    def absent(self, rel: str) -> str:
        rel = rel.strip("/")
        top = rel.split("/", 1)[0]
        if self.partial or (top and not os.path.isdir(self._prefix + top)):
            # A tree without sys/ at all did not capture sysfs; one with sys/ but no
            # sys/bus/pci/devices/X says X was not there, as on the live host.
            return NOT_IN_BUNDLE
        return "missing"

    def _unrecorded(self, key: str) -> bool:
        """Whether an absent ``commands/<key>`` says nothing of the host: the tree is partial,
        has no commands/ at all, or its snapshot lists what it ran and this is not among them."""
        if self.partial or not os.path.isdir(self._prefix + COMMANDS_DIR):
            return True
        captured = self.meta.get("captured")
        ran = captured.get("commands") if isinstance(captured, dict) else None
        return isinstance(ran, list) and key not in ran

    @cached_property
    def meta(self) -> dict[str, Any]:
        """``dolmen-snapshot.json``, or {} when the tree has none (hand-made test trees)."""
        try:  # not self.read: that consults this metadata's list of unreadable files
            text = Host.read_bytes(self, SNAPSHOT_META).decode("utf-8", errors="replace")
        except (NotRegularFile, TooLarge) as e:
            raise InputError(
                f"{SNAPSHOT_META} is unreadable: {e.strerror}", path=str(self.root / SNAPSHOT_META)
            ) from e
        except OSError as e:
            # absent: a hand-made tree; there but unreadable (a link loop, a link to
            # nothing, no permission): the tree's own description is lost, refuse it
            if not os.path.lexists(self.root / SNAPSHOT_META):
                return {}
            looped = e.errno in (errno.ENOENT, errno.ELOOP)
            why = "a link loop or a link to nothing" if looped else e.strerror
            raise InputError(
                f"{SNAPSHOT_META} is unreadable: {why}", path=str(self.root / SNAPSHOT_META)
            ) from e
        try:
            data = json.loads(text)
        except ValueError as e:
            raise InputError(
                f"{SNAPSHOT_META} is not valid JSON ({e})", path=str(self.root / SNAPSHOT_META)
            ) from e
        if not isinstance(data, dict):
            raise InputError(f"{SNAPSHOT_META} is not a JSON object", path=str(self.root))
        return data

    def read_bytes(self, rel: str) -> bytes:
        """As on the live host, including the errors the live host gave when captured."""
        failed = self.unreadable.get(rel.strip("/"))
        if failed is not None:
            code = getattr(errno, failed, errno.EIO)
            raise OSError(code, f"{os.strerror(code)} (as recorded)", rel)
        if type(self).path is not TreeHost.path:  # a subclass resolving paths its own way
            return super().read_bytes(rel)
        # Host.read_bytes through self.path without its Path: a quick run reads 700 files
        # (an IB port alone has 60 counters), and a Path costs more than the lstat.
        return read_regular(self._real(rel.strip("/")), MAX_READ)

    @cached_property
    def unreadable(self) -> Mapping[str, str]:
        """Files the live host refused to read when captured, with the errno name (EINVAL...)."""
        raw = self.meta.get("unreadable", {})
        return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}

    @property
    def not_captured(self) -> Mapping[str, str]:
        """Command keys and paths the snapshot could not capture, with the reason."""
        raw = self.meta.get("not_captured", {})
        return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}

    def environ(self) -> Mapping[str, str]:
        env = self.meta.get("environment", {})
        return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}

    @property
    def hostname(self) -> str:
        name = self.meta.get("hostname")
        if isinstance(name, str) and name:
            return name
        return (self.read_value("etc/hostname") or self.root.name).splitlines()[0]
