"""The inputs of ``net prove`` and of job isolation: the endpoints file, ``--job``, the
names a scheduler gives; real inputs plus truncated, junk and hostile ones."""

from __future__ import annotations

import pytest

from dolmen.cli.net_prove import parse_job
from dolmen.errors import ConfigError, UsageError
from dolmen.net.endpoints import parse_endpoints
from dolmen.net.members import resolve

GOOD = """\
[[endpoint]]
name = "node1"
address = "10.0.0.11"
netns = "ns1"

[[endpoint]]
name = "node2"
address = "fd00::12"
enter = ["ssh", "-o", "BatchMode=yes", "node2"]

[[endpoint]]
name = "here"
address = "127.0.0.1"
"""


def test_endpoints_file() -> None:
    one, two, here = parse_endpoints(GOOD, "e.toml")
    assert (one.name, str(one.address), one.enter) == (
        "node1",
        "10.0.0.11",
        ("ip", "netns", "exec", "ns1"),
    )
    assert two.address.version == 6 and two.enter[0] == "ssh"
    assert here.enter == ()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "needs at least two"),
        ('[[endpoint]]\nname = "a"\naddress = "10.0.0.1"\n', "needs at least two"),
        ('[[endpoint]]\nname = "a"\naddress = "10.0.0.300"\n', "e.toml:2: endpoint 'a': address"),
        ('[[endpoint]]\naddress = "10.0.0.1"\n', "name ''"),
        ('[[endpoint]]\nname = "a; rm -rf /"\naddress = "10.0.0.1"\n', "name 'a; rm -rf /'"),
        ('[[endpoint]]\nname = "a"\naddress = "10.0.0.1"\nport = 3\n', "port"),
        (
            '[[endpoint]]\nname = "a"\naddress = "10.0.0.1"\nnetns = "x"\nenter = ["ssh"]\n',
            "not both",
        ),
        ('[[endpoint]]\nname = "a"\naddress = "10.0.0.1"\nnetns = "../x"\n', "not a namespace"),
        ('[[endpoint]]\nname = "a"\naddress = "10.0.0.1"\nenter = []\n', "non-empty list"),
        ('[[endpoint]]\nname = "a"\naddress = "10.0.0.1"\n' * 2, "named twice"),
        ('[[endpoint]\nname = "a"\n', "not valid TOML"),
        ("endpoint = 3\n", "endpoint"),
        ('[[endpoint]]\nname = "a"\naddress = 10\n', "address"),
    ],
)
def test_bad_endpoints_files_name_the_problem(text: str, words: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_endpoints(text, "e.toml")
    assert words in str(e.value)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("7=node1,node2", ("7", ["node1", "node2"], None)),
        ("slurm-12=10.0.0.1@teamA", ("slurm-12", ["10.0.0.1"], "teamA")),
        (" 3 = a , b ", ("3", ["a", "b"], None)),
    ],
)
def test_job_option(spec: str, want: tuple[str, list[str], str | None]) -> None:
    assert parse_job(spec) == want


@pytest.mark.parametrize("spec", ["7", "=a,b", "7=", "7=,", "7=a@", "7=@t"])
def test_bad_job_option(spec: str) -> None:
    with pytest.raises(UsageError):
        parse_job(spec)


def test_resolve_keeps_addresses_and_refuses_what_does_not_resolve() -> None:
    assert resolve(["10.0.0.1", "fd00::1"]) == ["10.0.0.1", "fd00::1"]
    assert resolve(["localhost"])[0] in ("127.0.0.1", "::1")
    with pytest.raises(OSError, match="does not resolve"):
        resolve(["no-such-node.invalid"])
