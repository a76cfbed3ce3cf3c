"""The Slurm jobs backend, on top of ``dolmen.slurm`` (client, parsers, watcher, accounting):
``backend`` (SlurmBackend), ``sbatch`` (the batch script, pure), ``extra`` (the checked
``[slurm] extra`` passthrough), ``pyxis`` (container jobs: detection) and ``quota``
(dolmen's users and GPU quotas as Slurm accounts and GrpTRES)."""
