"""``dolmen.slurm``: Slurm itself, for both the health check and the jobs backend.

``parse`` (pure parsers of sbatch/squeue/sacct/scontrol output), ``client``
(Slurm commands through a ``Host``, with an argv prefix and environment so tests
reach a cluster in network namespaces), ``drain`` (the drain contract of
``dolmen validate --slurm``), ``hooks`` (HealthCheckProgram / Prolog / Epilog,
shipped as console scripts), ``watch`` (health-aware recovery of a running job),
``probe`` (is a slurmd port answering), ``accounting`` (accounts, associations
and GrpTRES through sacctmgr) and ``events`` (the audit events of drains, resumes
and requeues). Nothing here knows dolmen's job model; ``dolmen.jobs.slurm`` builds
the jobs backend on top. Kept import-light: ``hooks`` and ``probe`` run on every node.
"""
