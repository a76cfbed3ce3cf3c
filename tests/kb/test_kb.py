"""The knowledge base: every data file loads and validates, every row names its source,
driver versions compare numerically, the compatibility rules hold, nvidia-smi names map to
exactly one GPU model, and a broken data file fails with one line naming file and row."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from dolmen.compat import tomllib
from dolmen.kb import KbDataError, KnowledgeBase, load_kb
from dolmen.kb.cuda import CompatMode, DriverVersion, load_cuda, parse_toolkit
from dolmen.kb.gpus import load_gpus, normalize_name
from dolmen.kb.ngc import load_ngc
from tests.conftest import recordings_in

DATA = resources.files("dolmen.kb").joinpath("data")


def _data_files() -> list[str]:
    return sorted(p.name for p in DATA.iterdir() if p.name.endswith(".toml"))


# --- loading ---------------------------------------------------------------------------


def test_load_kb_has_every_table_and_is_cached() -> None:
    kb = load_kb()
    assert isinstance(kb, KnowledgeBase)
    assert kb.cuda.releases and kb.cuda.families
    assert kb.gpus.models and kb.ngc.releases
    assert kb.xids is not None and kb.builds.libraries
    assert kb.hcas.get("MT4129") is not None and kb.hcas.get("4129") == kb.hcas.get("MT4129")
    assert load_kb() is kb


def test_every_data_file_is_a_known_table() -> None:
    # A new data file must be wired into load_kb, or it is dead data.
    assert _data_files() == [
        "builds.toml",
        "cuda.toml",
        "gpus.toml",
        "hcas.toml",
        "ngc.toml",
        "xids.toml",
    ]


@pytest.mark.parametrize(
    "name", ["builds.toml", "cuda.toml", "gpus.toml", "hcas.toml", "ngc.toml", "xids.toml"]
)
def test_every_row_has_a_source(name: str) -> None:
    doc = tomllib.loads(DATA.joinpath(name).read_text("utf-8"))
    rows = [row for table in doc.values() if isinstance(table, list) for row in table]
    assert rows, f"{name} has no rows"
    for row in rows:
        assert isinstance(row.get("source"), str) and row["source"].strip(), row
        if row.get("unverified"):
            assert row.get("verified") is False, row


def test_each_loader_loads_again_alike() -> None:
    """A second load (the server and the checks call the loaders more than once) gives the
    same data. How fast it is belongs to bench/: a 100 ms budget asserted here failed on a
    loaded machine without anything being wrong."""
    for loader in (load_cuda, load_gpus, load_ngc):
        assert loader() == loader()


# --- driver versions ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("535.54.03", "535.104.05"),  # numeric, not lexical: 54 < 104
        ("580.95.05", "580.105.08"),
        ("470.74", "470.82.01"),
        ("384.111", "450.80.02"),
        ("455.23", "455.32"),
        ("580", "580.65.06"),  # a bare branch is below every release of it
        ("570.26", "570.124.06"),
    ],
)
def test_driver_versions_compare_numerically(low: str, high: str) -> None:
    a, b = DriverVersion.parse(low), DriverVersion.parse(high)
    assert a is not None and b is not None
    assert a < b and b > a and a != b
    assert str(a) == low


@pytest.mark.parametrize(
    "text", ["", "abc", "580.", ".580", "580.95.05-1", "5.8", "580.1.2.3.4", "\x00\xff", "58o.1"]
)
def test_malformed_driver_versions_are_none(text: str) -> None:
    assert DriverVersion.parse(text) is None


def test_driver_version_tolerates_surrounding_space() -> None:
    v = DriverVersion.parse(" 550.135\n")
    assert v is not None and v.parts == (550, 135) and v.branch == 550


# --- CUDA table and compatibility ------------------------------------------------------


@pytest.mark.parametrize(
    ("toolkit", "driver"),
    [  # rows of the CUDA 13.1 release notes' table (kb-sources.md), grouped rows included
        ("13.1", "590.44.01"),
        ("13.0.2", "580.95.05"),
        ("13.0", "580.65.06"),
        ("12.8", "570.26"),
        ("12.6.1", "560.35.03"),
        ("12.6.2", "560.35.03"),
        ("12.2", "535.54.03"),
        ("12.1.1", "530.30.02"),
        ("12.0", "525.60.13"),
        ("11.8", "520.61.05"),
        ("11.5.2", "495.29.05"),
        ("11.2.1", "460.32.03"),
        ("11.1.1", "455.32"),
        ("11.0.1", "450.36.06"),
    ],
)
def test_min_driver_matches_the_release_notes(toolkit: str, driver: str) -> None:
    assert str(load_kb().cuda.min_driver(toolkit)) == driver


def test_release_lookup_rules() -> None:
    cuda = load_kb().cuda
    assert cuda.release("12.4") is cuda.release("12.4.0")
    row = cuda.release("12.4.2")  # an update the table does not list: the latest below it
    assert row is not None and row.versions == ("12.4.1",)
    ga = cuda.release("11.0")  # GA, not the release candidate
    assert ga is not None and ga.label == "11.0.2 GA"
    assert cuda.release("12.7") is None
    assert cuda.release("twelve") is None
    assert cuda.min_driver("") is None


def test_table_size_and_families() -> None:
    cuda = load_kb().cuda
    assert len(cuda.versions()) == 49
    assert cuda.minor_versions()[0] == "13.1" and cuda.minor_versions()[-1] == "11.0"
    assert str(cuda.family_min_driver("13.0")) == "580"
    assert str(cuda.family_min_driver("12.4")) == "525.60.13"
    assert str(cuda.family_min_driver(11)) == "450.80.02"
    assert cuda.family_min_driver("10.2") is None


@pytest.mark.parametrize(
    ("toolkit", "driver", "ok", "mode"),
    [
        ("12.4", "550.54.15", True, CompatMode.NATIVE),
        ("12.4", "580.105.08", True, CompatMode.NATIVE),  # backward compatibility
        ("12.4", "535.54.03", True, CompatMode.MINOR_VERSION),
        ("12.4", "525.60.13", True, CompatMode.MINOR_VERSION),
        ("12.4", "525.60.12", False, CompatMode.TOO_OLD),
        ("12.4", "470.74", False, CompatMode.TOO_OLD),
        ("13.0", "575.57.08", False, CompatMode.TOO_OLD),
        ("13.1", "580.95.05", True, CompatMode.MINOR_VERSION),
        ("13.2", "580.105.08", True, CompatMode.MINOR_VERSION),  # newer than the table
        ("11.8", "384.111", False, CompatMode.TOO_OLD),
        ("11.0.2", "450.51.05", True, CompatMode.NATIVE),  # below the 11.x family minimum
        ("10.2", "440.33.01", False, CompatMode.UNKNOWN),
        ("12.4", "not-a-driver", False, CompatMode.UNKNOWN),
        ("twelve", "550.54.15", False, CompatMode.UNKNOWN),
    ],
)
def test_compatibility(toolkit: str, driver: str, ok: bool, mode: CompatMode) -> None:
    cuda = load_kb().cuda
    verdict = cuda.check(toolkit, driver)
    assert (verdict.ok, verdict.mode) == (ok, mode), verdict.why
    assert cuda.compatible(toolkit, driver) == (ok, verdict.why)
    assert verdict.why


def test_compat_reasons_name_the_figures() -> None:
    cuda = load_kb().cuda
    _, why = cuda.compatible("12.4", "535.54.03")
    assert "550.54.14" in why and "525.60.13" in why and "minor-version" in why
    _, why = cuda.compatible("12.4", "470.74")
    assert "525.60.13" in why and "forward compatibility" in why


def test_parse_toolkit() -> None:
    assert parse_toolkit("12.4") == (12, 4, None)
    assert parse_toolkit(" 12.4.1 ") == (12, 4, 1)
    assert parse_toolkit("12") is None
    assert parse_toolkit("V12.4.131") is None


# --- GPU models -------------------------------------------------------------------------

NAMES = [  # product names as nvidia-smi prints them (recordings and vendor docs)
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA H200", "h200-sxm"),
    ("NVIDIA H200 NVL", "h200-nvl"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
    ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA GB200", "gb200"),
    ("NVIDIA GB300", "gb300"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA L40", "l40"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA A10", "a10"),
    ("NVIDIA A10G", "a10g"),
    ("Tesla T4", "t4"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "rtx-pro-6000-blackwell-maxq"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell-server"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA GeForce RTX 5090", "rtx-5090"),
    ("NVIDIA GB10", "gb10"),
    ("  nvidia   h100 80gb hbm3 ", "h100-sxm"),  # case and spacing do not matter
]


@pytest.mark.parametrize(("name", "model_id"), NAMES)
def test_product_names_match_one_model(name: str, model_id: str) -> None:
    gpus = load_kb().gpus
    assert [m.id for m in gpus.matches(name)] == [model_id]
    model = gpus.match(name)
    assert model is not None and model.id == model_id


@pytest.mark.parametrize(
    "name", ["Tesla K80", "NVIDIA GeForce RTX 3090", "NVIDIA H100", "NVIDIA L40SX", "", "\x00\xff"]
)
def test_unknown_products_match_nothing(name: str) -> None:
    assert load_kb().gpus.match(name) is None


def _by_regex(name: str) -> list[str]:
    """What the catalogue matched before plain names skipped the regular expression."""
    gpus = load_kb().gpus
    name = normalize_name(name)
    return [
        m.id for m in gpus.models if any(re.fullmatch(p, name, re.IGNORECASE) for p in m.patterns)
    ]


def test_matching_is_the_regular_expressions_on_every_spelling() -> None:
    """Plain names compare lowered instead of compiling: the same answers as fullmatch with
    IGNORECASE, on every pattern's own text, upper and lower case, the non-ASCII letters
    IGNORECASE folds onto ASCII (Kelvin sign, long s, dotless i) and near misses."""
    gpus = load_kb().gpus
    names = [n for m in gpus.models for n in m.patterns]
    names += [f(n) for n in names for f in (str.upper, str.lower, lambda t: t + "X")]
    names += [
        n.replace(a, b)
        for n in names
        for a, b in (("K", "\u212a"), ("S", "\u017f"), ("I", "\u0131"))
    ]
    names += ["NVIDIA A100-SXM-80GB", "nvidia a100-sxm4-80gb", "NVIDIA A100-SXM44-80GB"]
    for name in names:
        assert [m.id for m in gpus.matches(name)] == _by_regex(name), name
        found = gpus.match(name)
        assert (found.id if found else None) == next(iter(_by_regex(name)), None), name


def _recorded_names() -> list[str]:
    names: set[str] = set()
    for path in recordings_in("nvidia-smi-xml", "*.xml") + recordings_in(
        "nvidia-smi-xml-mock", "*.xml"
    ):
        names.update(re.findall(r"<product_name>([^<]*)</product_name>", path.read_text()))
    return sorted(names)


def test_recorded_names_never_match_twice() -> None:
    """Every product name in the real nvidia-smi recordings maps to at most one model, and
    the data-centre boards among them map to their row."""
    names = _recorded_names()
    if not names:
        pytest.skip("recordings not available")
    gpus = load_kb().gpus
    for name in names:
        assert len(gpus.matches(name)) <= 1, name
    matched = {normalize_name(n): gpus.match(n) for n in names}
    expected = {"NVIDIA GB200": "gb200", "NVIDIA H100 80GB HBM3": "h100-sxm", "Tesla T4": "t4"}
    for name, model_id in expected.items():
        model = matched.get(name)
        assert model is not None and model.id == model_id


def test_gpu_figures_are_consistent() -> None:
    for m in load_kb().gpus.models:
        assert m.memory_gb is None or m.memory_gb > 0, m.id
        if m.bf16_tflops is not None and m.fp8_tflops is not None:
            assert m.fp8_tflops >= m.bf16_tflops, m.id  # FP8 is never slower than BF16
        if m.fp32_tflops is not None and m.half_precision_tflops is not None:
            assert m.half_precision_tflops > m.fp32_tflops, m.id
        assert not (m.verified and m.unverified), m.id


def test_find_by_id_name_or_part() -> None:
    gpus = load_kb().gpus
    assert [m.id for m in gpus.find("t4")] == ["t4"]
    assert [m.id for m in gpus.find("Tesla T4")] == ["t4"]
    assert {m.id for m in gpus.find("h100")} == {"h100-sxm", "h100-pcie", "h100-nvl"}
    assert gpus.find("no such gpu") == []
    assert gpus.find("") == [] and gpus.find("  ") == []  # a blank is in every name


def test_t4_has_fp16_but_no_bf16() -> None:
    t4 = load_kb().gpus.get("t4")
    assert t4 is not None and t4.bf16_tflops is None
    assert t4.half_precision_tflops == t4.fp16_tflops == 65


# --- NGC -------------------------------------------------------------------------------


def test_ngc_lookup_and_min_driver() -> None:
    kb = load_kb()
    r = kb.ngc.get("nvcr.io/nvidia/pytorch:24.05-py3")
    assert r is not None and r is kb.ngc.get("24.05")
    assert r.cuda == "12.4.1" and r.verified and r.image.endswith(":24.05-py3")
    r25 = kb.ngc.get("25.01")
    assert r25 is not None and str(kb.ngc.min_driver(r25, kb.cuda)) == "570.26"
    assert kb.ngc.get("99.99") is None
    assert kb.ngc.names()[0] == "25.12"


def test_every_ngc_toolkit_is_in_the_cuda_table() -> None:
    kb = load_kb()
    for r in kb.ngc.releases:
        if r.cuda is not None:
            assert kb.ngc.min_driver(r, kb.cuda) is not None, r.release


def test_recalled_ngc_cells_are_marked() -> None:
    r = load_kb().ngc.get("24.07")
    assert r is not None and not r.verified and "cudnn" in r.unverified


# --- validation of broken data files -----------------------------------------------------

GOOD_ROW = """
[[toolkit]]
versions = ["12.4.0"]
label = "12.4 GA"
min_driver = "550.54.14"
source = "release notes"
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            GOOD_ROW.replace('source = "release notes"', ""),
            "row 1 (versions=['12.4.0']): has no source",
        ),
        (GOOD_ROW.replace('"release notes"', '"  "'), "empty source"),
        (GOOD_ROW + 'min_drvier = "1"\n', "unknown key 'min_drvier'; valid keys:"),
        (GOOD_ROW.replace('"550.54.14"', "550"), "'min_driver' has the wrong type"),
        (GOOD_ROW.replace('"550.54.14"', '"latest"'), "'latest' is not a driver version"),
        (GOOD_ROW.replace('"12.4.0"', '"12.4"'), "is not X.Y.Z"),
        (GOOD_ROW + "verified = true\nunverified = ['label']\n", "does not say verified = false"),
        (GOOD_ROW + "unverified = ['nope']\nverified = false\n", "must list keys of this row"),
        (GOOD_ROW + "verified = 1\n", "'verified' has the wrong type"),
        ("[[toolchain]]\nsource = 'x'\n", "unknown table 'toolchain'"),
        ("toolkit = 3\n", "must be an array of tables"),
        ("[[toolkit]\n", "not valid TOML"),
        ("\x00\xff", "not valid TOML"),
    ],
)
def test_broken_cuda_file_names_file_and_row(text: str, message: str) -> None:
    with pytest.raises(KbDataError) as err:
        load_cuda(text)
    assert str(err.value).startswith("cuda.toml: ")
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_broken_gpu_rows() -> None:
    row = 'id = "x"\nname = "X"\narchitecture = "A"\nsource = "s"\n'
    with pytest.raises(KbDataError, match=r"gpus.toml: \[\[gpu\]\] row 1 .*bad pattern"):
        load_gpus(f"[[gpu]]\n{row}match = ['(']\n")
    with pytest.raises(KbDataError, match="duplicate id"):
        load_gpus(f"[[gpu]]\n{row}match = ['X']\n[[gpu]]\n{row}match = ['Y']\n")
    with pytest.raises(KbDataError, match="'match' must list patterns"):
        load_gpus(f"[[gpu]]\n{row}match = []\n")
    with pytest.raises(KbDataError, match="must not be a boolean"):
        load_gpus(f"[[gpu]]\n{row}match = ['X']\ntdp_w = true\n")


def test_broken_ngc_release_name() -> None:
    with pytest.raises(KbDataError, match=r"'24\.5' is not YY\.MM"):
        load_ngc("[[release]]\nreleases = ['24.5']\nsource = 's'\n")
