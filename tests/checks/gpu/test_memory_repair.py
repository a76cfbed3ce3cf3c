"""gpu.retired_pages (the real K80 has retired pages) and gpu.row_remap (H100, GB200 mocks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.gpu.trees import by_subject, edit_gpu, run, statuses, tree, xml

K80 = "nvidia-smi-xml/openpai__nvidia_smi_out_of_order.xml"
K80_GPU0 = "gpu:00001580:00:00.0"
INJECTED = "nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-ecc-injected.xml"
_DBE_COUNT = r"(<double_bit_retirement>\s*<retired_count>)1<"


def test_k80_with_two_retired_pages_passes(tmp_path: Path) -> None:
    found = by_subject(run(tree(tmp_path, nvsmi=xml(K80), pci={}), "gpu.retired_pages"))
    f = found[K80_GPU0]
    assert f.status.value == "pass"
    assert (f.evidence["sbe"], f.evidence["dbe"], f.evidence["pending"]) == (1, 1, False)


@pytest.mark.parametrize(("dbe", "status"), [(10, "warn"), (61, "warn"), (62, "fail")])
def test_retired_page_limits(tmp_path: Path, dbe: int, status: str) -> None:
    # One single-bit page plus ``dbe`` double-bit pages: 63 reaches DCGM's limit.
    bad = edit_gpu(xml(K80), 0, _DBE_COUNT, rf"\g<1>{dbe}<")
    f = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.retired_pages"))[K80_GPU0]
    assert f.status.value == status and f.evidence["total"] == dbe + 1


def test_pending_retirement_fails_with_a_reset(tmp_path: Path) -> None:
    bad = edit_gpu(xml(K80), 0, r"<pending_blacklist>No<", "<pending_blacklist>Yes<")
    f = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.retired_pages"))[K80_GPU0]
    assert f.status.value == "fail" and "pending" in f.summary
    assert "nvidia-smi -r -i 00001580:00:00.0" in (f.remedy or "")


def test_retired_pages_not_supported_on_hopper(tmp_path: Path) -> None:
    found = run(tree(tmp_path, pci={}), "gpu.retired_pages")
    assert statuses(found) == {"skip"}
    assert found[0].evidence["reason"] == "not supported"


def test_retired_pages_unreadable_is_unknown(tmp_path: Path) -> None:
    bad = edit_gpu(xml(K80), 0, _DBE_COUNT, r"\g<1>Unknown Error<")
    bad = edit_gpu(
        bad, 0, r"(<multiple_single_bit_retirement>\s*<retired_count>)1<", r"\g<1>Unknown Error<"
    )
    f = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.retired_pages"))[K80_GPU0]
    assert f.status.value == "unknown"


def test_row_remap_healthy_h100(tmp_path: Path) -> None:
    found = run(tree(tmp_path, pci={}), "gpu.row_remap")
    assert statuses(found) == {"pass"}
    assert found[0].evidence["histogram"]["max"] == 2560


def test_row_remap_pending_fails_with_reset(tmp_path: Path) -> None:
    bad = edit_gpu(xml(), 4, r"<remapped_row_pending>No<", "<remapped_row_pending>Yes<")
    f = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.row_remap"))["gpu:00000000:97:00.0"]
    assert f.status.value == "fail" and "pending" in f.summary
    assert "nvidia-smi -r -i 00000000:97:00.0" in (f.remedy or "")


def test_row_remap_failure_fails_with_service(tmp_path: Path) -> None:
    bad = edit_gpu(xml(), 0, r"<remapped_row_failure>No<", "<remapped_row_failure>Yes<")
    f = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.row_remap"))["gpu:00000000:53:00.0"]
    assert f.status.value == "fail" and "service" in (f.remedy or "")


def test_row_remap_failure_in_the_injected_mock(tmp_path: Path) -> None:
    found = by_subject(run(tree(tmp_path, nvsmi=xml(INJECTED), pci={}), "gpu.row_remap"))
    assert found["gpu:00000000:0A:00.0"].status.value == "fail"
    assert found["gpu:00000000:0A:00.0"].evidence["uncorrectable"] == 1
    assert found["gpu:00000000:0B:00.0"].status.value == "pass"


def test_banks_without_spare_rows_warn(tmp_path: Path) -> None:
    bad = edit_gpu(
        xml(), 2, r"<row_remapper_histogram_none>0 bank", "<row_remapper_histogram_none>3 bank"
    )
    f = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.row_remap"))["gpu:00000000:75:00.0"]
    assert f.status.value == "warn" and "3 memory banks" in f.summary


def test_row_remap_not_supported_before_ampere(tmp_path: Path) -> None:
    found = run(tree(tmp_path, nvsmi=xml(K80), pci={}), "gpu.row_remap")
    assert statuses(found) == {"skip"}
