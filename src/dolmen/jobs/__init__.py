"""``dolmen.jobs``: JobSpec -> Backend (local | slurm | kubernetes) -> Supervisor -> Recovery."""
