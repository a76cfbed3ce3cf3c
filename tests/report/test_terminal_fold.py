"""``fold``: cascades folded under their root cause, as a table of finding lists.

Each case is a list of findings written as ``(check, status, subject, summary, remedy)`` and
the folded result written back as strings: a finding as ``check@subject``, a group as
``[status root@root_subject: member, member...]`` (root ``-`` for a shared summary alone).
The subjects use both spellings a GPU has had (``gpu:00000000:86:00.0`` and ``gpu:0000:86:00.0``):
the grouping compares subjects as written and holds with either.
"""

from __future__ import annotations

import pytest

from dolmen.checks.model import Finding, Status
from dolmen.report.terminal.fold import Group, Item, describe, fold

U, S, F, W, P, E = (
    Status.UNKNOWN,
    Status.SKIP,
    Status.FAIL,
    Status.WARN,
    Status.PASS,
    Status.ERROR,
)
G3 = "gpu:00000000:86:00.0"
G5 = "gpu:0000:a8:00.0"
LOST = "the GPU is lost: none of its readings can be trusted"
SEE_LOST = "See gpu.lost: drain the node and reboot it."
NO_DRIVER = "the driver listed no GPU (command failed: nvidia-smi -q -x: exit 9)"
SEE_DRIVER = "See gpu.driver.responds: the GPU inventory must be readable first."


def _f(
    check: str,
    status: Status,
    subject: str = "host",
    summary: str = "",
    remedy: str | None = None,
    gating: bool = True,
) -> Finding:
    return Finding(
        check, check.split(".")[0], status, subject, summary or check, remedy, {}, gating
    )


def _show(items: list[Item]) -> list[str]:
    out = []
    for item in items:
        if isinstance(item, Group):
            root = f"{item.root}@{item.root_subject}" if item.root else "-"
            members = ", ".join(f"{f.check}@{f.subject}" for f in item.members)
            out.append(f"[{item.status.value} {root}: {members}]")
        else:
            out.append(f"{item.check}@{item.subject}")
    return out


CASES = {
    "a lost GPU: its unknowns fold under gpu.lost on that GPU": (
        [
            _f("gpu.lost", F, G3, "the GPU is lost"),
            _f("gpu.ecc.mode", U, G3, LOST, SEE_LOST),
            _f("gpu.power", U, G3, LOST, SEE_LOST),
            _f("gpu.power", P, G5),
        ],
        [
            f"gpu.lost@{G3}",
            f"[unknown gpu.lost@{G3}: gpu.ecc.mode@{G3}, gpu.power@{G3}]",
            f"gpu.power@{G5}",
        ],
    ),
    "two lost GPUs: one group each, after each root": (
        [
            _f("gpu.lost", F, G3),
            _f("gpu.lost", F, G5),
            _f("gpu.ecc.mode", U, G3, LOST, SEE_LOST),
            _f("gpu.ecc.mode", U, G5, LOST, SEE_LOST),
            _f("gpu.power", U, G3, LOST, SEE_LOST),
            _f("gpu.power", U, G5, LOST, SEE_LOST),
        ],
        [
            f"gpu.lost@{G3}",
            f"[unknown gpu.lost@{G3}: gpu.ecc.mode@{G3}, gpu.power@{G3}]",
            f"gpu.lost@{G5}",
            f"[unknown gpu.lost@{G5}: gpu.ecc.mode@{G5}, gpu.power@{G5}]",
        ],
    ),
    "no driver: host-wide unknowns fold under the failing root, across categories": (
        [
            _f("gpu.driver.responds", F),
            _f("gpu.count", U, summary=NO_DRIVER, remedy=SEE_DRIVER),
            _f("gpu.ecc.mode", U, summary=NO_DRIVER, remedy=SEE_DRIVER),
            _f("interconnect.nvlink.state", U, summary="see gpu.driver.responds"),
            _f("stack.driver.loaded", F),
        ],
        [
            "gpu.driver.responds@host",
            "[unknown gpu.driver.responds@host: gpu.count@host, gpu.ecc.mode@host,"
            " interconnect.nvlink.state@host]",
            "stack.driver.loaded@host",
        ],
    ),
    "a chain: unknown because of an unknown root folds under the end of the chain": (
        [
            _f("gpu.driver.responds", F),
            _f("gpu.lost", U, summary=NO_DRIVER, remedy=SEE_DRIVER),
            _f("gpu.power", U, summary="lost?", remedy="See gpu.lost first"),
        ],
        [
            "gpu.driver.responds@host",
            "[unknown gpu.driver.responds@host: gpu.lost@host, gpu.power@host]",
        ],
    ),
    "a named root that passed is no cause: the same summary still groups": (
        [
            _f("gpu.lost", P, G3),
            _f("gpu.ecc.mode", U, G3, LOST, SEE_LOST),
            _f("gpu.power", U, G3, LOST, SEE_LOST),
        ],
        [f"gpu.lost@{G3}", f"[unknown -: gpu.ecc.mode@{G3}, gpu.power@{G3}]"],
    ),
    "one finding alone is itself, root or not": (
        [_f("gpu.lost", F, G3), _f("gpu.ecc.mode", U, G3, LOST, SEE_LOST)],
        [f"gpu.lost@{G3}", f"gpu.ecc.mode@{G3}"],
    ),
    "skips of one reason group; different reasons do not": (
        [
            _f("baseline.gpus", S, summary="no baseline given"),
            _f("baseline.ib", S, summary="no baseline given"),
            _f("baseline.pcie", S, summary="no baseline given (another)"),
        ],
        ["[skip -: baseline.gpus@host, baseline.ib@host]", "baseline.pcie@host"],
    ),
    "the same summary in two categories: one group, where its first member was": (
        [
            _f("stack.nvcc", S, summary="not in this bundle: usr/local"),
            _f("stack.x", P),
            _f("storage.fstab", S, summary="not in this bundle: usr/local"),
        ],
        ["[skip -: stack.nvcc@host, storage.fstab@host]", "stack.x@host"],
    ),
    "one reason per GPU, naming each GPU's own bus id: one group": (
        [
            _f("gpu.pcie.aer", U, G3, "the GPU's PCI function 0000:86:00.0 is not in sysfs"),
            _f("gpu.pcie.aer", U, G5, "the GPU's PCI function 0000:a8:00.0 is not in sysfs"),
        ],
        [f"[unknown -: gpu.pcie.aer@{G3}, gpu.pcie.aer@{G5}]"],
    ),
    "a bus id that is not the subject's own stays a difference": (
        [
            _f("gpu.nvlink", U, G3, "no link to 0000:a8:00.0"),
            _f("gpu.nvlink", U, G5, "no link to 0000:a8:00.0"),
        ],
        [f"gpu.nvlink@{G3}", f"gpu.nvlink@{G5}"],
    ),
    "fail, warn and error never fold, even with one summary and a named root": (
        [
            _f("gpu.lost", F, G3),
            _f("gpu.power", F, G3, LOST, SEE_LOST),
            _f("gpu.temperature", W, G3, LOST, SEE_LOST),
            _f("gpu.fabric", E, G3, LOST, SEE_LOST),
            _f("gpu.mig", E, G3, LOST, SEE_LOST),
        ],
        [
            f"gpu.lost@{G3}",
            f"gpu.power@{G3}",
            f"gpu.temperature@{G3}",
            f"gpu.fabric@{G3}",
            f"gpu.mig@{G3}",
        ],
    ),
    "unknown and skip of one cause are two groups": (
        [
            _f("gpu.lost", F, G3),
            _f("gpu.ecc.mode", U, G3, LOST, SEE_LOST),
            _f("gpu.power", U, G3, LOST, SEE_LOST),
            _f("gpu.mig", S, G3, LOST, SEE_LOST),
            _f("gpu.fabric", S, G3, LOST, SEE_LOST),
        ],
        [
            f"gpu.lost@{G3}",
            f"[unknown gpu.lost@{G3}: gpu.ecc.mode@{G3}, gpu.power@{G3}]",
            f"[skip gpu.lost@{G3}: gpu.mig@{G3}, gpu.fabric@{G3}]",
        ],
    ),
    "advisory unknowns never join a gating group": (
        [
            _f("gpu.lost", F, G3),
            _f("gpu.ecc.mode", U, G3, LOST, SEE_LOST),
            _f("gpu.power", U, G3, LOST, SEE_LOST),
            _f("tuning.gpu.persistence", U, G3, LOST, SEE_LOST, gating=False),
        ],
        [
            f"gpu.lost@{G3}",
            f"[unknown gpu.lost@{G3}: gpu.ecc.mode@{G3}, gpu.power@{G3}]",
            f"tuning.gpu.persistence@{G3}",
        ],
    ),
    "a host-wide root explains the unknowns of every GPU": (
        [
            _f("stack.driver.loaded", F),
            _f("gpu.power", U, G3, "no module", "See stack.driver.loaded"),
            _f("gpu.power", U, G5, "no module", "See stack.driver.loaded"),
        ],
        [
            "stack.driver.loaded@host",
            f"[unknown stack.driver.loaded@host: gpu.power@{G3}, gpu.power@{G5}]",
        ],
    ),
    "a root failing on another GPU is no cause of this GPU's unknown": (
        [
            _f("gpu.row_remap", F, G3),
            _f("gpu.ecc.aggregate", U, G5, "unread", "see gpu.row_remap"),
            _f("gpu.power", U, G5, "unread", "see gpu.row_remap"),
        ],
        [f"gpu.row_remap@{G3}", f"[unknown -: gpu.ecc.aggregate@{G5}, gpu.power@{G5}]"],
    ),
    "a finding naming its own check, or a word that is no check, is no cause": (
        [
            _f("gpu.power", U, G3, "see gpu.power and nvidia-smi.log"),
            _f("gpu.power", U, G5, "see gpu.power and nvidia-smi.log"),
        ],
        [f"[unknown -: gpu.power@{G3}, gpu.power@{G5}]"],
    ),
    "roots that name each other: no loop, no finding lost": (
        [
            _f("gpu.a", U, summary="see gpu.b"),
            _f("gpu.b", U, summary="see gpu.a"),
        ],
        ["gpu.a@host", "gpu.b@host"],
    ),
    "nothing": ([], []),
}


@pytest.mark.parametrize(("findings", "expected"), CASES.values(), ids=CASES.keys())
def test_fold(findings: list[Finding], expected: list[str]) -> None:
    folded = fold(findings)
    assert _show(folded) == expected
    # every finding is printed once: as itself or as a member of one group
    flat = [f for item in folded for f in (item.members if isinstance(item, Group) else (item,))]
    assert sorted(map(id, flat)) == sorted(map(id, findings))


def test_the_group_line_names_the_bus_id_generically() -> None:
    (group,) = fold(CASES["one reason per GPU, naming each GPU's own bus id: one group"][0])
    assert isinstance(group, Group)
    assert describe(group) == (
        "gpu.pcie.aer on 2 subjects not read: the GPU's PCI function <its bus id> is not in sysfs"
    )


@pytest.mark.parametrize(
    ("members", "labels", "line"),
    [
        (
            [_f("gpu.ecc.mode", U, G3, LOST, SEE_LOST), _f("gpu.power", U, G3, LOST, SEE_LOST)],
            {G3: "GPU 3 (00000000:86:00.0)"},
            f"2 checks of GPU 3 (00000000:86:00.0) not read: {LOST} (see gpu.lost)",
        ),
        (
            [_f("gpu.count", U, summary=NO_DRIVER), _f("gpu.mig", U, summary=NO_DRIVER)],
            {},
            f"2 checks not read: {NO_DRIVER} (see gpu.driver.responds)",
        ),
        (
            [_f("gpu.power", S, G3, "not supported"), _f("gpu.power", S, G5, "not supported")],
            {},
            "gpu.power on 2 subjects skipped: not supported (see gpu.driver.responds)",
        ),
        (
            [_f("gpu.power", U, G3, "a"), _f("gpu.mig", U, G5, "b")],
            {},
            "2 checks on 2 subjects not read: reasons differ (-v lists them) (see gpu.driver.responds)",
        ),
    ],
)
def test_describe(members: list[Finding], labels: dict[str, str], line: str) -> None:
    root = "gpu.lost" if members[0].remedy == SEE_LOST else "gpu.driver.responds"
    summaries = {f.summary for f in members}
    group = Group(
        members[0].status,
        root,
        "host",
        summaries.pop() if len(summaries) == 1 else None,
        tuple(members),
    )
    assert describe(group, labels) == line
