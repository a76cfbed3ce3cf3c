"""Port values as every source spells them: states, rates, GUIDs, counters.

sysfs writes ``4: ACTIVE`` and ``5: LinkUp`` (number and name, ``ib_port_state`` and
``ib_port_phys_state`` of the kernel's ``ib_verbs.h``), ibstat ``Active`` and ``LinkUp``,
ibv_devinfo ``PORT_ACTIVE (4)`` and ``LINK_UP (5)``, and a pasted value may be the
number alone. A value is read when its name is one of the enum's and its number, if
any, agrees; anything else (``4: ACTIVE`` written into ``phys_state``, where 4 means
PortConfigurationTraining) is None, and the caller records it as malformed, quoted: a
value that does not parse says nothing about the cable.
"""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.facts.reading import parse_hex
from dolmen.frozen.regex import pattern

# enum ib_port_state (IBTA PortInfo:PortState)
PORT_STATES: Mapping[int, str] = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
_STATE_WORDS = {w: w for w in PORT_STATES.values()} | {"INITIALIZING": "INIT", "NOP": "NOP"}
# enum ib_port_phys_state (IBTA PortInfo:PortPhysicalState)
PHYS_STATES: Mapping[int, str] = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "Phy Test",
}
_SPACE = pattern(r"[\s_]")
_PHYS_WORDS = {_SPACE.sub("", w).upper(): w for w in PHYS_STATES.values()}

# "4: ACTIVE", "PORT_ACTIVE (4)", "Active", "4"
_ENUM = pattern(r"(?:(\d+)\s*:\s*)?([A-Za-z][A-Za-z_ ]*?)?\s*(?:\((\d+)\))?")
_RATE = pattern(r"(\d+(?:\.\d+)?)\s*Gb/sec")
_WIDTH = pattern(r"\((\d+X)\b")
_DECIMAL = pattern(r"\d+(?:\.\d+)?")


def _enum(
    text: str | None, numbers: Mapping[int, str], words: Mapping[str, str], prefix: str = ""
) -> str | None:
    if text is None or not text.strip():
        return None
    t = text.strip()
    if t.isascii() and t.isdigit():
        return numbers.get(int(t))
    m = _ENUM.fullmatch(t)
    if not m or not m.group(2):
        return None
    key = _SPACE.sub("", m.group(2)).upper().removeprefix(prefix)
    name = words.get(key)
    number = m.group(1) or m.group(3)
    if name is None or (number is not None and numbers.get(int(number)) != name):
        return None
    return name


def parse_state(text: str | None) -> str | None:
    """``4: ACTIVE`` (sysfs), ``Active`` (ibstat), ``PORT_ACTIVE (4)``, ``4`` -> ``ACTIVE``."""
    words = {k.replace("_", ""): v for k, v in _STATE_WORDS.items()}
    return _enum(text, PORT_STATES, words, prefix="PORT")  # ibv_devinfo's PORT_ACTIVE


def parse_phys_state(text: str | None) -> str | None:
    """``5: LinkUp`` (sysfs), ``LinkUp`` (ibstat), ``LINK_UP (5)``, ``5`` -> ``LinkUp``."""
    return _enum(text, PHYS_STATES, _PHYS_WORDS)


def parse_rate(text: str | None) -> float | None:
    """``400 Gb/sec (4X NDR)`` (sysfs) or ``400`` (ibstat) -> 400.0."""
    if text is None:
        return None
    m = _RATE.search(text)
    if m:
        return float(m.group(1))
    t = text.strip()
    return float(t) if _DECIMAL.fullmatch(t) else None


def parse_width(text: str | None) -> str | None:
    """The lanes in a sysfs rate text: ``400 Gb/sec (4X NDR)`` -> ``4X``."""
    m = _WIDTH.search(text or "")
    return m.group(1) if m else None


def normalise_guid(text: str | None) -> str | None:
    """``a088:c203:00ad:eab8`` (sysfs) or ``0xa088c20300adeab8`` (ibstat) -> 16 hex digits."""
    if not text:
        return None
    value = parse_hex(text.replace(":", ""))
    return None if value is None else f"{value:016x}"


COUNTER_MAX = (1 << 64) - 1  # PMA and hw counters are u64 in sysfs


def parse_counters(values: Mapping[str, str]) -> tuple[dict[str, int], list[str]]:
    """Counter files (name -> text) as integers, and the names that are not numbers.

    Devices without a PMA print ``N/A (no PMA)`` in every counter (Intel i40iw).
    """
    counters: dict[str, int] = {}
    bad: list[str] = []
    for name, text in values.items():
        t = text.strip()
        # ASCII digits only ("²".isdigit() is true and int() refuses it), within u64.
        if t.isascii() and t.isdigit() and int(t) <= COUNTER_MAX:
            counters[name] = int(t)
        else:
            bad.append(name)
    return counters, bad
