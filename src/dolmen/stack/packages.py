"""The host's package database: which packages are installed, at which version, held or not.

Sources, best first:

- ``var/lib/dpkg/status`` (Debian, Ubuntu): RFC-822 stanzas; a package counts when its
  ``Status`` is ``<selection> ok installed``; ``hold`` as the selection is an
  ``apt-mark hold``.
- ``dpkg -l`` output recorded in a tree (``commands/dpkg%20-l``; what a sosreport's dpkg
  plugin keeps, once a bundle maps it there): ``ii``/``hi`` rows.
- ``rpm -qa --qf '%{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n'`` (RHEL, Rocky, Alma),
  recorded under that argv; epoch 0 is dropped as rpm prints it.

The parsers are pure and never raise. ``upstream`` is the part of a package version a
component's version is compared with ("1:3.3.5-1" -> "3.3.5").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.facts.reading import absent, malformed, unrecorded
from dolmen.host import NOT_IN_BUNDLE, Host
from dolmen.stack.model import Package

DPKG_STATUS = "var/lib/dpkg/status"
DPKG_L = ("dpkg", "-l")
RPM_QA = ("rpm", "-qa", "--qf", "%{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n")

_DPKG_L_ROW = re.compile(
    r"^(?P<want>[uihrp])(?P<state>[ncUFWtHi])[ R]?\s+(?P<name>\S+)\s+(?P<ver>\S+)"
)
_NAME = re.compile(r"^[a-z0-9][a-z0-9+.\-_]*$", re.I)


@dataclass(frozen=True)
class PackageDb:
    """The installed packages, the manager that owns them, and where they were read."""

    manager: str | None  # apt | dnf | None (no database readable)
    installed: Mapping[str, Package] = field(default_factory=dict)
    source: str = ""  # var/lib/dpkg/status, "dpkg -l", "rpm -qa"
    reason: str = ""  # why no database could be read (manager None)

    def matching(self, pattern: re.Pattern[str]) -> tuple[Package, ...]:
        """Installed packages whose name matches, sorted by name."""
        return tuple(p for n, p in sorted(self.installed.items()) if pattern.fullmatch(n))


def upstream(version: str) -> str:
    """The upstream part of a Debian or RPM version: no epoch, no revision/release.

    "550.54.15-0ubuntu1" -> "550.54.15", "1:3.3.5" -> "3.3.5", "2.21.5-1+cuda12.4" ->
    "2.21.5". A version without a revision is returned without its epoch only.
    """
    v = version.split(":", 1)[1] if re.match(r"^\d+:", version) else version
    return v.rsplit("-", 1)[0] if "-" in v else v


def parse_dpkg_status(text: str) -> dict[str, Package]:
    """Installed packages of a dpkg status file (stanzas without Package or Version, or not
    ``installed``, are skipped; a later stanza of the same name wins, as in dpkg)."""
    out: dict[str, Package] = {}
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if not line or line[0] in " \t" or ":" not in line:
                continue  # continuation lines (Description, Conffiles) and junk
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
        name, version, status = fields.get("Package"), fields.get("Version"), fields.get("Status")
        if not name or not version or not status or not _NAME.match(name):
            continue
        words = status.split()
        if len(words) != 3 or words[2] != "installed":
            continue
        out[name] = Package(name, version, "apt", held=words[0] == "hold")
    return out


def parse_dpkg_l(text: str) -> dict[str, Package]:
    """Installed (``ii``, ``hi``) rows of ``dpkg -l``; ``name:arch`` keeps the name only."""
    out: dict[str, Package] = {}
    for line in text.splitlines():
        m = _DPKG_L_ROW.match(line)
        if m is None or m["state"] != "i":
            continue
        name = m["name"].split(":", 1)[0]
        if _NAME.match(name):
            out[name] = Package(name, m["ver"], "apt", held=m["want"] == "h")
    return out


def parse_rpm_qa(text: str) -> dict[str, Package]:
    """``rpm -qa --qf 'NAME<TAB>EPOCHNUM:VERSION-RELEASE'`` rows (epoch 0 dropped)."""
    out: dict[str, Package] = {}
    for line in text.splitlines():
        name, sep, version = line.strip().partition("\t")
        if not sep or not _NAME.match(name) or not re.match(r"^\d+:\S+-\S+$", version):
            continue
        epoch, _, rest = version.partition(":")
        out[name] = Package(name, rest if epoch == "0" else version, "dnf")
    return out


def read_packages(host: Host) -> PackageDb:
    """The host's package database from the first source it has (module docstring)."""
    why: list[str] = []
    text = host.read_opt(DPKG_STATUS)
    if text is not None:
        found = parse_dpkg_status(text)
        if found or not text.strip():
            return PackageDb("apt", found, DPKG_STATUS)
        why.append(f"{malformed(text)} ({DPKG_STATUS})")
    else:
        why.append(absent(host, DPKG_STATUS))
    for argv, parse, manager in ((DPKG_L, parse_dpkg_l, "apt"), (RPM_QA, parse_rpm_qa, "dnf")):
        res = host.run(manager_argv(host, list(argv)) if host.kind == "live" else list(argv))
        shown = " ".join(argv[:2])
        if res.ok and (found := parse(res.stdout)):
            return PackageDb(manager, found, shown)
        if res.ok:
            why.append(f"{shown}: {malformed(res.stdout) if res.stdout.strip() else 'empty'}")
        else:
            why.append(res.failure())
    # "missing" only where the host vouches for every source; an unrecorded one: unknown.
    lead = NOT_IN_BUNDLE if any(unrecorded(w) for w in why) else "missing"
    return PackageDb(None, reason=f"{lead}: no package database ({'; '.join(why)})")


def manager_argv(host: Host, argv: list[str]) -> list[str]:
    """``argv`` of a package tool, pointed at the host's root.

    The live host at ``/`` (and a host tree, the record of one) runs the tools as they
    are. A live host at another root (a private root: a chroot being built, the tests'
    generated apt repository) points each
    tool there: dpkg with ``--admindir``, rpm with ``--root``, dnf with ``--installroot``,
    and apt through ``APT_CONFIG=<root>/etc/apt/apt.conf`` (read before the host's own
    /etc/apt, so that file's ``Dir`` and ``DPkg::Options`` decide everything: a
    ``-o Dir=`` on the command line comes after /etc/apt/apt.conf.d is read and its hooks).
    ValueError when that file is absent: apt would otherwise change the machine's own
    packages for a host that is not it.
    """
    # A tree or bundle records a host at /: its commands are that host's, as they are.
    root, tool = (str(host.root) if host.kind == "live" else "/"), argv[0]
    # apt-get never asks (a debconf prompt would hang the apply until its timeout).
    env = ["DEBIAN_FRONTEND=noninteractive"] if tool == "apt-get" else []
    if tool in ("apt-get", "apt-mark", "apt-cache") and root != "/":
        conf = str(host.path("etc/apt/apt.conf"))
        if not host.exists("etc/apt/apt.conf"):
            raise ValueError(f"{conf} is absent: apt would change this machine, not {root}")
        env.append(f"APT_CONFIG={conf}")
    if env:
        return ["env", *env, *argv]
    if root == "/":
        return argv
    if tool in ("dpkg", "dpkg-query"):
        return [tool, f"--admindir={root.rstrip('/')}/var/lib/dpkg", *argv[1:]]
    if tool == "rpm":
        return [tool, f"--root={root}", *argv[1:]]
    if tool == "dnf":
        return [tool, f"--installroot={root}", *argv[1:]]
    return argv


def read_sources(host: Host) -> str | None:
    """The text of the host's package sources (apt lists and deb822 files, dnf .repo
    files) joined, or None when none could be read."""
    parts = [host.read_opt("etc/apt/sources.list")]
    for pattern in ("etc/apt/sources.list.d/*", "etc/yum.repos.d/*.repo"):
        parts += [host.read_opt(p) for p in host.glob(pattern)]
    found = [p for p in parts if p is not None]
    return "\n".join(found) if found else None


def not_offered(host: Host, manager: str, wanted: Mapping[str, str]) -> list[str] | str:
    """``name=version`` of each wanted package the repositories do not offer (apt: ``apt-cache
    madison``), or why that cannot be asked."""
    if manager != "apt" or not wanted:
        return "only apt's repositories are asked" if wanted else []
    try:
        argv = manager_argv(host, ["apt-cache", "madison", *sorted(wanted)])
    except ValueError as e:
        return str(e)
    res = host.run(argv)
    if not res.ok:
        return res.failure()
    offered = set()
    for line in res.stdout.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) >= 2:
            offered.add((cells[0], cells[1]))
    return [f"{n}={v}" for n, v in sorted(wanted.items()) if (n, v) not in offered]
