"""Network isolation between jobs and tenants: one policy, three enforcement points.

See docs/net.md. The policy (TOML) compiles to nftables on each host, Kubernetes
NetworkPolicy objects and an opensm partitions.conf; ``net prove`` checks it by probes.
"""
