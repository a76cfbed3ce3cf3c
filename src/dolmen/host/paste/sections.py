"""Files that hold several commands' outputs, split into (command, output) sections (pure).

Two layouts are read:

- a capture (nvidia_gpu_exporter's ``internal/captures``, and any file laid out the same
  way): each section is a rule of ``#``, ``# <group> :: <name>``, ``# $ <command line>``,
  another rule, then the output;
- ``nvidia-bug-report.log`` (NVIDIA's ``nvidia-bug-report.sh``): sections start after a
  rule of underscores; the first line names them: ``*** /proc/modules`` (a file, then an
  ``*** ls:`` line of metadata), a command line (``/usr/bin/nvidia-smi --query``,
  ``/usr/bin/lspci -nn``; several per section, each followed by a blank line), or
  ``dmesg:``.

``tree_argv`` maps a command line to the command dolmen's readers ask for, so
``nvidia-smi --query`` and ``/usr/bin/nvidia-smi -q`` land at the key of ``nvidia-smi -q``;
commands dolmen does not read map to None and are left out.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence

from dolmen.frozen import frozen


@frozen
class Section:
    """One part of a multi-command file: a command's output or a file's content."""

    title: str  # the command line or path as the file names it
    text: str
    argv: tuple[str, ...] | None = None  # the tree key's command, when dolmen reads it
    path: str | None = None  # host path (no leading slash), for a file's content


_RULE_HASH = re.compile(r"^#{20,}\s*$")
_RULE_UNDERSCORE = re.compile(r"^_{20,}\s*$")
_DOLLAR = re.compile(r"^# \$ (.*\S)\s*$")
_FILE_TITLE = re.compile(r"^\*\*\* (/\S+)\s*$")
_COMMAND_TITLE = re.compile(r"^(/\S*/)?([A-Za-z][\w.-]*)(?: (.*?))?:?\s*$")
# Host files a bug report copies that dolmen reads (the rest are not placed in the tree).
_FILES = re.compile(
    r"^(?:proc/(?:modules|cmdline|meminfo|cpuinfo|version|driver/nvidia/.*)|etc/\S+)$"
)
# The kernel-log commands and their usual spellings; any options keep the key "dmesg".
_KERNEL_LOG = {"dmesg", "journalctl"}


def tree_argv(line: str) -> tuple[str, ...] | None:
    """The command dolmen reads that ``line`` ran, or None (``nvidia-smi --query`` ->
    ``("nvidia-smi", "-q")``; any ``lspci`` but the tree view -> ``("lspci", "-vvv")``)."""
    try:
        words = shlex.split(line.strip().rstrip(":"))
    except ValueError:
        return None
    if not words:
        return None
    name, args = words[0].rsplit("/", 1)[-1], words[1:]
    flags = {a for a in args if a.startswith("-")}
    if name == "nvidia-smi":
        return _nvidia_smi(args, flags)
    if name in _KERNEL_LOG:
        if name == "journalctl" and not ({"-k", "--dmesg"} & flags):
            return None  # the whole journal is not the kernel log
        return ("dmesg",)
    if name == "lspci":
        if any(a.startswith("-t") for a in args) or any(a.startswith("-d") for a in args):
            return None  # a tree view or a filtered list is not the bus
        return ("lspci", "-vvv")
    if name in ("ibstat", "ibstatus", "ibv_devinfo") and not [a for a in args if a != "-v"]:
        return (name,)
    if name == "dcgmi" and args[:1] == ["diag"] and ({"-j", "--json"} & flags):
        return ("dcgmi", "diag", "-j")
    return None


def spelling_rank(line: str, argv: Sequence[str]) -> int:
    """0 when ``line`` runs exactly ``argv`` (any path, ``--query`` for ``-q``), else 1: a
    variant (``-q -d ECC``, ``lspci -nn``) that stands in when the exact one is absent."""
    try:
        words = shlex.split(line.strip().rstrip(":"))
    except ValueError:
        return 1
    if not words:
        return 1
    words[0] = words[0].rsplit("/", 1)[-1]
    long = {"--query": "-q", "--xml-format": "-x", "--status": "-s", "--matrix": "-m"}
    return 0 if tuple(long.get(w, w) for w in words) == tuple(argv) else 1


def _nvidia_smi(args: list[str], flags: set[str]) -> tuple[str, ...] | None:
    if not args:
        return ("nvidia-smi",)
    query = bool({"-q", "--query"} & flags)
    if query and ({"-x", "--xml-format"} & flags):
        return ("nvidia-smi", "-q", "-x")
    if query and not ({"-u", "--unit"} & flags):
        return ("nvidia-smi", "-q")  # -d sections too: a part of the same text
    if args[:2] in (["nvlink", "-s"], ["nvlink", "--status"]):
        return ("nvidia-smi", "nvlink", "-s")
    if args[:2] in (["topo", "-m"], ["topo", "--matrix"]):
        return ("nvidia-smi", "topo", "-m")
    return None


def split_capture(text: str) -> list[Section]:
    """The sections of a ``# $ command`` capture, in order (see module docstring)."""
    out: list[Section] = []
    lines = text.splitlines(keepends=True)
    i = 0
    title: str | None = None
    body: list[str] = []
    while i < len(lines):
        line = lines[i]
        # A header: rule, comment lines with "# $ cmd", rule.
        if _RULE_HASH.match(line):
            j = i + 1
            command = None
            while j < len(lines) and lines[j].startswith("#") and not _RULE_HASH.match(lines[j]):
                m = _DOLLAR.match(lines[j])
                command = m[1] if m else command
                j += 1
            if j < len(lines) and _RULE_HASH.match(lines[j]):
                if title is not None:
                    out.append(_command(title, "".join(body)))
                title, body, i = command, [], j + 1
                continue
        body.append(line)
        i += 1
    if title is not None:
        out.append(_command(title, "".join(body)))
    return out


def split_bug_report(text: str) -> list[Section]:
    """The sections of ``nvidia-bug-report.log``, in order (see module docstring)."""
    out: list[Section] = []
    for chunk in _chunks(text, _RULE_UNDERSCORE):
        lines = chunk.splitlines(keepends=True)
        while lines and not lines[0].strip():
            lines.pop(0)
        if not lines:
            continue
        first = lines[0].strip()
        m = _FILE_TITLE.match(first)
        if m:
            rest = lines[1:]
            if rest and rest[0].startswith("*** ls:"):
                rest = rest[1:]
            path = m[1].lstrip("/")
            out.append(Section(m[1], "".join(rest), path=path if _FILES.match(path) else None))
            continue
        out.extend(_commands(lines))
    return out


def _commands(lines: list[str]) -> Iterator[Section]:
    """A bug-report section of commands: each command line stands between blank lines,
    then its output follows; ``append_command`` puts several in one section (``--query``
    and ``--query --unit``). A title is a full path with arguments (how the script echoes
    what it runs) or a word and a colon (``dmesg:``); text before the first is skipped."""
    title: str | None = None
    body: list[str] = []
    for k, line in enumerate(lines):
        stripped = line.strip()
        alone = (k == 0 or not lines[k - 1].strip()) and (
            k + 1 >= len(lines) or not lines[k + 1].strip()
        )
        if alone and _is_title(stripped):
            if title is not None:
                yield _command(title, "".join(body))
            title, body = stripped, []
            continue
        if title is not None:
            body.append(line)
    if title is not None:
        yield _command(title, "".join(body))


def _is_title(line: str) -> bool:
    m = _COMMAND_TITLE.match(line)
    return m is not None and (m[1] is not None or (line.endswith(":") and " " not in line))


def _command(title: str | None, text: str) -> Section:
    title = title or ""
    return Section(title, _trim(text), argv=tree_argv(title) if title else None)


def _trim(text: str) -> str:
    """The output without the blank lines the layout adds around it."""
    return text.strip("\n") + "\n" if text.strip() else ""


def _chunks(text: str, rule: re.Pattern[str]) -> Iterator[str]:
    part: list[str] = []
    for line in text.splitlines(keepends=True):
        if rule.match(line):
            yield "".join(part)
            part = []
        else:
            part.append(line)
    yield "".join(part)
