"""gpu.count, gpu.driver.responds, gpu.lost on the real 8x H100 capture and the mock lost GPU."""

from __future__ import annotations

from pathlib import Path

from tests.checks.gpu.trees import H100_BDFS, by_subject, run, statuses, tree, write_pci, xml

NO_DRIVER = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
NO_DRIVER += "Make sure that the latest NVIDIA driver is installed and running.\n"


def test_count_matches_pci_bus(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path), "gpu.count")
    assert (f.status.value, f.subject) == ("pass", "host")
    assert f.evidence["listed"] == 8 and f.evidence["pci_gpus"] == 8


def test_count_against_expected(tmp_path: Path) -> None:
    root = tree(tmp_path)
    [ok] = run(root, "gpu.count", "[validate]\nexpected_gpus = 8\n")
    assert ok.status.value == "pass" and ok.evidence["expected_from"] == "[validate] expected_gpus"
    [short] = run(root, "gpu.count", "[validate]\nexpected_gpus = 9\n")
    assert short.status.value == "fail" and "9 expected" in short.summary
    [more] = run(root, "gpu.count", "[validate]\nexpected_gpus = 4\n")
    assert more.status.value == "warn"


def test_gpu_on_bus_but_not_listed_fails(tmp_path: Path) -> None:
    root = tree(tmp_path)
    write_pci(root, "0000:db:00.0")  # a ninth NVIDIA GPU the driver does not list
    found = by_subject(run(root, "gpu.count"))
    missing = found["gpu:00000000:DB:00.0"]
    assert missing.status.value == "fail" and "not list" in missing.summary
    assert missing.evidence["pci_address"] == "0000:db:00.0"


def test_count_without_anything_to_compare_skips(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, pci={}), "gpu.count")
    assert f.status.value == "skip" and f.evidence["listed"] == 8


def test_driver_answers(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path), "gpu.driver.responds")
    assert f.status.value == "pass" and f.evidence["driver_version"] == "580.105.08"


def test_driver_not_communicating_fails(tmp_path: Path) -> None:
    root = tree(tmp_path, nvsmi="", commands={"nvidia-smi -q -x": (NO_DRIVER, 9)})
    [f] = run(root, "gpu.driver.responds")
    assert f.status.value == "fail" and "couldn't communicate" in f.summary
    assert len(f.evidence["pci_gpus"]) == 8
    # Nothing read through the inventory can pass when it is unreadable.
    for check in ("gpu.count", "gpu.lost", "gpu.ecc.volatile_uncorrectable"):
        [g] = run(root, check)
        assert (g.status.value, g.subject) == ("unknown", "host"), check
    # The PCIe link is the bus's, not the driver's: sysfs still shows it for each GPU.
    links = run(root, "gpu.pcie.link")
    assert len(links) == 8 and all(g.summary.endswith("(sysfs)") for g in links)


def test_unparseable_inventory_is_unknown(tmp_path: Path) -> None:
    truncated = xml()[: len(xml()) // 3]  # a capture cut short (a full disk, a killed run)
    [f] = run(tree(tmp_path, nvsmi=truncated), "gpu.driver.responds")
    assert f.status.value == "unknown" and "malformed" in f.summary


def test_inventory_not_recorded_is_unknown(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / "commands" / "nvidia-smi%20-q%20-x").unlink()
    [f] = run(root, "gpu.driver.responds")
    assert f.status.value == "unknown" and "not recorded" in f.summary


def test_lost_gpu_fails_alone(tmp_path: Path) -> None:
    lost = xml("nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-lost.xml")
    root = tree(tmp_path, nvsmi=lost, pci={})
    found = by_subject(run(root, "gpu.lost"))
    assert found["gpu:00000000:0B:00.0"].status.value == "fail"
    assert "ecc.volatile.uncorrectable" in found["gpu:00000000:0B:00.0"].evidence["fields"]
    assert found["gpu:00000000:0A:00.0"].status.value == "pass"
    # Every other check says unknown for the lost GPU, never pass.
    [temp] = [f for f in run(root, "gpu.temperature") if f.subject == "gpu:00000000:0B:00.0"]
    assert temp.status.value == "unknown" and "lost" in temp.summary


def test_healthy_h100_lost_passes_everywhere(tmp_path: Path) -> None:
    found = run(tree(tmp_path), "gpu.lost")
    assert statuses(found) == {"pass"} and len(found) == len(H100_BDFS)
