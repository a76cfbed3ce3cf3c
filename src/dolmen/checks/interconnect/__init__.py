"""``interconnect.*`` checks: NVLink, InfiniBand/RoCE ports, and the cluster-network NICs."""
