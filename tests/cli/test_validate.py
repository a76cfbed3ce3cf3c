"""``dolmen validate`` through the lean entry (cli/lean.py, no click) and through click give
the same output and exit code for every invocation the lean entry accepts; everything else
(help, --list, bad options) falls back to click; the lean run imports neither click nor rich."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.cli.lean import parse
from dolmen.cli.main import main
from tests.hosts import scenarios
from tests.report.contract import assert_valid
from tests.test_scenarios import normalise

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-hgx-healthy", tmp_path_factory.mktemp("lean") / "tree")


def _run(capsys: pytest.CaptureFixture[str], argv: list[str], root: Path, lean: bool) -> object:
    rc = main(argv, lean=lean)
    out, err = capsys.readouterr()
    if out.startswith("{"):
        return rc, normalise(assert_valid(json.loads(out)), root), err
    return rc, re.sub(r"\d+\.\d+ s\b", "<t> s", out), err


LEAN = [
    ["validate", "--level", "quick", "--from", "{T}", "--json"],
    ["validate", "--level", "quick", "--from", "{T}", "--npd"],
    ["validate", "--level=QUICK", "--from={T}", "--npd"],
    ["--debug", "validate", "--level", "quick", "--from", "{T}", "--json", "--only", "gpu"],
    ["validate", "--from", "{T}", "--level", "quick", "--only", "gpu.ecc", "--only", "stack"],
    ["validate", "--level", "quick", "--from", "{T}", "-v"],
    ["validate", "--level", "quick", "--from", "{T}", "--json", "--npd"],
    ["validate", "--level", "quick", "--from", "{T}", "--slurm", "--npd"],
    ["validate", "--level", "quick", "--from", "{T}/nope", "--json"],
    ["validate", "--level", "quick", "--from", "{T}", "--only", "gpu.eccc", "--slurm"],
    ["validate", "--level", "quick", "--from", "{T}", "--only", "workload", "--json"],
    ["validate", "--level", "quick", "--from", "{T}", "--baseline", "{T}/nope.json"],
    ["validate", "--level", "quick", "--from", "{T}", "--config", "{T}/nope.toml", "--npd"],
    ["validate", "--level", "quick", "--from", "{T}", "--timeout", "30s", "--npd"],
    ["validate", "--level", "quick", "--from", "{T}", "--timeout=2m", "--json"],
    ["validate", "--level", "quick", "--from", "{T}", "--timeout", "soon"],
    [
        *("validate", "--level", "quick", "--from", "{T}", "--json"),
        *("--junit", "{T}/../out.xml", "--prometheus", "{T}/../out.prom"),
    ],
]


@pytest.mark.parametrize("argv", LEAN, ids=lambda a: " ".join(a).replace("{T}", "T"))
def test_lean_and_click_agree(
    argv: list[str], tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.replace("{T}", str(tree)) for a in argv]
    assert parse(args) is not None, "the lean entry should take this invocation"
    assert _run(capsys, args, tree, lean=True) == _run(capsys, args, tree, lean=False)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--only", "gpu.eccc"], "--only: unknown check 'gpu.eccc'"),
        (["--only", "nope", "--slurm"], "--only: unknown check 'nope'"),
        (["--only", "workload"], "no check at level quick"),
    ],
)
def test_only_names_real_checks(
    tree: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """A typo in --only ran zero checks and said HEALTHY, exit 0: a Slurm health check that
    never drains and even resumes a node (issue 17). Now it is a usage error, exit 2."""
    assert main(["validate", "--level", "quick", "--from", str(tree), *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and ("dolmen validate --list" in err or "add --level full" in err)


def test_only_takes_a_comma_separated_list_as_repeated_flags(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["validate", "--level", "quick", "--from", str(tree), "--json"]
    main([*base, "--only", "gpu.ecc,gpu.xid"])
    listed = json.loads(capsys.readouterr().out)
    main([*base, "--only", "gpu.ecc", "--only", "gpu.xid"])
    repeated = json.loads(capsys.readouterr().out)
    checks = {f["check"] for f in listed["findings"]}
    assert checks == {f["check"] for f in repeated["findings"]}
    assert "gpu.xid" in checks and all(c.startswith(("gpu.ecc", "gpu.xid")) for c in checks)
    assert main([*base, "--only", "gpu.ecc,gpu.eccc"]) == 2
    assert "unknown check 'gpu.eccc'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "said", "forms"),
    [
        (["--only", ""], "--only '' names no check", "hint: give a check id, a category"),
        (["--only", ","], "--only ',' names no check", "dolmen validate --list"),
        (["--only", "gpu", "--only", " "], "--only ' ' names no check", "--only gpu.ecc,pcie"),
        (["--status", ""], "--status: unknown status ''", "valid: fail, error, unknown"),
        (["--status", ","], "--status: unknown status ','", "valid: fail, error, unknown"),
        (["--gpu", ""], "--gpu: '' is neither a GPU index nor a PCI bus id", "hint: give the"),
    ],
)
@pytest.mark.parametrize("lean", [True, False], ids=["lean", "click"])
def test_an_empty_selector_is_a_usage_error(
    tree: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
    forms: str,
    lean: bool,
) -> None:
    """``--only ''`` dropped its one empty name, left no selector and ran every check, exit
    0: a health check that asked for one check got the whole run. An empty --only, --status
    or --gpu is a usage error, exit 2, naming the forms they take."""
    args = ["validate", "--level", "quick", "--from", str(tree), *argv]
    assert main(args, lean=lean) == 2
    out, err = capsys.readouterr()
    assert out == "" and said in err and forms in err and "Traceback" not in err


def test_site_disable_names_real_checks(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tree.parent / "disable.toml"
    conf.write_text('[validate]\ndisable = ["tuning.thpp"]\n')
    assert main(["validate", "--from", str(tree), "--config", str(conf)]) == 2
    assert "did you mean tuning.thp" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--version"],
        ["--help"],
        ["kb", "cuda"],
        ["validate", "--help"],
        ["validate", "-h"],
        ["validate", "--list"],
        ["validate", "--level", "nope"],
        ["validate", "--level"],
        ["validate", "--from", "--json"],
        ["validate", "--from="],
        ["validate", "--json", "--json"],
        ["validate", "--level", "quick", "--level", "full"],
        ["validate", "-vh"],
        ["validate", "extra"],
        ["validate", "--json=1"],
        ["validate", "--debug"],
        ["validate", "--", "--json"],
    ],
)
def test_anything_else_goes_through_click(argv: list[str]) -> None:
    assert parse(argv) is None


def test_dolmen_debug_in_the_environment_goes_through_click(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOLMEN_DEBUG", "maybe")  # click rejects it: its message, not ours
    assert parse(["validate", "--json"]) is None


# Modules the quick tier does without (issue 8: it runs every few minutes on every node):
# click and rich (cli/lean.py), tomllib without a dolmen.toml, traceback without an error,
# pkgutil (checks/index.py lists the modules).
NOT_IMPORTED = ("click", "rich", "tomllib", "traceback", "pkgutil")


def _fresh_python(code: str) -> str:
    """What ``code`` prints in a new interpreter with this checkout's sources first (and no
    DOLMEN_DEBUG): import-time and exit behaviour cannot be seen from inside pytest."""
    env = {k: v for k, v in os.environ.items() if k != "DOLMEN_DEBUG"} | {"PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout


def test_the_lean_run_imports_neither_click_nor_rich(tree: Path) -> None:
    code = (
        "import sys\nfrom dolmen.cli.main import main\n"
        f"rc = main(['validate', '--level', 'quick', '--from', {str(tree)!r}, '--npd'])\n"
        f"print(rc, sorted(m for m in {NOT_IMPORTED!r} if m in sys.modules))\n"
    )
    out = _fresh_python(code)
    assert out.splitlines()[-1] == "0 []"


def test_list_honours_json(capsys: pytest.CaptureFixture[str]) -> None:
    """``--list --json`` is a document scripts can read, not the table (issue 17)."""
    from dolmen.checks import load_registry

    assert main(["validate", "--list", "--json"]) == 0
    doc = assert_valid(json.loads(capsys.readouterr().out))
    assert doc["schema"] == "dolmen.checks/1"
    assert [c["id"] for c in doc["checks"]] == sorted(load_registry())
    ecc = next(c for c in doc["checks"] if c["id"] == "gpu.ecc.volatile_uncorrectable")
    assert ecc["level"] == "quick" and ecc["category"] == "gpu" and "gpu" in ecc["needs"]


@pytest.mark.parametrize("enabled", [True, False])
def test_the_quick_tier_leaves_the_garbage_collector_as_it_found_it(
    capsys: pytest.CaptureFixture[str], tree: Path, enabled: bool
) -> None:
    """A quick run turns the cyclic collector off while it runs (8% of a run) and restores
    it, for in-process callers; other levels never touch it."""
    import gc

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert main(["validate", "--level", "quick", "--from", str(tree), "--npd"]) == 0
        assert gc.isenabled() is enabled
        main(["validate", "--level", "standard", "--from", str(tree), "--npd"])
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    capsys.readouterr()


@pytest.mark.xfail(
    sys.version_info >= (3, 13),
    reason="on 3.13 a quick run loads inspect (with ast, dis, tokenize): the deferral misses it",
    strict=True,
)
def test_a_quick_run_leaves_inspect_and_ipaddress_unloaded_until_used(tree: Path) -> None:
    code = (
        "import sys\nfrom dolmen.cli.main import main\n"
        f"rc = main(['validate', '--level', 'quick', '--from', {str(tree)!r}, '--json'])\n"
        "kinds = [type(sys.modules[m]).__name__ for m in ('inspect', 'ipaddress')]\n"
        "loaded = [m for m in ('ast', 'dis', 'tokenize') if m in sys.modules]\n"
        "import dataclasses, inspect\n"
        "from ipaddress import ip_address\n"
        "Plain = dataclasses.make_dataclass('Plain', ['x'])  # no docstring: inspect.signature\n"
        "print(rc, kinds, loaded, Plain.__doc__, ip_address('::1'), type(inspect).__name__)\n"
    )
    out = _fresh_python(code)
    assert (
        out.splitlines()[-1] == "0 ['_Deferred', '_Deferred'] [] Plain(x: 'typing.Any') ::1 module"
    )


def test_a_deferred_module_runs_once_on_first_use_in_the_same_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dolmen.quickstart import defer_imports

    (tmp_path / "dolmen_probe_ok.py").write_text("import sys\nsys.probe_runs += 1\nVALUE = 42\n")
    (tmp_path / "dolmen_probe_bad.py").write_text("raise RuntimeError('broken on import')\n")
    (tmp_path / "dolmen_probe_pkg").mkdir()
    (tmp_path / "dolmen_probe_pkg" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "probe_runs", 0, raising=False)
    names = ("dolmen_probe_ok", "dolmen_probe_bad", "dolmen_probe_pkg", "dolmen_probe_absent")
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)
    defer_imports(names)
    assert "dolmen_probe_pkg" not in sys.modules and "dolmen_probe_absent" not in sys.modules
    import dolmen_probe_ok  # type: ignore[import-not-found]

    assert sys.probe_runs == 0  # type: ignore[attr-defined]
    assert dolmen_probe_ok.VALUE == 42 and sys.probe_runs == 1  # type: ignore[attr-defined]
    assert sys.modules["dolmen_probe_ok"] is dolmen_probe_ok and dolmen_probe_ok.VALUE == 42
    assert type(dolmen_probe_ok).__name__ == "module" and sys.probe_runs == 1  # type: ignore[attr-defined]
    assert dolmen_probe_ok.__file__ == str(tmp_path / "dolmen_probe_ok.py")
    import dolmen_probe_bad  # type: ignore[import-not-found]

    with pytest.raises(RuntimeError, match="broken on import"):
        dolmen_probe_bad.anything  # noqa: B018
    assert "dolmen_probe_bad" not in sys.modules  # as a failed import leaves it
    monkeypatch.delitem(sys.modules, "dolmen_probe_ok")


def test_only_a_process_of_its_own_skips_the_final_collection(tree: Path) -> None:
    """``main()`` reading sys.argv (the console script) freezes the run's objects on the way
    out; ``main(argv)`` (an in-process caller) leaves the collector to its caller."""
    args = ["validate", "--level", "quick", "--from", str(tree), "--npd"]
    code = (
        "import gc, sys\nfrom dolmen.cli.main import main\n"
        f"rc = main({args!r})\nexplicit = gc.get_freeze_count()\n"
        f"sys.argv[1:] = {args!r}\nrc2 = main()\n"
        "print(rc, explicit, rc2, gc.get_freeze_count() > 1000, gc.isenabled())\n"
    )
    out = _fresh_python(code)
    assert out.splitlines()[-1] == "0 0 0 True True"
