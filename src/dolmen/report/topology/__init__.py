"""Views of the host topology (``facts.topology.HostTopology``): the matrix people know
from ``nvidia-smi topo -m`` (``matrix``), the ``dolmen.topo/1`` document (``document``),
and the picture (``layout``, then ``svg`` written by dolmen itself, ``png`` through
matplotlib)."""
