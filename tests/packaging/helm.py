"""Render the dolmen chart without helm: the subset of Helm's template language the chart
uses, and nothing more (anything else raises, so a template cannot silently outgrow it).

Supported: ``{{ .Values.a.b }}``, ``.Release.Name``, ``.Release.Namespace``, ``.Chart.*``
(from Chart.yaml), the pipeline functions ``quote``, ``toYaml``, ``nindent N``, ``indent N``,
``{{- if PATH }}`` ... ``{{- end }}`` (nested, truthiness as Go's: empty and zero are
false), and ``{{-`` / ``-}}`` whitespace trimming. ``toYaml`` sorts keys and drops the
trailing newline, as Helm's does.

``python tests/packaging/helm.py`` prints the chart rendered with its defaults, release
``dolmen`` in namespace ``dolmen``: that is packaging/kubernetes/dolmen.yaml.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[2] / "packaging/helm/dolmen"
ACTION = re.compile(r"(\s*)\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.S)


class Unsupported(ValueError):
    """A template construct outside the subset."""


def _lookup(path: str, ctx: Mapping[str, Any]) -> Any:
    if not path.startswith("."):
        raise Unsupported(f"not a value path: {path!r}")
    node: Any = ctx
    for part in path[1:].split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None  # Helm renders a missing value as empty
        node = node[part]
    return node


def _to_yaml(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=True).rstrip("\n")


def _scalar(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _pipeline(expr: str, ctx: Mapping[str, Any]) -> str:
    stages = [s.strip() for s in expr.split("|")]
    words = stages[0].split()
    if len(words) == 2 and words[0] in ("toYaml", "quote"):  # `toYaml .X` is `.X | toYaml`
        stages[:1] = [words[1], words[0]]
    first = stages[0]
    value: Any = first[1:-1] if first.startswith('"') else _lookup(first, ctx)
    text: str | None = None
    for stage in stages[1:]:
        name, *args = stage.split()
        if name == "quote":
            text = '"' + _scalar(value if text is None else text).replace('"', '\\"') + '"'
        elif name == "toYaml":
            text = _to_yaml(value)
        elif name in ("nindent", "indent") and len(args) == 1 and args[0].isdigit():
            pad = " " * int(args[0])
            body = "\n".join(pad + line for line in (text or _scalar(value)).split("\n"))
            text = "\n" + body if name == "nindent" else body
        else:
            raise Unsupported(f"function {stage!r}")
    return _scalar(value) if text is None else text


def render_template(source: str, ctx: Mapping[str, Any]) -> str:
    """One template file's text, rendered."""
    out: list[str] = []
    stack: list[bool] = []  # the truth of each open if
    pos = 0
    for m in ACTION.finditer(source):
        lead, ltrim, expr, rtrim = m.groups()
        literal = source[pos : m.start()] + ("" if ltrim else lead)
        pos = m.end()
        if rtrim:
            rest = source[pos:]
            pos += len(rest) - len(rest.lstrip())
        if all(stack):
            out.append(literal)
        if expr.startswith("if "):
            stack.append(all(stack) and bool(_lookup(expr[3:].strip(), ctx)))
        elif expr == "end":
            if not stack:
                raise Unsupported("end without if")
            stack.pop()
        elif expr.split()[0] in ("else", "range", "with", "define", "include", "template"):
            raise Unsupported(f"action {expr.split()[0]!r}")
        elif all(stack):
            out.append(_pipeline(expr, ctx))
    if stack:
        raise Unsupported("if without end")
    if all(stack):
        out.append(source[pos:])
    return "".join(out)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), dict) else v
    return out


def render_chart(
    values: Mapping[str, Any] | None = None, *, name: str = "dolmen", namespace: str = "dolmen"
) -> str:
    """Every template of the chart, as one multi-document YAML stream (helm template's)."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    ctx = {
        "Values": _merge(defaults, values or {}),
        "Release": {"Name": name, "Namespace": namespace},
        "Chart": {
            "Name": chart["name"],
            "Version": chart["version"],
            "AppVersion": chart["appVersion"],
        },
    }
    docs = []
    for path in sorted((CHART / "templates").glob("*.yaml")):
        text = render_template(path.read_text(), ctx).strip("\n")
        if text.strip():
            docs.append(f"---\n# Source: dolmen/templates/{path.name}\n{text}\n")
    return "".join(docs)


def objects(stream: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(stream) if d]


HEADER = (
    "# dolmen's agent DaemonSet, the node-problem-detector monitor and the agents' Service:\n"
    "# the Helm chart packaging/helm/dolmen rendered with its default values (release dolmen,\n"
    "# namespace dolmen). Regenerate: python tests/packaging/helm.py > packaging/kubernetes/dolmen.yaml\n"
)

if __name__ == "__main__":
    sys.stdout.write(HEADER + render_chart())
