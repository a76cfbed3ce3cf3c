"""``system.*`` checks: memory, NUMA affinity, PCIe errors and links, the running kernel."""
