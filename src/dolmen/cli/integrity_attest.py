"""``dolmen integrity attest``: TPM quotes, their verification, and the golden policy
(docs/attestation.md).

On the attested node: ``quote`` (a fresh quote over the policy's PCRs, answering the
verifier's nonce). On the verifier: ``nonce`` (this round's), ``verify`` (signature,
nonce, the event log and IMA list replayed, the policy) and ``policy`` (a golden policy
from a known-good node's log). ``eventlog`` shows what a log measured.

``verify`` exits 0 when the node proved the policy's state, 1 when it did not (a wrong
AK, a stale nonce, a tampered log, a PCR that differs or cannot be replayed), 2 when its
input cannot be read; ``quote`` exits 3 when there is no TPM to ask.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dolmen.cli.main import exit_with
from dolmen.errors import ExitCode, InputError, UsageError

EVENTLOG = "sys/kernel/security/tpm0/binary_bios_measurements"
IMA_LIST = "sys/kernel/security/ima/ascii_runtime_measurements"
if TYPE_CHECKING:
    from dolmen.integrity.attest.replay import Replay

_FILE = click.Path(dir_okay=False)
_MAX_INPUT = 64 << 20


def _read(path: str, what: str) -> bytes:
    from dolmen.fsutil import read_regular

    try:
        return read_regular(Path(path), _MAX_INPUT)
    except OSError as e:
        raise InputError(f"cannot read the {what}: {e.strerror or e}", path=path) from None


def _selection(text: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """``sha256:0,1,7+sha1:10`` (tpm2-tools' syntax, ranges as 0-7) parsed."""
    from dolmen.integrity.attest import tcg

    out: list[tuple[str, tuple[int, ...]]] = []
    for part in text.split("+"):
        bank, _, pcrs = part.partition(":")
        try:
            numbers: set[int] = set()
            for item in pcrs.split(","):
                low, _, high = item.partition("-")
                numbers.update(range(int(low), int(high or low) + 1))
        except ValueError:
            numbers = {99}
        if bank not in tcg.BY_NAME or not numbers or max(numbers) > 23:
            raise UsageError(
                f"--pcrs {text!r}: write <bank>:<pcr>,<pcr>-<pcr>[+<bank>:...] with PCRs 0 to "
                f"23 and banks {', '.join(tcg.BY_NAME)}"
            )
        out.append((bank, tuple(sorted(numbers))))
    return tuple(out)


def _replay(eventlog: str | None, ima: str | None) -> Replay | None:
    from dolmen.integrity.attest.eventlog import parse_event_log
    from dolmen.integrity.attest.ima import parse_ima_list
    from dolmen.integrity.attest.replay import replay

    if eventlog is None:
        return None
    imalist = None
    if ima is not None:
        imalist = parse_ima_list(_read(ima, "IMA list").decode("utf-8", "surrogateescape"))
    return replay(parse_event_log(_read(eventlog, "event log")), imalist)


@click.group()
def attest() -> None:
    """TPM attestation: quotes, event log replay, golden PCR policy."""


@attest.command()
def nonce() -> None:
    """Print a fresh random nonce (32 bytes, hex) for one round of attestation."""
    click.echo(secrets.token_hex(32))


@attest.command()
@click.option("--ak-context", "ak", required=True, type=_FILE, help="The AK (tpm2-tools context).")
@click.option("--pcrs", default=None, help="PCRs to quote: sha256:0-9 (default: the policy's).")
@click.option("--policy", "policy_path", type=_FILE, default=None, help="Quote the PCRs it names.")
@click.option(
    "--nonce", "nonce_hex", default=None, help="The verifier's nonce (hex); default fresh."
)
@click.option("--tcti", default=None, help="How to reach the TPM (default: TPM2TOOLS_TCTI).")
@click.option("-o", "--output", default=None, type=_FILE, help="Write the quote document here.")
@click.option("--json", "as_json", is_flag=True, help="Print the quote document.")
def quote(
    ak: str,
    pcrs: str | None,
    policy_path: str | None,
    nonce_hex: str | None,
    tcti: str | None,
    output: str | None,
    as_json: bool,
) -> None:
    """Ask the TPM for a quote over the PCRs, answering the nonce, signed by the AK."""
    from dolmen.fsutil import output_target, write_output
    from dolmen.host import open_host
    from dolmen.integrity.attest import tpm
    from dolmen.integrity.attest.policy import load_policy

    if (pcrs is None) == (policy_path is None):
        raise UsageError("give one of --pcrs or --policy (the PCRs to quote)")
    if policy_path is not None:
        selection = load_policy(
            Path(policy_path), _read(policy_path, "policy").decode()
        ).selection()
    else:
        selection = _selection(pcrs or "")
    asked = _nonce(nonce_hex) if nonce_hex is not None else secrets.token_bytes(32)
    if output is not None:
        output_target(Path(output), what="-o")
    with open_host(None) as host:
        bundle = tpm.quote(host, Path(ak), selection, asked, tcti)
    text = json.dumps(bundle.to_json(), indent=2) + "\n"
    if output is not None:
        write_output(Path(output), text.encode(), what="-o")
    if as_json or output is None:
        click.echo(text, nl=False)


def _nonce(text: str) -> bytes:
    try:
        value = bytes.fromhex(text)
    except ValueError:
        value = b""
    if not 8 <= len(value) <= 64:
        raise UsageError("--nonce must be 8 to 64 bytes in hex (dolmen integrity attest nonce)")
    return value


@attest.command()
@click.argument("quote_file", metavar="QUOTE", type=_FILE)
@click.option("--ak-pub", required=True, type=_FILE, help="The AK's public key (PEM) you trust.")
@click.option("--nonce", "nonce_hex", required=True, help="The nonce this round asked (hex).")
@click.option("--policy", "policy_path", type=_FILE, default=None, help="The golden policy (TOML).")
@click.option("--eventlog", type=_FILE, default=None, help="The node's binary_bios_measurements.")
@click.option("--ima", type=_FILE, default=None, help="The node's ascii_runtime_measurements.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def verify(
    quote_file: str,
    ak_pub: str,
    nonce_hex: str,
    policy_path: str | None,
    eventlog: str | None,
    ima: str | None,
    as_json: bool,
) -> None:
    """Check a quote against the AK, the nonce, the replayed log and the policy.

    Without --policy every quoted PCR must match the replay of --eventlog."""
    from dolmen.integrity.attest.bundle import parse_bundle
    from dolmen.integrity.attest.policy import Policy, Rule, load_policy
    from dolmen.integrity.attest.quote import QuoteError, load_ak, parse_attest
    from dolmen.integrity.attest.verify import verify as judge

    if ima is not None and eventlog is None:
        raise UsageError("--ima continues the event log's PCR 10: give --eventlog too")
    bundle = parse_bundle(_read(quote_file, "quote").decode("utf-8", "replace"), quote_file)
    pem = _read(ak_pub, "AK public key")
    try:
        load_ak(pem)  # the verifier's own input: a bad one is a usage problem, not the node's
    except QuoteError as e:
        raise InputError(f"the AK public key is {e}", path=ak_pub) from None
    if policy_path is not None:
        policy = load_policy(Path(policy_path), _read(policy_path, "policy").decode())
    else:
        try:
            chosen = parse_attest(bundle.attest).selection
        except QuoteError:
            chosen = ()  # the node sent no checkable quote: verify says so (not trusted)
        policy = Policy(tuple(Rule(b, i, None) for b, pcrs in chosen for i in pcrs))
    verdict = judge(bundle, pem, _nonce(nonce_hex), policy, _replay(eventlog, ima))
    if as_json:
        click.echo(json.dumps(verdict.to_json(), indent=2))
    else:
        for v in verdict.pcrs:
            click.echo(f"{v.rule.key:<10} {v.status:<13} {v.reason or ''}".rstrip())
        for note in verdict.notes:
            click.echo(f"note: {note}")
        for problem in verdict.problems:
            click.echo(f"problem: {problem}")
        click.echo("trusted" if verdict.trusted else "NOT trusted")
    exit_with(ExitCode.OK if verdict.trusted else ExitCode.UNHEALTHY)


@attest.command()
@click.option(
    "--eventlog", required=True, type=_FILE, help="A known-good binary_bios_measurements."
)
@click.option("--ima", type=_FILE, default=None, help="Its ascii_runtime_measurements (PCR 10).")
@click.option("--pcrs", default="sha256:0-9", show_default=True, help="The PCRs to judge.")
@click.option("--pin", is_flag=True, help="Pin the replayed values (default: replay-must-match).")
@click.option("-o", "--output", required=True, type=_FILE, help="The policy file to write.")
def policy(eventlog: str, ima: str | None, pcrs: str, pin: bool, output: str) -> None:
    """Write a golden policy from a known-good node's event log."""
    from dolmen.fsutil import write_output
    from dolmen.integrity.attest.policy import Policy, Rule, render_policy

    replayed = _replay(eventlog, ima)
    assert replayed is not None
    if replayed.problems:
        raise InputError(f"not a known-good log: {replayed.problems[0]}", path=eventlog)
    rules = []
    for bank, numbers in _selection(pcrs):
        for index in numbers:
            value = replayed.pcr(bank, index)
            if value.value is None:
                raise InputError(
                    f"{bank}:{index} cannot be replayed: {value.reason}", path=eventlog
                )
            rules.append(Rule(bank, index, (value.value,) if pin else None))
    write_output(Path(output), render_policy(Policy(tuple(rules))).encode(), what="-o")
    click.echo(f"wrote {output}: {len(rules)} PCRs, {'pinned' if pin else 'replay-must-match'}")


@attest.command()
@click.argument("path", required=False, type=_FILE)
def eventlog(path: str | None) -> None:
    """Show what a measured-boot event log measured (default: this host's)."""
    from dolmen.host import open_host
    from dolmen.integrity.attest.efi import describe
    from dolmen.integrity.attest.eventlog import parse_event_log

    if path is None:
        with open_host(None) as host:
            try:
                data = host.read_bytes(EVENTLOG)
            except OSError as e:
                raise InputError(
                    f"no event log to read ({e.strerror or e}): securityfs is not mounted or "
                    "the firmware gave the kernel none",
                    path="/" + EVENTLOG,
                    hint="mount -t securityfs securityfs /sys/kernel/security, or name a file",
                ) from None
    else:
        data = _read(path, "event log")
    log = parse_event_log(data)
    click.echo(f"banks: {', '.join(log.banks)}; {len(log.events)} events")
    for event in log.events:
        click.echo(f"{event.number:>4} PCR {event.pcr:>2} {event.type_name:<34} {describe(event)}")
    if log.problem:
        click.echo(f"problem: {log.problem}")
        exit_with(ExitCode.UNHEALTHY)
