"""One event, three shapes for SIEMs: RFC 5424 syslog, ArcSight CEF, and ECS JSON.

Every shape carries the de-duplication key (host, sequence), so a SIEM can drop
the repeats that at-least-once delivery implies:

- RFC 5424: ``[dolmen@32473 host=".." seq=".." hash=".." ...]`` structured data
  (32473 is the example enterprise number of RFC 5612), MSG the ECS JSON line;
- CEF: ``dvchost`` and ``externalId`` (the sequence);
- JSON: ``host.name`` and ``event.sequence`` of the ECS line itself.
"""

from __future__ import annotations

from dolmen import __version__
from dolmen.audit.event import AuditEvent

SD_ID = "dolmen@32473"
APP_NAME = "dolmen"
FACILITY_AUTHPRIV = 10  # security/authorization messages (RFC 5424 table 1)
SEVERITY = {"success": 5, "failure": 4, "unknown": 5}  # notice; warning for a failure
CEF_SEVERITY = {"success": 3, "failure": 7, "unknown": 5}
FORMATS = ("rfc5424", "cef", "json")


def rfc5424(event: AuditEvent, line: bytes) -> bytes:
    """The RFC 5424 message for ``event`` (``line`` is its log line, the MSG)."""
    return _header(event, event.action) + b" " + structured_data(event) + b" " + line.rstrip(b"\n")


def cef(event: AuditEvent) -> bytes:
    """The CEF record for ``event`` (ArcSight CEF 0)."""
    name = f"{event.action} {event.target}"
    header = "|".join(
        [
            "CEF:0",
            _cef_head("dolmen"),
            _cef_head("dolmen"),
            _cef_head(__version__),
            _cef_head(event.action),
            _cef_head(name[:512]),
            str(CEF_SEVERITY.get(event.outcome, 5)),
        ]
    )
    ext = [
        ("rt", _epoch_ms(event.timestamp)),
        ("dvchost", event.host),
        ("externalId", str(event.sequence)),
        ("act", event.action),
        ("outcome", event.outcome),
        ("suser", event.actor.name or ""),
        ("suid", event.actor.id or ""),
        ("duser", event.actor.effective_name or ""),
        ("duid", event.actor.effective_id or ""),
        ("cs1Label", "target"),
        ("cs1", event.target),
        ("cs2Label", "hash"),
        ("cs2", event.hash or ""),
        ("cs3Label", "prevHash"),
        ("cs3", event.prev_hash or ""),
    ]
    if event.pid is not None:
        ext.append(("dvcpid", str(event.pid)))
    body = " ".join(f"{k}={_cef_value(v)}" for k, v in ext if v != "")
    return (header + "|" + body).encode("utf-8")


def cef_syslog(event: AuditEvent) -> bytes:
    """CEF carried in an RFC 5424 message (how SIEMs receive CEF over syslog)."""
    return _header(event, "CEF") + b" " + structured_data(event) + b" " + cef(event)


def render(fmt: str, event: AuditEvent, line: bytes, *, syslog: bool) -> bytes:
    """``event`` in format ``fmt``; ``syslog`` wraps CEF in RFC 5424 for a syslog receiver."""
    if fmt == "rfc5424":
        return rfc5424(event, line)
    if fmt == "cef":
        return cef_syslog(event) if syslog else cef(event)
    if fmt == "json":
        return line.rstrip(b"\n")
    raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")


def structured_data(event: AuditEvent) -> bytes:
    """The SD-ELEMENT with the de-duplication key and the event's summary."""
    params = [
        ("host", event.host),
        ("seq", str(event.sequence)),
        ("hash", event.hash or ""),
        ("action", event.action),
        ("outcome", event.outcome),
        ("target", event.target),
        ("user", event.actor.name or ""),
    ]
    inner = " ".join(f'{k}="{_sd_value(v)}"' for k, v in params)
    return f"[{SD_ID} {inner}]".encode()


def _header(event: AuditEvent, msgid: str) -> bytes:
    pri = FACILITY_AUTHPRIV * 8 + SEVERITY.get(event.outcome, 5)
    fields = [
        f"<{pri}>1",
        event.timestamp,  # RFC 3339 with microseconds and Z: allowed by RFC 5424 6.2.3
        _token(event.host, 255),
        APP_NAME,
        str(event.pid) if event.pid is not None else "-",
        _token(msgid, 32),
    ]
    return " ".join(fields).encode("ascii")


def _token(text: str, limit: int) -> str:
    """A header field: printable US-ASCII without spaces (RFC 5424 PRINTUSASCII), or "-"."""
    clean = "".join(c if 33 <= ord(c) <= 126 else "_" for c in text)[:limit]
    return clean or "-"


def _sd_value(text: str) -> str:
    # RFC 5424 6.3.3: '"', '\' and ']' are escaped with a backslash inside PARAM-VALUE
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")


def _cef_head(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("\r", " ")


def _cef_value(text: str) -> str:
    return (
        text.replace("\\", "\\\\")
        .replace("=", "\\=")
        .replace("\r\n", "\\n")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
    )


def _epoch_ms(timestamp: str) -> str:
    from datetime import datetime

    from dolmen.compat import UTC

    try:
        when = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return ""
    return str(int(when.timestamp() * 1000))
