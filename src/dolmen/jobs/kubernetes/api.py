"""Reaching the Kubernetes API: the kubeconfig, the optional client, its errors in one line.

The official client (``pip install 'dolmen[kubernetes]'``) is imported only when a
command needs the API, and typed loosely so that dolmen type-checks the same with
or without it installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dolmen.errors import DolmenError, ServiceUnavailable, UsageError
from dolmen.fsutil import not_a_file
from dolmen.jobs.quota import QuotaExceeded


def connect(kubeconfig: str | None) -> Any:
    """An ApiClient; ServiceUnavailable when there is no kubeconfig or no client."""
    config_file = find_kubeconfig(kubeconfig)
    in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    if config_file is None and not in_cluster:
        raise ServiceUnavailable(
            "no kubeconfig: cannot reach a Kubernetes API server",
            hint="pass --kubeconfig FILE or set KUBECONFIG; `dolmen jobs plan` works without",
        )
    try:
        client, config = module("kubernetes.client"), module("kubernetes.config")
    except ImportError:
        raise ServiceUnavailable(
            "the kubernetes client is not installed",
            hint="pip install 'dolmen[kubernetes]'",
        ) from None
    try:
        if config_file is not None:
            config.load_kube_config(config_file=str(config_file))
        else:
            config.load_incluster_config()
    except Exception as e:  # the client raises ConfigException and plain errors alike
        raise ServiceUnavailable(f"kubeconfig {config_file} is not usable: {e}") from None
    return client.ApiClient()


def find_kubeconfig(explicit: str | None = None) -> Path | None:
    """The kubeconfig to use: ``explicit``, the first existing file of $KUBECONFIG, or
    ~/.kube/config; None when there is none."""
    candidates: list[str] = []
    if explicit:
        candidates.append(explicit)
    else:
        candidates += [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
        candidates.append(str(Path.home() / ".kube" / "config"))
    for c in candidates:
        path = Path(c).expanduser()
        if path.is_file():
            return path
    if explicit:
        raise UsageError(f"{explicit}: {not_a_file(Path(explicit).expanduser(), 'kubeconfig')}")
    return None


def module(name: str) -> Any:
    """A module of the official client (module docstring)."""
    import importlib

    return importlib.import_module(name)


@contextmanager
def api_errors() -> Iterator[None]:
    """Turn the client's errors into one line: quota refusals, refusals, dead API server."""
    try:
        yield
    except DolmenError:
        raise
    except Exception as exc:
        status = getattr(exc, "status", None)
        reason = getattr(exc, "reason", None) or str(exc).splitlines()[0]
        body = str(getattr(exc, "body", "") or "")
        if status == 403 and "exceeded quota" in body:
            raise QuotaExceeded(f"kubernetes refused the job: {_message(body)}") from None
        if status == 404:
            raise UsageError(f"kubernetes: not found: {_message(body) or reason}") from None
        if isinstance(status, int) and 400 <= status < 500:
            raise UsageError(f"kubernetes refused: {status} {_message(body) or reason}") from None
        raise ServiceUnavailable(f"kubernetes API server: {reason}") from None


def _message(body: str) -> str:
    import json

    try:
        return str(json.loads(body).get("message", ""))
    except (ValueError, AttributeError):
        return body[:200]
