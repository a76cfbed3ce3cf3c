"""GPU models: peak figures, and matching nvidia-smi product names to them.

Data: ``kb/data/gpus.toml``. Each row lists explicit patterns for the names
nvidia-smi prints ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla
T4"...). A pattern must match the whole name, so "NVIDIA L40" never claims an
"NVIDIA L40S" and a new board is unmatched (None) rather than mistaken.
"""

from __future__ import annotations

import re
from dataclasses import field

from dolmen.frozen import frozen
from dolmen.frozen import regex as frozen_regex
from dolmen.kb.datafile import Field, KbDataError, read_tables

_NUM = (int, float)


@frozen
class GpuModel:
    """A GPU model's published figures; None where no sourced figure exists.

    Tensor TFLOPS are dense peaks (sparse is 2x). Bandwidths in GB/s.
    """

    id: str
    name: str
    architecture: str
    compute_capability: str | None
    form_factor: str | None
    patterns: tuple[str, ...]
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    fp32_tflops: float | None
    tf32_tflops: float | None
    memory_gb: float | None
    memory_type: str | None
    memory_bandwidth_gbs: float | None
    nvlink_links: int | None
    nvlink_bandwidth_gbs: float | None
    pcie_gen: int | None
    pcie_width: int | None
    tdp_w: float | None
    source: str
    verified: bool
    unverified: tuple[str, ...]
    note: str = ""

    @property
    def half_precision_tflops(self) -> float | None:
        """The dense 16-bit tensor peak: BF16, or FP16 on boards without BF16 (T4)."""
        return self.bf16_tflops if self.bf16_tflops is not None else self.fp16_tflops


def normalize_name(product_name: str) -> str:
    """A product name with surrounding spaces removed and inner runs of spaces collapsed."""
    return " ".join(product_name.split())


# A pattern without these is a plain name: it matches a name equal to it but for case.
_REGEX_CHARS = frozenset(".^$*+?{}[]\\|()")


@frozen
class GpuCatalogue:
    """Every GPU model the knowledge base knows, in data-file order; patterns compile here,
    each when a name first reaches it (most are plain names, which need no compiling:
    compiling all 38 cost 2 ms of every quick run)."""

    models: tuple[GpuModel, ...]
    _patterns: tuple[tuple[str, str | None, GpuModel], ...] = field(
        init=False, repr=False, compare=False
    )
    _regexes: dict[str, re.Pattern[str]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        patterns = tuple(
            (p, p.lower() if p.isascii() and not _REGEX_CHARS & set(p) else None, m)
            for m in self.models
            for p in m.patterns
        )
        object.__setattr__(self, "_patterns", patterns)

    def _fullmatch(self, pattern: str, plain: str | None, name: str) -> bool:
        """``re.fullmatch(pattern, name, re.IGNORECASE)``, without compiling a plain name
        when ``name`` is ASCII (IGNORECASE also folds a few non-ASCII letters onto ASCII
        ones, the Kelvin sign onto k: those names go through the regular expression)."""
        if plain is not None and name.isascii():
            return name.lower() == plain
        regex = self._regexes.get(pattern)
        if regex is None:
            regex = self._regexes[pattern] = compiled(pattern)
        return regex.fullmatch(name) is not None

    def ids(self) -> list[str]:
        """Every model id ("h100-sxm"...)."""
        return [m.id for m in self.models]

    def get(self, model_id: str) -> GpuModel | None:
        """The model with this id, or None."""
        return next((m for m in self.models if m.id == model_id), None)

    def match(self, product_name: str) -> GpuModel | None:
        """The model an nvidia-smi product name denotes, or None when no pattern matches it."""
        name = normalize_name(product_name)
        for pattern, plain, model in self._patterns:
            if self._fullmatch(pattern, plain, name):
                return model
        return None

    def matches(self, product_name: str) -> list[GpuModel]:
        """Every model whose patterns match (tests hold this to at most one)."""
        name = normalize_name(product_name)
        out: list[GpuModel] = []
        for pattern, plain, model in self._patterns:
            if self._fullmatch(pattern, plain, name) and model not in out:
                out.append(model)
        return out

    def find(self, query: str) -> list[GpuModel]:
        """Models for a user's query: an id, a product name, or a piece of a name or id.

        An exact id or product-name match wins; otherwise every model whose id
        or name contains the query (case-insensitive); a blank query finds none.
        """
        q = normalize_name(query)
        exact = self.get(q.lower())
        if exact is not None:
            return [exact]
        matched = self.match(q)
        if matched is not None:
            return [matched]
        low = q.lower()
        if not low:
            return []  # a blank query is in every name: it names no model
        return [m for m in self.models if low in m.id or low in m.name.lower()]


_SCHEMA = {
    "gpu": {
        "id": Field(str, True),
        "name": Field(str, True),
        "architecture": Field(str, True),
        "compute_capability": Field(str),
        "form_factor": Field(str),
        "match": Field(list, True),
        "bf16_tflops": Field(_NUM),
        "fp16_tflops": Field(_NUM),
        "fp8_tflops": Field(_NUM),
        "fp32_tflops": Field(_NUM),
        "tf32_tflops": Field(_NUM),
        "memory_gb": Field(_NUM),
        "memory_type": Field(str),
        "memory_bandwidth_gbs": Field(_NUM),
        "nvlink_links": Field(int),
        "nvlink_bandwidth_gbs": Field(_NUM),
        "pcie_gen": Field(int),
        "pcie_width": Field(int),
        "tdp_w": Field(_NUM),
    }
}


def compiled(model_pattern: str) -> re.Pattern[str]:
    """A model's name pattern, compiled as matched (from dolmen.frozen.regex's table: a
    quick run tries several before it finds an H100)."""
    return frozen_regex.pattern(model_pattern, re.IGNORECASE)


def data_patterns() -> list[tuple[str, int]]:
    """Every pattern ``compiled`` may be asked for: ``python -m dolmen.frozen`` captures them."""
    return [(p, int(re.IGNORECASE)) for m in load_gpus().models for p in m.patterns]


def load_gpus(text: str | None = None) -> GpuCatalogue:
    """Load and validate ``gpus.toml`` (or ``text``, for tests)."""
    rows = read_tables("gpus.toml", _SCHEMA, text=text)["gpu"]
    models: list[GpuModel] = []
    seen: set[str] = set()
    for i, row in enumerate(rows, start=1):
        where = f"[[gpu]] row {i} (id={row['id']!r})"
        if row["id"] in seen:
            raise KbDataError(f"{where}: duplicate id", path="gpus.toml")
        seen.add(row["id"])
        if not row["match"] or not all(isinstance(p, str) and p for p in row["match"]):
            raise KbDataError(f"{where}: 'match' must list patterns", path="gpus.toml")
        model = GpuModel(
            id=row["id"],
            name=row["name"],
            architecture=row["architecture"],
            compute_capability=row.get("compute_capability"),
            form_factor=row.get("form_factor"),
            patterns=tuple(row["match"]),
            bf16_tflops=row.get("bf16_tflops"),
            fp16_tflops=row.get("fp16_tflops"),
            fp8_tflops=row.get("fp8_tflops"),
            fp32_tflops=row.get("fp32_tflops"),
            tf32_tflops=row.get("tf32_tflops"),
            memory_gb=row.get("memory_gb"),
            memory_type=row.get("memory_type"),
            memory_bandwidth_gbs=row.get("memory_bandwidth_gbs"),
            nvlink_links=row.get("nvlink_links"),
            nvlink_bandwidth_gbs=row.get("nvlink_bandwidth_gbs"),
            pcie_gen=row.get("pcie_gen"),
            pcie_width=row.get("pcie_width"),
            tdp_w=row.get("tdp_w"),
            source=row["source"],
            verified=row.get("verified", True),
            unverified=tuple(row.get("unverified", ())),
            note=row.get("note", ""),
        )
        for p in model.patterns:
            try:
                re.compile(p, re.IGNORECASE)
            except re.error as e:
                raise KbDataError(f"{where}: bad pattern {p!r} ({e})", path="gpus.toml") from e
        models.append(model)
    return GpuCatalogue(tuple(models))
