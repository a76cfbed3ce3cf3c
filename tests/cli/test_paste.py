"""``dolmen validate --from FILE`` in-process on one file of each kind users paste: the
detected line comes first on stderr, and the verdict is never healthy by absence (what a
one-file bundle lacks is "not in this bundle", so the run is undecided or finds a fault)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.cli.main import main
from tests.conftest import recording
from tests.host.paste.test_detect import bug_report
from tests.host.paste.test_open import sosreport
from tests.report.contract import assert_valid

DCGM_FAIL = {
    "DCGM Diagnostic": {
        "test_categories": [
            {
                "category": "Hardware",
                "tests": [
                    {
                        "name": "Memory",
                        "results": [
                            {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0,
                             "status": "Fail",
                             "warnings": [{"error_category": 1, "error_id": 43,
                                           "error_severity": 2,
                                           "warning": "GPU 0 memory test failed."}]},
                        ],
                        "test_summary": {"status": "Fail"},
                    }
                ],
            }
        ]
    },
    "metadata": {"version": "4.2.3"},
}  # fmt: skip

# (recording or a name built below, what the detected line says)
CASES = [
    ("nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml", "nvidia-smi -q -x (8 GPUs)"),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.129.03.out.0.valid.a10", "nvidia-smi -q (1 GPU)"),
    ("nvidia-smi-text/gpud__nvidia-smi.550.90.07.out.0.valid", "nvidia-smi (8 GPUs)"),
    ("nvidia-smi-nvlink/azurehpc__bad_nvlink_status_a100.txt", "nvidia-smi nvlink -s (1 GPU)"),
    ("infiniband/gpud__ibstat.39.0.a100.failed.ibpanic.exit-255.0", "ibstat (8 HCAs)"),
    ("infiniband/gpud__ibstatus.39.0.a100.all.active.0", "ibstatus (9 ports)"),
    ("lspci/gpud__lspci-vvv", "lspci (8 NVIDIA GPUs)"),
    ("kernel-logs/gpud__kmsg.1.log", "a kernel log (47 lines)"),
    ("kernel-logs/gpud__dmesg.decode.iso.log.0", "a kernel log (636 lines)"),
    ("cuda-env/nvidia-container-toolkit__rootfs-1__ldconfig-p.txt", "ldconfig -p"),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
        "a multi-command nvidia-smi capture (nvidia-smi topo -m, nvidia-smi nvlink -s, "
        "nvidia-smi, nvidia-smi -q)",
    ),
    ("built:truncated-xml", "nvidia-smi -q -x (2 GPUs)"),  # the second one cut
    ("built:dcgm", "dcgmi diag -j"),
    ("built:journal", "journalctl -o json (1 record)"),
    ("built:topo", "nvidia-smi topo -m (1 GPU)"),
    ("built:smi-failed", "nvidia-smi's own error"),
    ("built:bug-report", "nvidia-bug-report.log (lspci -vvv, dmesg, nvidia-smi -q, 2 files)"),
    ("built:sosreport", "a sosreport (5 outputs dolmen reads)"),
]


def _input(name: str, tmp_path: Path) -> Path:
    if not name.startswith("built:"):
        return recording(name)
    what = name.removeprefix("built:")
    if what == "bug-report":
        return bug_report(tmp_path)
    if what == "sosreport":
        return sosreport(tmp_path)
    path = tmp_path / f"{what}.txt"
    if what == "dcgm":
        path.write_text(json.dumps(DCGM_FAIL, indent=2))
    elif what == "journal":
        rec = {"__REALTIME_TIMESTAMP": "1737133843000000", "_TRANSPORT": "kernel",
               "MESSAGE": "NVRM: Xid (PCI:0000:19:00): 79, pid=1, GPU has fallen off the bus."}  # fmt: skip
        path.write_text(json.dumps(rec) + "\n")
    elif what == "topo":
        rel = "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
        text = recording(rel).read_text()
        start = text.index("# $ nvidia-smi topo -m")
        body = text[start:].split("\n", 2)[2]
        path.write_text(body[: body.index("####")])
    elif what == "truncated-xml":  # cut inside its second <gpu>, as a paste limit cuts
        text = recording("nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml").read_text()
        first = text.index("<gpu id=")
        path.write_text(text[: text.index("<gpu id=", first + 1) + 300])
    elif what == "smi-failed":
        path.write_text(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n"
        )
    return path


@pytest.mark.parametrize(("name", "detected"), CASES, ids=[c[0].rsplit("/", 1)[-1] for c in CASES])
@pytest.mark.parametrize("lean", [True, False], ids=["lean", "click"])
def test_validate_a_pasted_file(
    name: str, detected: str, lean: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _input(name, tmp_path)
    rc = main(["validate", "--from", str(path), "--json"], lean=lean)
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == f"read {detected} from {path}; a partial bundle"
    verdict = assert_valid(json.loads(out))
    assert verdict["status"] != "healthy", "a one-file bundle cannot be healthy by absence"
    assert rc == verdict["exit_code"] in (1, 2)
    assert verdict["source"]["source"]["detected"] == detected


def test_dcgm_failure_is_on_the_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _input("built:dcgm", tmp_path)
    rc = main(["validate", "--from", str(path), "--json", "--only", "gpu.dcgm_diag"])
    verdict = assert_valid(json.loads(capsys.readouterr().out))
    (f,) = verdict["findings"]
    assert rc == 1 and f["status"] == "fail" and f["subject"] == "gpu:0"
    assert "GPU 0 memory test failed." in f["summary"]


def test_unrecognised_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("the node is slow since Tuesday\n")
    rc = main(["validate", "--from", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"dolmen: error: {path}: not a file dolmen reads (text of no kind it knows)"
    assert lines[1].startswith("hint: --from accepts a host tree folder")
    assert len(lines) == 2


def test_cut_lspci_shows_no_absence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``head -200`` of lspci -vvv lists no GPU yet: unknown (cut off), never "no GPU"."""
    text = recording("lspci/gpud__lspci-vvv").read_text()
    path = tmp_path / "lspci.txt"
    path.write_text("".join(text.splitlines(keepends=True)[:200]))
    rc = main(["validate", "--from", str(path), "--json", "--only", "gpu.present"])
    verdict = assert_valid(json.loads(capsys.readouterr().out))
    (f,) = verdict["findings"]
    assert rc == 2 and f["status"] == "unknown"
    assert "no NVIDIA GPU found" not in f["summary"] and "cut off: lspci" in f["summary"]
    assert f["evidence"]["sources"]["lspci"].startswith("cut off: the listing ends inside")


def test_facts_from_a_pasted_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = recording("lspci/gpud__lspci.nn.a100")
    rc = main(["facts", "--from", str(path), "--json"])
    doc = assert_valid(json.loads(capsys.readouterr().out))
    assert rc == 0 and doc["host"]["source"]["kind"] == "lspci"
    gpus = [d for d in doc["pci"]["devices"] if d["class_id"] == "0302"]
    assert len(gpus) == 8
