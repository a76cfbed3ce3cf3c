"""``dolmen serve``: the node agent (docs/serve.md).

An ASGI server (Starlette under uvicorn) with a read API, ``/metrics``, health and
readiness, token auth, and the warm agent that runs the quick tier every few minutes so
that ``dolmen validate --level quick`` can ask it over a unix socket instead of paying a
cold start. This package file stays empty: the lean validate path imports
``dolmen.serve.client`` and must not pay for Starlette.
"""
