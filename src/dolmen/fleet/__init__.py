"""The fleet view: many nodes' verdicts gathered into one store, and what they say together.

``collect`` reads ``dolmen validate --json`` documents from files, folders and agents
(``dolmen serve``'s ``GET /v1/verdict/latest``) into a store (``store``); ``report``
puts them side by side: a nodes x failing-checks table, outliers against the fleet's
majority (``figures``) and what changed since the last report; ``slurm_run`` runs the
checks on every node through Slurm (one srun task per node) and applies the drain
contract of ``dolmen.slurm.drain``; ``web`` is the dashboard ``dolmen serve --fleet``
mounts. docs/fleet.md.
"""

# What ``fleet collective``'s all_reduce must reach at 1 GiB, as a share of the rails' line
# rate (``internode``; nccl-tests runs reach 0.9 and more on IB). Here, not in internode, so
# that the CLI's --min-fraction default does not import internode's checks, facts and KB
# into every ``dolmen fleet`` command.
MIN_FRACTION = 0.7
