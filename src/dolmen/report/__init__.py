"""``dolmen.report``: renderers of one verdict (terminal, JSON, JUnit, Prometheus) and the
schedulers' contracts (exit codes, Slurm drain reasons, node-problem-detector)."""
