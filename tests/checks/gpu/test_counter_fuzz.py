"""Property (issue 9 case 8): random counter values (negative, huge, N/A, empty, junk,
floats, other scripts' digits) put into the real qx-h100 capture or answered by a fake
NVML: no check passes a GPU on a counter that is not a non-negative integer."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dolmen.checks.context import Context
from dolmen.checks.runner import run_one
from dolmen.facts.gpu import GpuFacts
from dolmen.host.gpu.nvml import read_nvml
from dolmen.host.gpu.nvsmi import parse_nvsmi_xml
from dolmen.host.gpu.nvsmi_values import sentinel
from dolmen.host.tree import TreeHost
from tests.checks.gpu.test_bad_counters import FIELDS, GPU0, OddNvml
from tests.checks.gpu.trees import REGISTRY, edit_gpu, tree, xml

U64 = (1 << 64) - 1
# Blank and N/A are a documented skip for SRAM locations (the GB200 mocks print them with
# ECC on): for those fields only junk counts.
BLANK_OK = {"volatile sram_uncorrectable_secded", "histogram none", "replay_counter"}
_blank = st.sampled_from(["", "N/A", "[N/A]", "Not Supported", "Unknown Error", "GPU is lost"])
_junk = st.one_of(
    st.integers(max_value=-1).map(str),
    st.integers(min_value=U64 + 1, max_value=1 << 80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["+5", "5_0", "0x10", "1e3", "٣", "²", "5 5", "-0", "0.0"]),
    # Whitespace alone is a blank value (nvidia-smi's empty element), not junk: blank is a
    # documented skip for the BLANK_OK fields, so it is drawn from _blank, never from here.
    st.text(min_size=1, max_size=8).filter(
        lambda t: (
            t.strip() != ""
            and not (t.strip().isascii() and t.strip().isdigit())
            # nvidia-smi's own words in any case ("n/a", "[Not Supported]") are _blank's, not junk
            and sentinel(t) is None
        )
    ),
)
TRIALS = {"xml": 0, "nvml": 0}


def _no_xml_special(t: str) -> str:
    return t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_ROOT = Path(tempfile.mkdtemp(prefix="dolmen-fuzz-"))
tree(_ROOT)  # PCI functions, uptime: what gpu.pcie.aer reads besides the GPU


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(sorted(FIELDS)), data=st.data())
def test_no_check_passes_on_a_bad_counter(field: str, data: st.DataObject) -> None:
    values = _junk if field in BLANK_OK else st.one_of(_junk, _blank)
    value = data.draw(
        values.filter(lambda t: "\x00" not in t and not re.search(r"[\ud800-\udfff]", t))
        # A blank where blank is allowed ("\n": not supported by this driver) is not junk.
        .filter(lambda t: field not in BLANK_OK or bool(t.strip()))
    )
    find, check = FIELDS[field]
    text = edit_gpu(xml(), 0, find, lambda m: m.group(1) + _no_xml_special(value))  # type: ignore[arg-type]
    inv = parse_nvsmi_xml(text)
    if inv.error:  # a value XML itself refuses (control characters): nothing was judged
        return
    ctx = Context(TreeHost(_ROOT))
    ctx.store._done["gpu"] = GpuFacts(present=True, inventory=inv, gpus=inv.gpus)
    found = {f.subject: f for f in run_one(ctx, REGISTRY[check])}
    TRIALS["xml"] += 1
    assert found[GPU0].status.value != "pass", (field, value, found[GPU0].summary)


_bad_nvml = st.one_of(
    st.integers(max_value=-1),
    st.integers(min_value=U64 + 1),
    st.floats(),
    st.booleans(),
    st.text(max_size=5),
    st.none(),
)


@settings(max_examples=400, deadline=None)
@given(where=st.sampled_from(["ecc", "rows"]), value=_bad_nvml)
def test_no_check_passes_on_a_bad_nvml_counter(where: str, value: Any) -> None:
    lib = OddNvml(**{where: value})
    check = "gpu.ecc.volatile_uncorrectable" if where == "ecc" else "gpu.row_remap"
    inv = read_nvml(lib)
    assert not isinstance(inv, str)
    host = SimpleNamespace(kind="live", hostname="n", describe=lambda: "fake")
    ctx = Context(host)  # type: ignore[arg-type]
    ctx.store._done["gpu"] = GpuFacts(present=True, inventory=inv, gpus=inv.gpus)
    TRIALS["nvml"] += 1
    assert run_one(ctx, REGISTRY[check])[0].status.value != "pass", (where, value)
