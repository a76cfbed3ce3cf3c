"""packaging/ansible/dolmen.fact: run directly against host trees, and through a real
``ansible -m setup`` (ansible-core, connection local, every Ansible folder under tmp_path),
which must show its output as ``ansible_local.dolmen``. Every outcome is JSON: dolmen's
facts document (held to its JSON Schema), or an error naming what went wrong."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dolmen import demo
from dolmen.report.schemas import load as load_schema
from tests.packaging.common import PACKAGING, dolmen_program

FACT = PACKAGING / "ansible/dolmen.fact"
ANSIBLE = Path(sys.executable).parent / "ansible"


def _run(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [str(FACT)], env={**os.environ, **env}, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr  # setup needs an answer, not an exit code
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.build_sample("hgx-h100", tmp_path_factory.mktemp("fact") / "hgx-h100")


def test_prints_the_facts_document_of_a_host_tree(tree: Path, tmp_path: Path) -> None:
    doc = _run({"DOLMEN": str(dolmen_program(tmp_path)), "DOLMEN_FACTS_FROM": str(tree)})
    import jsonschema

    jsonschema.validate(doc, load_schema("facts"))
    assert len(doc["gpu"]["gpus"]) == 8
    assert {g["name"] for g in doc["gpu"]["gpus"]} == {"NVIDIA H100 80GB HBM3"}


def test_only_limits_the_subsystems(tree: Path, tmp_path: Path) -> None:
    doc = _run(
        {
            "DOLMEN": str(dolmen_program(tmp_path)),
            "DOLMEN_FACTS_FROM": str(tree),
            "DOLMEN_FACTS_ONLY": "os,gpu",
        }
    )
    assert {"os", "gpu"} <= set(doc) and "cpu" not in doc and "kernel_log" not in doc


def test_missing_dolmen_is_an_error_not_an_empty_answer(tmp_path: Path) -> None:
    doc = _run({"DOLMEN": str(tmp_path / "nothere")})
    assert doc == {"error": f"dolmen is not installed at {tmp_path / 'nothere'}", "exit_code": 127}


def test_a_failing_dolmen_is_named_with_its_exit_code(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # not a host tree: dolmen refuses it with exit 2 and one line
    doc = _run({"DOLMEN": str(dolmen_program(tmp_path)), "DOLMEN_FACTS_FROM": str(fifo)})
    assert doc["exit_code"] == 2 and doc["error"].startswith("dolmen facts failed: ")
    assert "not a host tree" in doc["error"]


def test_a_hung_dolmen_is_cut_by_the_timeout(tmp_path: Path) -> None:
    slow = tmp_path / "slow"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    doc = _run({"DOLMEN": str(slow), "DOLMEN_FACTS_TIMEOUT": "1"})
    assert doc == {"error": "dolmen facts did not finish within 1 s", "exit_code": 124}


@pytest.mark.slow
@pytest.mark.skipif(not ANSIBLE.exists(), reason="ansible-core is not installed in this venv")
def test_ansible_setup_shows_ansible_local_dolmen(tree: Path, tmp_path: Path) -> None:
    facts_d = tmp_path / "facts.d"
    facts_d.mkdir()
    shutil.copy(FACT, facts_d / "dolmen.fact")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "ANSIBLE_HOME": str(home / ".ansible"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "local-tmp"),
        "ANSIBLE_REMOTE_TMP": str(tmp_path / "remote-tmp"),
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "ANSIBLE_NOCOLOR": "1",
        "DOLMEN": str(dolmen_program(tmp_path)),
        "DOLMEN_FACTS_FROM": str(tree),
        "DOLMEN_FACTS_ONLY": "os,gpu,stack",
    }
    done = subprocess.run(
        [str(ANSIBLE), "localhost", "-c", "local", "-i", "localhost,", "-m", "setup", "-a",
         f"fact_path={facts_d} gather_subset=min filter=ansible_local"],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    doc = json.loads(out[out.index("{") :])
    dolmen = doc["ansible_facts"]["ansible_local"]["dolmen"]
    assert "error" not in dolmen
    assert dolmen["gpu"]["driver_version"] and len(dolmen["gpu"]["gpus"]) == 8
