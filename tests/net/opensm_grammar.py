"""opensm's partitions.conf grammar (opensm(8) "PARTITION CONFIGURATION"), parsed
independently of dolmen's renderer so that the tests hold its output to it.

opensm itself parses the file only while sweeping a real subnet (it exits with "No local
ports detected!" on a machine without an HCA, as this one), so this is the check. It
follows the manual: '#' starts a comment to the end of the line; a statement ends with
';'; ``Definition : Properties`` where Definition is ``[Name][=PKey][,indx0][,ipoib
[,mgroup_flag]*][,defmember=full|limited|both]``, Properties a comma-separated port list
of ``<GUID|ALL|ALL_CAS|ALL_SWITCHES|ALL_ROUTERS|SELF>[=full|limited|both]``; white space
is allowed between delimiters; PKeys must be unique per name (repeated PKeys merge).
Lines are read into a 4096-byte buffer by opensm (fgets), hence the line limit.
"""

from __future__ import annotations

import re

KEYWORDS = {"ALL", "ALL_CAS", "ALL_SWITCHES", "ALL_ROUTERS", "SELF"}
MEMBERSHIP = {"full", "limited", "both"}
MGROUP = {"rate", "mtu", "sl", "scope", "Q_Key", "TClass", "FlowLabel"}
LINE_MAX = 4095


class GrammarError(ValueError):
    """The text is not what opensm's partition parser accepts."""


def parse(text: str) -> list[dict[str, object]]:
    """Statements as ``{name, pkey, flags, defmember, ports: [(id, membership)]}``."""
    for n, line in enumerate(text.splitlines(), 1):
        if len(line) > LINE_MAX:
            raise GrammarError(f"line {n} is longer than opensm's line buffer")
    body = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    *statements, tail = body.split(";")
    if tail.strip():
        raise GrammarError(f"text after the last ';': {tail.strip()[:40]!r}")
    out = []
    for st in statements:
        head, sep, props = st.partition(":")
        if not sep:
            raise GrammarError(f"no ':' in {st.strip()[:40]!r}")
        out.append(_statement(head, props))
    return out


def _statement(head: str, props: str) -> dict[str, object]:
    parts = [p.strip() for p in head.split(",")]
    name, _, pkey = (s.strip() for s in parts[0].partition("="))
    if not re.fullmatch(r"[^\s=,:;#]*", name):
        raise GrammarError(f"partition name {name!r}")
    value = None
    if pkey:
        if not re.fullmatch(r"0x[0-9a-fA-F]{1,4}|[0-9]+", pkey):
            raise GrammarError(f"PKey {pkey!r}")
        value = int(pkey, 0) & 0x7FFF
    flags, defmember = [], "limited"
    for flag in parts[1:]:
        key, _, val = (s.strip() for s in flag.partition("="))
        if key == "defmember":
            if val not in MEMBERSHIP:
                raise GrammarError(f"defmember={val!r}")
            defmember = val
        elif (key in ("ipoib", "indx0") and not val) or (key in MGROUP and val):
            flags.append(key)
        else:
            raise GrammarError(f"flag {flag!r}")
    # the manual's form `Name = PKey : defmember=limited : ports`
    if props.count(":") == 1:
        extra, _, props = props.partition(":")
        key, _, val = (s.strip() for s in extra.partition("="))
        if key != "defmember" or val not in MEMBERSHIP:
            raise GrammarError(f"{extra.strip()!r} between ':'s")
        defmember = val
    elif ":" in props:
        raise GrammarError("more than two ':' in a statement")
    ports: list[tuple[str, str]] = []
    for spec in (s.strip() for s in props.split(",")):
        if not spec:
            if ports or props.strip():
                raise GrammarError("an empty port specifier")
            continue
        ident, _, member = (s.strip() for s in spec.partition("="))
        if ident not in KEYWORDS and not re.fullmatch(r"0x[0-9a-fA-F]{1,16}|[0-9]+", ident):
            raise GrammarError(f"port {ident!r}")
        if member and member not in MEMBERSHIP:
            raise GrammarError(f"membership {member!r}")
        ports.append((ident, member or defmember))
    return {"name": name, "pkey": value, "flags": flags, "defmember": defmember, "ports": ports}
