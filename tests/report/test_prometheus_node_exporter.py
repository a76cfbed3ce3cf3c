"""The textfile contract against its consumers: promtool lints the file, and a real
node_exporter on loopback serves a quick-tier file and a standard-tier file from one folder
without a duplicate series (issue 17). A negative control shows what the test would catch:
two files without the level label make node_exporter report duplicates."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen import demo
from dolmen.checks.model import Level
from dolmen.checks.suite import validate
from dolmen.config import Config
from dolmen.host import open_host
from dolmen.report.prometheus import render_prometheus

pytestmark = pytest.mark.service

NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
PROMTOOL = shutil.which("promtool")
# promtool's lint wants snake_case label names; dcgm-exporter's own series carry modelName,
# and a join needs the same name (issue 17): that one lint is expected, nothing else is.
CAMEL_CASE = "dolmen_check_status label names should be written in 'snake_case' not 'camelCase'"
DUPLICATE = "was collected before with the same name and label values"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The textfile of each level for the sample node with a GPU fallen off the bus."""
    tree = demo.build_sample("hgx-h100-xid79", tmp_path_factory.mktemp("prom") / "tree")
    out = {}
    with open_host(tree) as host:
        for level in (Level.QUICK, Level.STANDARD):
            v = validate(host, level=level, config=Config())
            out[level.name.lower()] = render_prometheus(v)
    return out


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian: prometheus)")
@pytest.mark.parametrize("level", ["quick", "standard"])
def test_promtool_lints_the_file(files: dict[str, str], level: str) -> None:
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=files[level], capture_output=True, text=True
    )
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode in (0, 3) and set(said) <= {CAMEL_CASE}, said  # 3: lint only
    # ... and it is modelName's alone: without it promtool has nothing to say.
    plain = re.sub(r'modelName="[^"]*",', "", files[level])
    done = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=plain, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


class _Exporter:
    def __init__(self, folder: Path) -> None:
        assert NODE_EXPORTER is not None
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.log = folder / "node_exporter.log"
        self.proc = subprocess.Popen(
            [
                NODE_EXPORTER,
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--collector.disable-defaults",
                "--collector.textfile",
                f"--collector.textfile.directory={folder / 'textfile'}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("w"),
        )

    def scrape(self) -> str:
        deadline = time.monotonic() + 10
        while True:
            try:
                url = f"http://127.0.0.1:{self.port}/metrics"
                with urllib.request.urlopen(url, timeout=5) as r:
                    return str(r.read().decode())
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[_Exporter]:
    (tmp_path / "textfile").mkdir()
    e = _Exporter(tmp_path)
    try:
        yield e
    finally:
        e.stop()


@pytest.mark.skipif(NODE_EXPORTER is None, reason="node_exporter is not installed")
def test_two_levels_in_one_folder(
    files: dict[str, str], exporter: _Exporter, tmp_path: Path
) -> None:
    for level, text in files.items():
        (tmp_path / "textfile" / f"dolmen-{level}.prom").write_text(text)
    body = exporter.scrape()
    assert "node_textfile_scrape_error 0" in body
    for level in ("quick", "standard"):
        assert f'dolmen_health{{level="{level}"}} 2' in body
        assert re.search(rf'dolmen_build_info{{level="{level}",python="[^"]+",version=', body)
    # node_exporter sorts the labels and gives every series of a family the same label names
    # (empty where a file has none): the GPU's dcgm-exporter labels come through
    want = ('check="gpu.lost"', 'gpu="3"', 'level="quick"', 'pci_bus_id="00000000:86:00.0"')
    want += ('status="fail"', 'subject="gpu:00000000:86:00.0"')
    assert any(all(w in line for w in want) for line in body.splitlines())
    assert DUPLICATE not in exporter.log.read_text()


@pytest.mark.skipif(NODE_EXPORTER is None, reason="node_exporter is not installed")
def test_negative_control_without_the_level(
    files: dict[str, str], exporter: _Exporter, tmp_path: Path
) -> None:
    """The same two files with the level label taken out: node_exporter sees duplicates."""
    for level, text in files.items():
        old = re.sub(r'\{level="[a-z]+",?', "{", text).replace("{}", "")
        (tmp_path / "textfile" / f"dolmen-{level}.prom").write_text(old)
    exporter.scrape()
    assert DUPLICATE in exporter.log.read_text()


def test_gpu_series_carry_dcgm_exporter_labels(files: dict[str, str]) -> None:
    """A GPU's series joins DCGM_FI_DEV_* on dcgm-exporter's own labels and spelling."""
    lost = [
        line
        for line in files["quick"].splitlines()
        if 'check="gpu.lost"' in line and 'subject="gpu:00000000:86:00.0"' in line
    ]
    assert lost and all(
        'gpu="3"' in line and 'pci_bus_id="00000000:86:00.0"' in line for line in lost
    )
    named = [line for line in files["quick"].splitlines() if "UUID=" in line]
    assert named and all("modelName=" in line and 'gpu="' in line for line in named)
