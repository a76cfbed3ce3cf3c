"""``dolmen net``: the isolation policy between jobs and tenants (docs/net.md).

    dolmen net plan --policy P       the diff against the live ruleset (never writes)
    dolmen net apply --policy P      journal the live ruleset, replace it in one batch
    dolmen net verify --policy P     the live ruleset against the policy, with counters
    dolmen net rollback              put the journaled ruleset back
    dolmen net recover               roll back or complete an interrupted apply
    dolmen net gc                    empty the job slots of jobs the scheduler forgot

Other parts of ``net`` live in their own modules and join the group at the bottom of
this file, one ``net.add_command(...)`` line each.
"""

from __future__ import annotations

import click


@click.group()
def net() -> None:
    """Isolate jobs and tenants: plan, apply, verify and roll back the network policy."""


# One line per command; other modules' commands join the same way.
from dolmen.cli import net_nft  # noqa: E402

net.add_command(net_nft.plan)
net.add_command(net_nft.apply)
net.add_command(net_nft.verify)
net.add_command(net_nft.rollback)

from dolmen.cli.net_recover import recover  # noqa: E402

net.add_command(recover)

from dolmen.cli.net_gc import gc  # noqa: E402

net.add_command(gc)

from dolmen.cli.net_prove import prove  # noqa: E402

net.add_command(prove)

from dolmen.cli import net_targets  # noqa: E402

net.add_command(net_targets.k8s)
net.add_command(net_targets.ib)
