"""The Helm chart (packaging/helm/dolmen) rendered in Python (tests/packaging/helm.py, the
subset of Helm's language the chart uses), every object held to the official Kubernetes
schema (kubernetes-validate, strict), and the rendered DaemonSet that ships for sites
without helm (packaging/kubernetes/dolmen.yaml) kept equal to the chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.packaging import helm
from tests.packaging.common import PACKAGING, REPO

kubernetes_validate = pytest.importorskip("kubernetes_validate")

VERSIONS = ("1.30.0", "1.33.0")
DOCS_MONITOR = REPO / "docs/node-problem-detector/dolmen-monitor.yaml"


def _kinds(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["kind"]: o for o in objs}


def _pod(objs: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = _kinds(objs)["DaemonSet"]["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "values",
    [{}, {"npd": {"enabled": False}}, {"driverRoot": "/", "nodeSelector": {}}],
    ids=["defaults", "without-npd", "host-driver"],
)
def test_every_rendered_object_passes_the_official_schema(
    values: dict[str, Any], version: str
) -> None:
    objs = helm.objects(helm.render_chart(values))
    assert objs
    for obj in objs:
        kubernetes_validate.validate(obj, version, strict=True)


def test_the_shipped_manifest_is_the_chart_rendered() -> None:
    shipped = (PACKAGING / "kubernetes/dolmen.yaml").read_text()
    assert shipped == helm.HEADER + helm.render_chart(), (
        "packaging/kubernetes/dolmen.yaml is stale: "
        "python tests/packaging/helm.py > packaging/kubernetes/dolmen.yaml"
    )


def test_daemonset_tolerates_gpu_taints_and_mounts_the_driver_root() -> None:
    pod = _pod(helm.objects(helm.render_chart()))
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["driver-root"]["hostPath"]["path"] == "/run/nvidia/driver"
    [agent] = pod["containers"]
    mounts = {m["name"]: m for m in agent["volumeMounts"]}
    assert mounts["driver-root"]["mountPath"] == "/run/nvidia/driver"
    assert mounts["driver-root"]["readOnly"] is True
    assert pod["hostPID"] is True  # NVML's process lists: the node's PIDs
    env = {e["name"]: e.get("value") for e in agent["env"]}
    # the node's / read-only at /host, where dolmen serve --host-root reads its files
    host = mounts["host-root"]
    assert env["DOLMEN_HOST_ROOT"] == host["mountPath"] == "/host"
    assert host["readOnly"] is True and host["mountPropagation"] == "HostToContainer"
    assert vols["host-root"]["hostPath"] == {"path": "/", "type": "Directory"}
    writable = {m["mountPath"] for m in agent["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"/dev", "/var/lib/dolmen", "/tmp"}  # NVML opens /dev/nvidia* rw
    assert "/run/nvidia/driver/usr/bin" in env["PATH"].split(":")
    assert env["DOLMEN_STATE_DIR"] == mounts["state"]["mountPath"]
    assert agent["args"][0] == "serve"
    assert agent["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert agent["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_a_host_installed_driver_is_mounted_from_the_root() -> None:
    pod = _pod(helm.objects(helm.render_chart({"driverRoot": "/"})))
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["driver-root"]["hostPath"]["path"] == "/"


def _monitor(configmap: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(configmap["data"]["dolmen-monitor.json"])
    return data


def test_npd_condition_is_named_for_the_problem() -> None:
    """True = problem (NPD's convention); the chart's monitor is the documented one."""
    cm = _kinds(helm.objects(helm.render_chart()))["ConfigMap"]
    m = _monitor(cm)
    [cond] = m["conditions"]
    assert cond["type"] == "GPUProblem" and "Healthy" not in cond["type"]
    assert [r["condition"] for r in m["rules"]] == ["GPUProblem"]
    assert m["rules"][0]["args"] == ["validate", "--level", "quick", "--npd"]
    documented = yaml.safe_load(DOCS_MONITOR.read_text())
    assert m == _monitor(documented)
    assert "ConfigMap" not in _kinds(helm.objects(helm.render_chart({"npd": {"enabled": False}})))


@pytest.mark.parametrize(
    ("template", "rendered"),
    [
        ("a: {{ .Values.x }}\n", "a: 1\n"),
        ("a: {{ .Values.s | quote }}\n", 'a: "t"\n'),
        ("a: {{ .Values.missing }}\n", "a: \n"),
        ("l:\n  {{- toYaml .Values.m | nindent 2 }}\n", "l:\n  k: v\n"),
        ("{{- if .Values.no }}\nhidden\n{{- end }}\nshown\n", "\nshown\n"),
        ("{{- if .Values.x }}\nkept\n{{- end }}\n", "\nkept\n"),
    ],
)
def test_renderer_subset(template: str, rendered: str) -> None:
    ctx = {"Values": {"x": 1, "s": "t", "m": {"k": "v"}, "no": False}}
    assert helm.render_template(template, ctx) == rendered


@pytest.mark.parametrize(
    "template",
    [
        '{{ include "x" . }}',
        "{{- range .Values.l }}{{- end }}",
        "{{ .Values.x | upper }}",
        "{{- if .Values.x }}never closed",
        "{{- end }}",
        "{{ $x }}",
    ],
)
def test_renderer_refuses_what_it_does_not_do(template: str) -> None:
    with pytest.raises(helm.Unsupported):
        helm.render_template(template, {"Values": {"x": 1, "l": [1]}})


def test_chart_metadata() -> None:
    chart = yaml.safe_load((PACKAGING / "helm/dolmen/Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "dolmen"
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'version = "{chart["appVersion"]}"' in pyproject


def test_templates_are_all_rendered(tmp_path: Path) -> None:
    names = {p.name for p in (PACKAGING / "helm/dolmen/templates").glob("*.yaml")}
    stream = helm.render_chart()
    assert {n for n in names if f"templates/{n}" in stream} == names
