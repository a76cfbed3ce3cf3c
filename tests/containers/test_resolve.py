"""Resolution of NGC releases against the knowledge base: native, forward compatibility on
data-center GPUs only and within the listed branches, --cuda, unknown drivers refused."""

from __future__ import annotations

import pytest

from dolmen.containers.resolve import FORWARD, NATIVE, gpu_class, resolve
from dolmen.errors import UsageError
from dolmen.kb import load_kb

KB = load_kb()


def _r(framework: str, driver: str | None, dc: bool | None = None, cuda: str | None = None):  # type: ignore[no-untyped-def]
    return resolve(KB.ngc, KB.cuda, framework, driver, datacenter=dc, cuda=cuda)


@pytest.mark.parametrize(
    ("framework", "driver", "dc", "release", "mode"),
    [
        ("pytorch", "590.44.01", None, "25.12", NATIVE),  # exactly CUDA 13.1's minimum
        ("pytorch", "590.44.00", None, "25.09", NATIVE),
        ("pytorch", "570.86.10", None, "25.01", NATIVE),  # 12.8.0 needs 570.26
        ("pytorch", "535.104.05", False, "23.10", NATIVE),  # GeForce: no forward compat
        ("pytorch", "535.104.05", True, "24.05", FORWARD),  # R535 >= 535.86, listed for 24.05
        ("pytorch", "535.54.03", True, None, None),  # R535 but below 535.86: nothing
        ("tritonserver", "570.86.10", None, "24.01", NATIVE),  # 25.03 is 12.8.1: 570.124.06
        ("tritonserver", "570.124.06", None, "25.03", NATIVE),
        ("tritonserver", "525.85.12", True, "25.03", FORWARD),  # 25.08's list is unverified
        ("tritonserver", "530.30.02", False, "23.05", NATIVE),
        ("tensorflow", "520.61.05", None, "22.10", NATIVE),
        ("jax", "580.65.06", None, "25.04", NATIVE),
    ],
)
def test_resolutions(
    framework: str, driver: str, dc: bool | None, release: str | None, mode: str | None
) -> None:
    r = _r(framework, driver, dc)
    if release is None:
        assert r.choice is None and r.refused
        return
    assert r.choice is not None, r.refused
    assert (r.choice.release.release, r.choice.mode) == (release, mode)
    assert r.choice.release.framework == framework
    if mode == FORWARD:
        assert r.native is None or r.native.release.release < release
        assert r.choice.compat_branch is not None


def test_forward_compat_names_the_native_alternative() -> None:
    r = _r("pytorch", "535.104.05", True)
    assert r.native is not None and r.native.release.release == "23.10"
    assert "cuda-compat" in r.choice.why  # type: ignore[union-attr]


def test_unknown_gpu_model_does_not_get_forward_compat() -> None:
    r = _r("pytorch", "535.104.05", None)
    assert r.choice is not None and r.choice.mode == NATIVE
    assert any("GPU model is unknown" in n for n in r.notes)


@pytest.mark.parametrize("driver", [None, "", "banana", "535.x", "9" * 20])
def test_unknown_driver_is_refused_not_guessed(driver: str | None) -> None:
    r = _r("pytorch", driver)
    assert r.choice is None and r.native is None
    assert r.refused is not None and "guess" in r.refused


def test_driver_older_than_everything() -> None:
    r = _r("pytorch", "450.80.02", True)
    assert r.choice is None and r.too_old and "older than every" in (r.refused or "")


def test_cuda_filter() -> None:
    r = _r("pytorch", "590.48.01", cuda="12.4")
    assert r.choice is not None and r.choice.release.release == "24.05"
    assert r.choice.release.cuda == "12.4.1"
    r = _r("pytorch", "590.48.01", cuda="12")
    assert r.choice is not None and r.choice.release.release == "25.06"
    r = _r("pytorch", "590.48.01", cuda="11.8")
    assert r.choice is None and "ships CUDA 11.8" in (r.refused or "")
    with pytest.raises(UsageError):
        _r("pytorch", "590.48.01", cuda="twelve")


def test_unknown_framework() -> None:
    with pytest.raises(UsageError, match="unknown framework"):
        _r("mxnet", "590.48.01")


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("NVIDIA H100 80GB HBM3", "datacenter"),
        ("NVIDIA A100-SXM4-80GB", "datacenter"),
        ("NVIDIA H200", "datacenter"),
        ("NVIDIA GB200", "datacenter"),
        ("Tesla T4", "datacenter"),
        ("Tesla V100-SXM2-32GB", "datacenter"),
        ("NVIDIA L40S", "datacenter"),
        ("NVIDIA A10G", "datacenter"),
        ("NVIDIA GeForce RTX 4090", "consumer"),
        ("NVIDIA RTX A6000", "consumer"),
        ("NVIDIA TITAN V", "consumer"),
        ("Quadro RTX 8000", "consumer"),
        ("NVIDIA Graphics Device", None),
        ("", None),
    ],
)
def test_gpu_class(name: str, cls: str | None) -> None:
    assert gpu_class(name) == cls


def test_every_release_has_a_minimum_driver_and_an_image() -> None:
    for fw in ("pytorch", "tensorflow", "jax", "tritonserver"):
        releases = KB.ngc.of(fw)
        assert releases, fw
        for rel in releases:
            assert rel.image.startswith(f"nvcr.io/nvidia/{fw}:{rel.release}-")
            assert KB.ngc.min_driver(rel, KB.cuda) is not None or rel.driver_branch
