"""The tiny client of the warm agent: ``dolmen validate --level quick`` asks the local
``dolmen serve`` over a unix socket before it pays a cold run.

Slurm's HealthCheckProgram and node-problem-detector start dolmen every few seconds to
minutes on every node; a cold quick run is 0.15 to 0.5 s of Python imports and reads, an
answer from the agent is one connect, one line each way. This module imports only the
C socket module and writes its own small framing (no json, no re, no typing: a few
milliseconds each), and nothing of dolmen: it runs before the lean entry imports
anything else.

The agent answers only what a cold run would print for the same invocation: the request
names the output mode and the host (``--from``: the agent must read that same source,
else it refuses), and the answer carries the verdict's age. Whatever goes wrong (no
socket, a refusal, a stale verdict, a timeout, a malformed answer) gives None: the
caller then runs cold, exactly as without an agent. ``DOLMEN_AGENT=off`` skips the agent.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself is 5 ms of imports this path does not need
if TYPE_CHECKING:
    from typing import Any

SOCKET_NAME = "agent.sock"
ANSWER_MAX = 16 << 20  # a verdict's JSON with many findings: megabytes at most
_OFF = ("0", "off", "no", "false")
# the validate arguments the agent can answer; any other set runs cold (cli/lean.py names)
_ANSWERABLE = {"level", "source", "as_json", "npd", "slurm", "verbose", "timeout"}


def socket_path(state: str | None = None) -> str:
    """The agent's socket in the state folder (``$DOLMEN_STATE_DIR`` or /var/lib/dolmen)."""
    base = state or os.environ.get("DOLMEN_STATE_DIR") or "/var/lib/dolmen"
    return os.path.join(base, "serve", SOCKET_NAME)


def request_for(args: Any) -> dict[str, Any] | None:
    """The agent request for parsed validate arguments (``cli/lean.py`` ``parse``), or None
    when only a cold run can answer them (not quick, a file output, a filter, a person's
    terminal: the agent renders for pipes, as slurmd and NPD read it)."""
    if args["level"] != "quick" or os.environ.get("DOLMEN_AGENT", "").lower() in _OFF:
        return None
    for key, value in args.items():
        if value and key not in _ANSWERABLE:
            return None
    if args["npd"] and (args["slurm"] or args["as_json"]):
        return None  # the cold run's usage error
    text = not (args["npd"] or args["as_json"])
    if text and (os.isatty(1) or os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE")):
        return None  # colours and a terminal's width: the cold run knows them
    source = args["source"]
    return {
        "mode": "npd" if args["npd"] else "json" if args["as_json"] else "text",
        "slurm": bool(args["slurm"]),
        "verbose": bool(args["verbose"]),
        "timeout": args["timeout"],
        "source": os.path.abspath(source) if source else None,
        "columns": os.environ.get("COLUMNS"),
        "max_age": os.environ.get("DOLMEN_AGENT_MAX_AGE"),
    }


def encode(request: dict[str, Any]) -> bytes:
    """The request line: JSON written by hand (its values are text, booleans or None), so
    that the client does not import json (with re, 6 ms of this path)."""
    parts = []
    for key, value in request.items():
        if value is None or value is True or value is False:
            text = {None: "null", True: "true", False: "false"}[value]
        else:
            text = _quote(str(value))
        parts.append(f'"{key}": {text}')
    return ("{" + ", ".join(parts) + "}\n").encode("utf-8", "surrogateescape")


def _quote(text: str) -> str:
    """A JSON string: quotes, backslashes and control characters escaped."""
    out = []
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c < " " or c == "\x7f":
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def ask(request: dict[str, Any], path: str | None = None, timeout: float = 2.0) -> Any:
    """The agent's answer (``{"rc", "stdout", "stderr", "age_s"}``), or None to run cold.

    The answer is framed, not JSON: ``ok RC AGE OUT_BYTES ERR_BYTES``, a newline, then the
    two outputs; or ``refused WHY``. ``_socket``, the C module under socket.py, spares the
    import of socket.py's selectors and enums."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path or socket_path())
        sock.sendall(encode(request))
        chunks: list[bytes] = []
        size = 0
        while size <= ANSWER_MAX:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        else:
            return None
    except OSError:
        return None
    finally:
        sock.close()
    return decode(b"".join(chunks))


def decode(data: bytes) -> Any:
    """The answer of ``ask`` from the framed bytes; None for a refusal or anything
    malformed (cut, lengths that do not add up, junk)."""
    head, newline, body = data.partition(b"\n")
    words = head.split(b" ")
    if not newline or len(words) != 5 or words[0] != b"ok":
        return None
    try:
        rc, age, n_out, n_err = int(words[1]), float(words[2]), int(words[3]), int(words[4])
    except ValueError:
        return None
    if n_out < 0 or n_err < 0 or n_out + n_err != len(body) or not 0 <= rc <= 255:
        return None
    try:
        out = body[:n_out].decode()
        err = body[n_out:].decode()
    except UnicodeDecodeError:
        return None
    return {"rc": rc, "stdout": out, "stderr": err, "age_s": age}


def answer_validate(args: Any) -> int | None:
    """Print the agent's answer for a plain validate invocation and return its exit code;
    None when the caller must run cold (nothing printed then)."""
    request = request_for(args)
    path = socket_path()
    if request is None or not os.path.exists(path):  # no agent: not even socket is imported
        return None
    answer = ask(request, path)
    if answer is None:
        return None
    import sys

    sys.stdout.write(answer["stdout"])
    sys.stdout.flush()
    sys.stderr.write(answer["stderr"])
    return int(answer["rc"])
