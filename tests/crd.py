"""A CustomResourceDefinition's schema for jsonschema, made strict: the CRDs vendored with
their provenance (tests/jobs/data, tests/packaging/data) validate what dolmen renders."""

from __future__ import annotations

import copy
import gzip
from pathlib import Path
from typing import Any

import yaml


def crd_schema(crd_gz: Path, version: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` in a gzip-compressed CRD, strict: where it
    lists properties and does not keep unknown fields, an unknown one is an error (the API
    server would prune it silently)."""
    with gzip.open(crd_gz) as f:
        crd = yaml.safe_load(f)
    (found,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema: dict[str, Any] = strict(copy.deepcopy(found["schema"]["openAPIV3Schema"]))
    return schema


def strict(node: Any) -> Any:
    """``additionalProperties: false`` wherever a schema lists its properties and does
    not preserve unknown fields, and Go's patterns in Python's spelling (in place; returns
    ``node``)."""
    if isinstance(node, dict):
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False
        pattern = node.get("pattern")
        if isinstance(pattern, str) and pattern.startswith("^(?i)"):
            # Go's RE2 (the API server) takes a flag group anywhere; Python's re only at
            # the start: prometheus-operator's partial_response_strategy is ^(?i)(abort|warn)?$
            node["pattern"] = "(?i)^" + pattern[len("^(?i)") :]
        for value in node.values():
            strict(value)
    elif isinstance(node, list):
        for value in node:
            strict(value)
    return node
