"""NCCL for this host's fabric: the NCCL_TOPO_FILE XML (``xml``), the environment with
the reason for each value (``env``), /etc/nccl.conf (``conf``), and the one place the
launchers get it from (``site``: ``containers run``, the local and Slurm jobs backends).
The topology itself is the facts' (``facts.topology.collect_tree``)."""

NCCL_CONF = "etc/nccl.conf"  # read by NCCL at init
TOPO_FILE = "etc/nccl-topo.xml"  # the NCCL_TOPO_FILE nccl env --write leaves
