"""``dolmen.containers``: NGC release resolution, GPU container commands, launches.

- ``resolve.py``: the newest NGC release of a framework this driver runs (pure, KB).
- ``hostinfo.py``: the driver and GPU class a resolution needs, from a host's facts.
- ``site.py``: what a launch depends on (runtimes, CDI devices, RDMA, limits), read once.
- ``plan.py``, ``oci.py``, ``others.py``: the command per runtime (pure).
- ``launch.py``: run it in the foreground, audited (intent, then outcome).

The toolkit posture (runtime configuration, CDI specs against the host) is a set of
checks of ``dolmen validate``: ``checks/stack/containers*.py``.
"""
