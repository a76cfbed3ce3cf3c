"""The PrometheusRule object of the Prometheus operator (kube-prometheus) made from
packaging/prometheus/dolmen-rules.yml: the rule file's ``groups`` block, unchanged, under
``spec``. Regenerate the shipped copy:

    python -m tests.packaging.promrule > packaging/kubernetes/dolmen-prometheusrule.yaml

The block is indented as text (not re-dumped), so the shipped object keeps the rule file's
comments and folded descriptions; tests/packaging/test_prometheusrule.py checks that it
loads to the same groups and validates it against the operator's CRD schema.
"""

from __future__ import annotations

import sys

from tests.packaging.common import PACKAGING

RULES = PACKAGING / "prometheus/dolmen-rules.yml"
SHIPPED = PACKAGING / "kubernetes/dolmen-prometheusrule.yaml"

HEADER = """\
# dolmen's and dcgm-exporter's alerts as a PrometheusRule of the Prometheus operator
# (kube-prometheus): packaging/prometheus/dolmen-rules.yml's groups under spec, unchanged.
# Apply it where the operator's Prometheus looks for rules (kube-prometheus selects every
# PrometheusRule in every namespace by default):
#   kubectl apply -n monitoring -f packaging/kubernetes/dolmen-prometheusrule.yaml
# Regenerate: python -m tests.packaging.promrule > packaging/kubernetes/dolmen-prometheusrule.yaml
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: dolmen
  labels:
    app.kubernetes.io/name: dolmen
    app.kubernetes.io/component: alerts
    # kube-prometheus's own rules carry these; a Prometheus whose ruleSelector asks for
    # them (older kube-prometheus and prometheus-operator examples) picks dolmen's up too
    prometheus: k8s
    role: alert-rules
spec:
"""


def render(rules_text: str) -> str:
    """The PrometheusRule text of a rule file's text (its ``groups:`` line onwards)."""
    lines = rules_text.splitlines()
    start = lines.index("groups:")  # the rule file's one top-level key
    body = [f"  {line}" if line.strip() else "" for line in lines[start:]]
    return HEADER + "\n".join(body) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(RULES.read_text()))
