"""The dolmen.bench/1 document: built, dumped, read back, and held to its JSON Schema; the
small validator of document.py agrees with the jsonschema package on valid and broken
documents alike."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dolmen.errors import InputError
from dolmen.report.bench.document import (
    SCHEMA,
    bench_document,
    bench_schema,
    dump_bench,
    load_bench,
    schema_errors,
)
from tests.report.bench.conftest import FIXTURES, NAMES, fixture_doc


def _validator() -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(bench_schema())
    cls.check_schema(bench_schema())
    return cls(bench_schema())


@pytest.mark.parametrize("name", NAMES)
def test_fixtures_are_valid_for_both_validators(name: str) -> None:
    doc = load_bench(FIXTURES / f"{name}.json")
    assert schema_errors(doc) == []
    _validator().validate(doc)


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split("/")
    node: Any = doc
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if value is _DELETE:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


_DELETE = object()
BROKEN = [
    ("device", "tpu", "'tpu' is not one of"),
    ("wall_s", "12", "$.wall_s: a string, not number"),
    ("wall_s", -1, "is below 0"),
    ("results/gemm/gpus/0/tflops", "fast", "tflops: a string, not number"),
    ("results/gemm/gpus/0/tflops", True, "a boolean, not number"),
    ("results/gemm/gpus/0/gpu", 1.5, "gpu: a number, not integer or null"),
    ("results/gemm/gpus/0/samples/clock_mhz", [1, None], "clock_mhz[1]: null, not number"),
    ("results/gemm/gpus/0/dtype", _DELETE, "'dtype' is missing"),
    ("results/memory/peer", [], "peer: an array, not object or null"),
    ("results/collective/runs/0/op", "reduce_scatter", "is not one of"),
    ("results/collective/runs/0/points/0/bytes", 0, "is below 1"),
    ("results/storage/mounts/0/engine", "dd", "is not one of"),
    ("results/storage", "fast", "storage: a string, not object"),
    ("results/zeta", 3, "zeta: a number, not object"),
    ("errors/gemm", {"why": 1}, "errors.gemm: an object, not string"),
    ("results", _DELETE, "'results' is missing"),
]


@pytest.mark.parametrize(("path", "value", "said"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_documents_are_refused_by_both(path: str, value: Any, said: str) -> None:
    doc = _set(fixture_doc("h100x8"), path, value)
    errors = schema_errors(doc)
    assert errors and said in errors[0]
    assert list(_validator().iter_errors(doc)), "jsonschema accepts what document.py refuses"


def test_unknown_results_and_fields_are_kept() -> None:
    """A later workload or field does not break an older reader (schema: readers ignore)."""
    doc = fixture_doc("cpu-smoke")
    doc["results"]["nvbandwidth"] = {"anything": [1, 2]}
    doc["results"]["gemm"]["gpus"][0]["tf32_note"] = "extra"
    doc["future"] = True
    assert schema_errors(doc) == []
    _validator().validate(doc)


def test_document_round_trips(tmp_path: Path) -> None:
    doc = bench_document(
        host="node7",
        started="2026-12-01T16:30:00Z",
        device="cpu",
        wall_s=1.23456,
        results={"storage": fixture_doc("cpu-smoke")["results"]["storage"]},
        errors={"gemm": "torch is not installed: pip install torch"},
        smoke=True,
        version="0.1.0",
    )
    assert doc["schema"] == SCHEMA and doc["wall_s"] == 1.235
    path = tmp_path / "bench.json"
    path.write_bytes(dump_bench(doc))
    assert load_bench(path) == doc
    _validator().validate(doc)


def test_a_non_finite_result_moves_to_errors() -> None:
    body = {"gpus": [{"gpu": None, "subject": "host", "d2d_gbps": math.inf}], "peer": None}
    doc = bench_document(
        host="h", started="s", device="cpu", wall_s=0.0, results={"memory": body}, errors={}
    )
    assert doc["results"] == {}
    assert doc["errors"]["memory"] == (
        "result not recorded: memory.gpus[0].d2d_gbps is not a finite number"
    )
    json.loads(dump_bench(doc))  # valid JSON, no Infinity


JUNK = [
    (b"", "not JSON"),
    (b'{"schema": "dolmen.bench/1", "host": ', "not JSON"),
    (b"\xff\xfe{}", "not JSON"),
    (b"[1, 2]", "not a dolmen.bench/1 document (schema: 'list')"),
    (
        b'{"schema": "dolmen.verdict/1"}',
        "not a dolmen.bench/1 document (schema: 'dolmen.verdict/1')",
    ),
    (b'{"schema": "dolmen.bench/2"}', "(schema: 'dolmen.bench/2')"),
    (
        b'{"schema": "dolmen.bench/1"}',
        "malformed dolmen.bench/1: $: 'host' is missing (and 5 more)",
    ),
    (b'{"schema": "dolmen.bench/1", "wall_s": NaN}', "NaN is not JSON"),
]


@pytest.mark.parametrize(("payload", "said"), JUNK)
def test_junk_files_are_one_clear_input_error(tmp_path: Path, payload: bytes, said: str) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(payload)
    with pytest.raises(InputError) as e:
        load_bench(path)
    assert said in e.value.message and e.value.message.startswith(str(path))


def test_a_fifo_a_folder_and_a_missing_file_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path, said in (
        (fifo, "not a regular file (FIFO)"),
        (tmp_path, "Is a directory"),
        (tmp_path / "nope.json", "no such file"),
    ):
        with pytest.raises(InputError) as e:
            load_bench(path)
        assert said in e.value.message
