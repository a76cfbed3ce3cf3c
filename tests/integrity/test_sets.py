"""The sets file: the shipped one loads and names the boot chain and the AI stack; bad
ones are refused with the set and the problem."""

from __future__ import annotations

import pytest

from dolmen.errors import InputError
from dolmen.integrity.sets import FileSet, default_sets, expand, parse_sets


def test_the_shipped_sets_cover_the_issue() -> None:
    sets = {s.name: s for s in default_sets()}
    assert list(sets) == [
        "bootloader", "kernel", "cmdline", "modules", "driver",
        "cudnn", "nccl", "tensorrt", "container-toolkit", "dolmen",
    ]  # fmt: skip
    every = [p for s in sets.values() for p in s.paths]
    for needed in (
        "boot/efi/EFI/**",
        "boot/grub/grub.cfg",
        "proc/cmdline",
        "lib/modules/{kernel}/**",
        "etc/modprobe.d/**",
        "usr/lib/*-linux-gnu/libcuda.so*",
        "usr/lib/*-linux-gnu/libnvidia-*",
        "usr/bin/nvidia-ctk",
        "{dolmen}/**",
    ):
        assert needed in every
    assert sets["cmdline"].volatile and not sets["modules"].volatile
    assert sets["dolmen"].exclude == ("__pycache__",)


def test_expand_fills_the_kernel_and_leaves_out_a_package_elsewhere() -> None:
    out = {s.name: s for s in expand(default_sets(), kernel="6.8.0-45-generic", dolmen=None)}
    assert "lib/modules/6.8.0-45-generic/**" in out["modules"].paths
    assert out["dolmen"].paths == () and "not under the sealed root" in out["dolmen"].note
    here = {s.name: s for s in expand(default_sets(), kernel="6.8.0", dolmen="usr/lib/py/dolmen")}
    assert here["dolmen"].paths == ("usr/lib/py/dolmen/**",)
    for bad in ("", "../x", "a/b"):
        with pytest.raises(InputError):
            expand(default_sets(), kernel=bad, dolmen=None)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "one or more [[set]]"),
        ("x = 1", "one or more [[set]]"),
        ("[[set]]\nname='a'\npaths=['x']\n[other]\n", "nothing else"),
        ("[[set]]\nname='A b'\npaths=['x']", "lower-case"),
        ("[[set]]\nname='a'\npaths=[]", "non-empty list"),
        ("[[set]]\nname='a'\npaths='boot'", "non-empty list"),
        ("[[set]]\nname='a'\npaths=['/boot']", "not a relative host path"),
        ("[[set]]\nname='a'\npaths=['boot/../etc']", "not a relative host path"),
        ("[[set]]\nname='a'\npaths=['**']", "whole file system"),
        ("[[set]]\nname='a'\npaths=['a/**/b']", "last component"),
        ("[[set]]\nname='a'\npaths=['a/x**']", "last component"),
        ("[[set]]\nname='a'\npaths=['x']\nvolatile='yes'", "true or false"),
        ("[[set]]\nname='a'\npaths=['x']\nexclude='y'", "list of names"),
        ("[[set]]\nname='a'\npaths=['x']\ncolour='red'", "unknown key 'colour'"),
        ("[[set]]\nname='a'\npaths=['x']\n[[set]]\nname='a'\npaths=['y']", "defined twice"),
        ("[[set]\nname='a'", "not valid TOML"),
    ],
)
def test_bad_sets_files_are_refused(text: str, words: str) -> None:
    with pytest.raises(InputError, match=None) as info:
        parse_sets(text, "sets.toml")
    assert words in str(info.value) and str(info.value).startswith("sets.toml")


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"paths": "x"},
        {"paths": ["/abs"]},
        {"paths": ["x"], "exclude": [1]},
    ],
)
def test_a_manifest_set_that_is_not_one_is_a_value_error(data: object) -> None:
    with pytest.raises(ValueError):
        FileSet.from_json(data)
