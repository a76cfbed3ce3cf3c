"""``dolmen.jobs.slurm``: what the Slurm backend needs besides the backend class itself.

``parse`` (pure parsers of sbatch/squeue/sacct/scontrol/sinfo output), ``sbatch``
(the batch script, pure), ``client`` (Slurm commands through a ``Host``, with an
argv prefix and environment so tests reach a cluster in network namespaces),
``watch`` (health-aware recovery while a job runs), ``quota`` (GrpTRES through
sacctmgr), ``hooks`` (HealthCheckProgram / Prolog / Epilog) and ``probe`` (is a
slurmd port answering). Kept import-light: ``hooks`` and ``probe`` run as
``python -m`` on every node.
"""
