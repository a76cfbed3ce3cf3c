"""CPU lists: the kernel's syntax, one printed form, and hostile input refused with a reason."""

from __future__ import annotations

import pytest

from dolmen.values.cpulist import MAX_CPU, CpuList, format_cpulist, parse_cpulist


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-3,8,10-11", (0, 1, 2, 3, 8, 10, 11)),
        ("0-3\n", (0, 1, 2, 3)),
        ("0-55,112-167\n", (*range(56), *range(112, 168))),
        ("0-63,128-191", (*range(64), *range(128, 192))),
        ("1,2-7,9", (1, 2, 3, 4, 5, 6, 7, 9)),
        ("7", (7,)),
        ("5,3,3,1-2", (1, 2, 3, 5)),  # any order, repeats: one sorted set
        ("0-3, 8 ,\t10-11", (0, 1, 2, 3, 8, 10, 11)),  # spaces around items
        ("", ()),  # a memory-only NUMA node
        ("\n", ()),
        ("  \n", ()),
        ("007", (7,)),
        ("3-3", (3,)),
        ("0-15:2/4", (0, 1, 4, 5, 8, 9, 12, 13)),  # the kernel's group form
        ("100-200:2/25", (100, 101, 125, 126, 150, 151, 175, 176, 200)),
        ("0-7:0/4", ()),  # the kernel takes "use none of each group"
        (f"0-{MAX_CPU}", tuple(range(MAX_CPU + 1))),
    ],
)
def test_cpu_lists(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpulist(text) == CpuList(cpus)
    assert parse_cpulist(text).cpus == cpus


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("3-1", "runs backwards"),
        ("0-9999999", "above 65535"),
        (f"{MAX_CPU + 1}", "above 65535"),
        ("99999999999999999999", "above 65535"),
        ("9" * 5000, "above 65535"),  # past Python's own int() digit limit
        ("1,,2", "empty item"),
        ("0-3,", "empty item"),
        (",", "empty item"),
        ("-1", "not a CPU number"),
        ("0--3", "not a CPU number"),
        ("0-", "not a CPU number"),
        ("-", "not a CPU number"),
        ("a-b", "not a CPU number"),
        ("0-x", "not a CPU number"),
        ("nan", "not a CPU number"),
        ("1e9", "not a CPU number"),
        ("1.5", "not a CPU number"),
        ("0x10", "not a CPU number"),
        ("1_000", "not a CPU number"),
        ("\u0661", "not a CPU number"),  # ARABIC-INDIC DIGIT ONE: int() takes it, the kernel not
        ("ff,ffffffff", "not a CPU number"),  # a mask, not a list
        ("0 - 3", "not a CPU number"),
        ("0-3 4", "not a CPU number"),
        ("\x00", "not a CPU number"),
        ("0-15:2", "not a CPU number"),  # the kernel wants used/group
        ("0-15:3/0", "group size"),
        ("0-15:5/4", "group size"),
        ("16-N", "CPU count"),
        ("all", "CPU count"),
    ],
)
def test_malformed_and_hostile_lists_are_refused(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why) as err:
        parse_cpulist(text)
    assert "0-3,8,10-11" in str(err.value)  # the message names the form


@pytest.mark.parametrize(
    ("cpus", "text"),
    [
        ((), ""),
        ((0,), "0"),
        ((0, 1), "0-1"),  # the kernel prints a run of two as a range (cpu/online: 0-1)
        ((0, 1, 2, 3, 8, 10, 11), "0-3,8,10-11"),
        ((11, 10, 3, 2, 1, 0, 8, 8), "0-3,8,10-11"),
        ((0, 2, 4), "0,2,4"),
    ],
)
def test_format_is_the_kernel_form(cpus: tuple[int, ...], text: str) -> None:
    assert format_cpulist(cpus) == text


@pytest.mark.parametrize("text", ["0-3,8,10-11", "0,1,2,3", "5,3,1-2", "0-15:2/4", "\n", "7"])
def test_print_then_parse_is_the_same_list(text: str) -> None:
    cpus = parse_cpulist(text)
    assert parse_cpulist(str(cpus)) == cpus
    assert str(parse_cpulist(str(cpus))) == str(cpus)


def test_a_cpu_list_is_a_value() -> None:
    a, b = parse_cpulist("0-3"), parse_cpulist("3,2,1,0")
    assert a == b and hash(a) == hash(b) and str(a) == "0-3"
    assert 2 in a and 4 not in a and len(a) == 4 and list(a) == [0, 1, 2, 3]
