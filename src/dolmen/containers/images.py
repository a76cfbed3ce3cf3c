"""Whether an image is in a runtime's local store, asked without pulling it.

``podman image exists IMAGE`` exits 0 when the store holds it and 1 when it does not;
``docker image inspect IMAGE`` exits 0, or 1 with ``No such image`` on stderr. Any other
answer (a daemon that is down, a socket dolmen may not open, storage it cannot read) is
neither: the store could not be asked, and ``why`` says so in the runtime's words. A
pull is never made here: the caller names the command that pulls.
"""

from __future__ import annotations

from dataclasses import dataclass

from dolmen.host import Host

STORES = ("docker", "podman")  # the runtimes whose image store is asked
_TIMEOUT = 30.0


@dataclass(frozen=True)
class Stored:
    """The answer of one runtime's store: ``present`` True or False, or None with ``why``."""

    runtime: str
    image: str
    present: bool | None
    why: str = ""

    @property
    def pull(self) -> str:
        """The command that pulls the image into this store (never run by dolmen)."""
        return f"{self.runtime} pull {self.image}"


def argv(runtime: str, image: str) -> tuple[str, ...]:
    """The command that asks ``runtime``'s store about ``image`` (docker or podman)."""
    if runtime == "podman":
        return ("podman", "image", "exists", image)
    if runtime == "docker":
        return ("docker", "image", "inspect", "--format", "{{.Id}}", image)
    raise ValueError(f"no image store dolmen asks for {runtime!r} (only {', '.join(STORES)})")


def judge(runtime: str, image: str, rc: int | None, stderr: str, failure: str) -> Stored:
    """The store's answer from the command's exit code and stderr (pure): ``failure`` is
    what to say when the command did not run at all."""
    if rc == 0:
        return Stored(runtime, image, True)
    said = stderr.strip().splitlines()[-1:] or [""]
    absent = rc == 1 and (runtime == "podman" or "no such image" in stderr.lower())
    if absent:
        return Stored(runtime, image, False)
    if rc is None:
        return Stored(runtime, image, None, failure)
    return Stored(
        runtime, image, None, f"{' '.join(argv(runtime, image)[:3])}: exit {rc}: {said[0]}"
    )


def stored(host: Host, runtime: str, image: str) -> Stored:
    """Ask ``runtime``'s local store whether it holds ``image``."""
    res = host.run(argv(runtime, image), timeout=_TIMEOUT)
    return judge(runtime, image, res.rc, res.stderr, res.failure())
