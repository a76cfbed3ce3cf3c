"""Which sysctl.d line sets a sysctl at boot, so dolmen can say when another file wins.

TuneD's most reported surprise: files in /etc/sysctl.d (and /etc/sysctl.conf)
are reapplied after the profile (``reapply_sysctl=1``) and silently win
(redhat-performance/tuned PR #492, #518, issue #409). dolmen reads the same
files in the order systemd-sysctl does (sysctl.d(5)): every ``*.conf`` from
/etc, /run, /usr/local/lib, /usr/lib and /lib sysctl.d, a name in an earlier
folder hiding the same name in a later one, all sorted by file name; then
``/etc/sysctl.conf`` as ``sysctl --system`` does, unless a sysctl.d link
already points at it (Debian's 99-sysctl.conf). The last assignment wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from dolmen.host import Host

DIRS = (
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
    "lib/sysctl.d",
)
SYSCTL_CONF = "etc/sysctl.conf"


@dataclass(frozen=True)
class Assignment:
    """``key = value`` at ``path:line`` (path host-relative)."""

    key: str
    value: str
    path: str
    line: int
    link: str | None = None  # the file's link target (Debian's 99-sysctl.conf -> ../sysctl.conf)

    @property
    def where(self) -> str:
        """``/etc/sysctl.d/99-x.conf:3``, with the link target when the file is a link."""
        via = f" (-> {self.link})" if self.link else ""
        return f"/{self.path}:{self.line}{via}"


def normalize_key(key: str) -> str:
    """``net/ipv4/ip_forward`` and ``net.ipv4.ip_forward`` name the same sysctl."""
    key = key.strip().lstrip("-")  # a leading '-' only means "ignore errors"
    return key.replace("/", ".") if "." not in key else key


def parse_sysctl_conf(text: str, path: str) -> list[Assignment]:
    """The assignments of one sysctl.d file, comments and malformed lines ignored."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s[0] in "#;" or "=" not in s:
            continue
        key, _, value = s.partition("=")
        if key.strip():
            out.append(Assignment(normalize_key(key), " ".join(value.split()), path, n))
    return out


def boot_files(host: Host) -> list[str]:
    """The files systemd-sysctl reads, in order (see module docstring)."""
    chosen: dict[str, str] = {}
    for d in DIRS:
        for path in host.glob(f"{d}/*.conf"):
            chosen.setdefault(path.rsplit("/", 1)[-1], path)
    files = [chosen[name] for name in sorted(chosen)]
    linked = any((host.readlink(p) or "").rstrip("/").endswith("sysctl.conf") for p in files)
    if host.exists(SYSCTL_CONF) and not linked:
        files.append(SYSCTL_CONF)
    return files


def boot_assignments(host: Host) -> dict[str, list[Assignment]]:
    """Every assignment at boot, by sysctl, in the order they are applied."""
    out: dict[str, list[Assignment]] = {}
    for path in boot_files(host):
        link = host.readlink(path)
        for a in parse_sysctl_conf(host.read_opt(path) or "", path):
            out.setdefault(a.key, []).append(Assignment(a.key, a.value, a.path, a.line, link))
    return out


def _rank(path: str) -> tuple[int, str]:
    """Order of a file at boot: sysctl.d files by name, then /etc/sysctl.conf."""
    return (1, "") if path == SYSCTL_CONF else (0, path.rsplit("/", 1)[-1])


def override_note(chain: list[Assignment], key: str, desired: str, ours: str | None) -> str | None:
    """What happens to ``key`` at boot, when it is not the profile's value; None when fine.

    ``ours`` is dolmen's own sysctl.d file, or None when the profile is not persisted.
    """
    after = chain if ours is None else [a for a in chain if _rank(a.path) > _rank(ours)]
    if not after:
        if ours is None:
            return "not persisted: the next boot returns it to the kernel default"
        return None
    last = after[-1]
    if last.value.split() == desired.split():
        return None
    if ours is None:
        return f"not persisted: at boot {last.where} sets it to {last.value}"
    return (
        f"at boot and on every `sysctl --system`, {last.where} sets it to {last.value} "
        f"after dolmen's file: edit or remove that line"
    )
