"""The live host runs real commands: missing binary, timeout and failure are distinct."""

from __future__ import annotations

import sys
import time

from dolmen.host import RunStatus
from dolmen.host.live import LiveHost


def test_ok_failed_missing_timeout() -> None:
    host = LiveHost()
    ok = host.run([sys.executable, "-c", "print('hi')"])
    assert ok.status is RunStatus.OK and ok.stdout == "hi\n" and ok.rc == 0
    failed = host.run([sys.executable, "-c", "import sys; sys.stderr.write('no'); sys.exit(3)"])
    assert failed.status is RunStatus.FAILED and failed.rc == 3 and failed.stderr == "no"
    missing = host.run(["dolmen-no-such-binary-xyz"])
    assert missing.status is RunStatus.MISSING and missing.rc is None
    t0 = time.monotonic()
    slow = host.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert slow.status is RunStatus.TIMEOUT and "timed out" in slow.reason
    assert time.monotonic() - t0 < 5


def test_never_a_shell() -> None:
    host = LiveHost()
    r = host.run(["echo", "$(id)", ";", "ls"])
    assert r.stdout.strip() == "$(id) ; ls"


def test_reads_live_files() -> None:
    host = LiveHost()
    assert host.read_value("proc/sys/kernel/ostype") == "Linux"
    assert host.hostname
