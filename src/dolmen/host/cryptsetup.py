"""cryptsetup, run with keys that never touch a disk or an argv.

Keys and passphrases go to cryptsetup as ``/proc/self/fd/N`` of a memfd the child inherits
(``--key-file``, the new key file of ``luksAddKey``, ``token import --json-file``): not on
the command line (``ps`` shows it to everyone), not in a file a crash would leave behind.
``--batch-mode`` always: no prompt may wait on a terminal. Exit codes (cryptsetup(8)):
1 wrong parameters, 2 no permission (bad passphrase), 3 out of memory, 4 wrong device
specified, 5 device already exists or busy.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from dolmen.host.command import CommandResult, RunStatus

TIMEOUT = 120.0  # an Argon2id keyslot may take seconds and a gigabyte on a loaded machine
EXIT_WORDS = {
    1: "wrong parameters",
    2: "no permission (wrong key or passphrase)",
    3: "out of memory",
    4: "wrong device",
    5: "device already exists or is busy",
}
# A random 256-bit key or a 256-bit recovery key needs no slow KDF: brute force is the key
# space, not the KDF's cost (systemd-cryptenroll does the same for its TPM2 and FIDO2 keys).
FAST_KDF = ("--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000")


@dataclass(frozen=True)
class Secret:
    """Bytes passed to cryptsetup through a memfd, never through argv."""

    data: bytes

    def __repr__(self) -> str:
        return f"Secret(<{len(self.data)} bytes>)"


Arg = str | Secret


class Cryptsetup:
    """The cryptsetup binary; each method is one command (see cryptsetup(8))."""

    def __init__(self, binary: str | None = None, timeout: float = TIMEOUT) -> None:
        self.binary = binary or shutil.which("cryptsetup") or "/usr/sbin/cryptsetup"
        self.timeout = timeout

    def run(self, args: Sequence[Arg], *, stdin: bytes | None = None) -> CommandResult:
        """Run ``cryptsetup --batch-mode ARGS``; each Secret becomes a memfd path."""
        with _memfds(args) as (argv, fds):
            shown = tuple(a if isinstance(a, str) else "<secret>" for a in args)
            try:
                proc = subprocess.run(
                    [self.binary, "--batch-mode", *argv],
                    input=stdin,
                    capture_output=True,
                    pass_fds=fds,
                    timeout=self.timeout,
                    env={**os.environ, "LC_ALL": "C"},
                    check=False,
                )
            except FileNotFoundError:
                return CommandResult(
                    ("cryptsetup", *shown), RunStatus.MISSING, reason="cryptsetup not found"
                )
            except subprocess.TimeoutExpired:
                why = f"timed out after {self.timeout:g} s"
                return CommandResult(("cryptsetup", *shown), RunStatus.TIMEOUT, reason=why)
        out, err = (b.decode("utf-8", "replace") for b in (proc.stdout, proc.stderr))
        status = RunStatus.OK if proc.returncode == 0 else RunStatus.FAILED
        why = "" if status is RunStatus.OK else EXIT_WORDS.get(proc.returncode, "failed")
        return CommandResult(("cryptsetup", *shown), status, out, err, proc.returncode, why)

    def dump_json(self, device: str) -> CommandResult:
        """The LUKS2 JSON metadata (keyslots, tokens, segments, digests)."""
        return self.run(["luksDump", "--dump-json-metadata", device])

    def uuid(self, device: str) -> CommandResult:
        """The LUKS UUID (``luksUUID``)."""
        return self.run(["luksUUID", device])

    def add_key(self, device: str, existing: Secret, new: Secret, slot: int) -> CommandResult:
        """Add ``new`` in keyslot ``slot``, unlocking with ``existing`` (``luksAddKey``)."""
        args: list[Arg] = ["luksAddKey", "--key-file", existing, "--new-key-slot", str(slot)]
        return self.run([*args, *FAST_KDF, device, new])

    def token_import(self, device: str, token_json: bytes, slot: int) -> CommandResult:
        """Store a token (JSON) bound to keyslot ``slot`` (``token import``)."""
        args: list[Arg] = ["token", "import", "--json-file", Secret(token_json)]
        return self.run([*args, "--key-slot", str(slot), device])

    def token_export(self, device: str, token_id: int) -> CommandResult:
        """A token's JSON (``token export``)."""
        return self.run(["token", "export", "--token-id", str(token_id), device])

    def token_remove(self, device: str, token_id: int) -> CommandResult:
        """Remove a token (``token remove``); its keyslot stays."""
        return self.run(["token", "remove", "--token-id", str(token_id), device])

    def header_backup(self, device: str, path: str) -> CommandResult:
        """Write the whole LUKS header (both copies, keyslot areas) to a new file ``path``."""
        return self.run(["luksHeaderBackup", "--header-backup-file", path, device])

    def header_restore(self, device: str, path: str) -> CommandResult:
        """Put a header backup back (``luksHeaderRestore``): the way back of every change."""
        return self.run(["luksHeaderRestore", "--header-backup-file", path, device])

    def test_key(self, device: str, key: Secret, slot: int | None = None) -> CommandResult:
        """Whether ``key`` opens a keyslot (``open --test-passphrase``), activating nothing."""
        at = ["--key-slot", str(slot)] if slot is not None else []
        return self.run(["open", "--test-passphrase", *at, "--key-file", key, device])

    def open(self, device: str, name: str, key: Secret, slot: int | None = None) -> CommandResult:
        """Activate the mapping /dev/mapper/``name`` (needs device-mapper in the kernel)."""
        at = ["--key-slot", str(slot)] if slot is not None else []
        return self.run(["open", "--type", "luks2", *at, "--key-file", key, device, name])


@contextlib.contextmanager
def _memfds(args: Sequence[Arg]) -> Iterator[tuple[list[str], list[int]]]:
    argv: list[str] = []
    fds: list[int] = []
    try:
        for a in args:
            if isinstance(a, str):
                argv.append(a)
                continue
            fd = os.memfd_create("dolmen-key", os.MFD_CLOEXEC)
            fds.append(fd)
            os.write(fd, a.data)
            os.lseek(fd, 0, os.SEEK_SET)
            argv.append(f"/proc/self/fd/{fd}")
        yield argv, fds
    finally:
        for fd in fds:
            os.close(fd)
