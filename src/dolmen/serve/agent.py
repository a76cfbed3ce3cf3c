"""The warm agent: the quick tier (passive reads) every ``interval``, in a thread of the
server, its verdict kept in memory and stored in the history (serve/store.py).

A run is bounded by ``run_timeout`` the way ``validate --timeout`` bounds one: commands
are killed and the NVML read (a forked worker, host/gpu/nvml_worker.py) is abandoned at
the deadline, so a hung driver makes that run undecided instead of hanging the agent.
What no deadline reaches (a check's own Python loop: per-check SIGALRM limits work only in
a main thread) leaves the run going; the agent then reports it stuck (``/readyz`` 503,
``dolmen_agent_run_stuck``) and keeps serving the last verdict with its growing age,
which clients refuse once it is older than ``max_age``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from dolmen.checks.verdict import Verdict
from dolmen.config import Config
from dolmen.errors import DolmenError
from dolmen.host import Host, open_host
from dolmen.serve.answer import Request, age_line, render
from dolmen.serve.store import Store

STUCK_GRACE = 30.0  # seconds past run_timeout before a run counts as stuck


class Agent:
    """The periodic quick tier and its latest verdict."""

    def __init__(
        self,
        store: Store,
        *,
        source: str | None = None,
        interval: float = 300.0,
        run_timeout: float = 60.0,
        max_age: float | None = None,
        config: Config | None = None,
        host_factory: Callable[[], Host] | None = None,
    ) -> None:
        self.store = store
        self.source = source
        self.interval = interval
        self.run_timeout = run_timeout
        self.max_age = max_age if max_age is not None else 3 * interval + run_timeout
        self.config = config or Config()
        self._host_factory = host_factory or (lambda: open_host(source))
        self.verdict: Verdict | None = None
        self.verdict_json = ""  # its render_json (/v1/verdict/latest, verbatim)
        self.metrics_block = ""  # its Prometheus series (serve/metrics.py)
        self.run_id: int | None = None  # its row in the history; None: not stored
        self._finished = 0.0  # monotonic time of the verdict's end
        self.runs_total = 0
        self.failures_total = 0
        self.last_error: str | None = None
        self.running_since: float | None = None  # monotonic
        self._answers: dict[Any, Any] = {}  # "verdict" -> the verdict; (mode, verbose) -> answer
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the loop -----------------------------------------------------------------------
    def start(self) -> None:
        """Run the quick tier now, then every ``interval``, in a daemon thread."""
        self._thread = threading.Thread(target=self._loop, name="dolmen-agent", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to end; a run in progress is left to finish (daemon thread)."""
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self.interval)

    def open_host(self) -> Host:
        """A fresh host of the agent's source (the API's facts, stack and tune reads)."""
        return self._host_factory()

    def run_once(self) -> Verdict | None:
        """One quick-tier run: the verdict (kept and stored), or None when it raised."""
        from dolmen.checks.model import Level
        from dolmen.checks.suite import validate
        from dolmen.report.json import render_json, verdict_document
        from dolmen.serve.metrics import verdict_block

        self.running_since = time.monotonic()
        try:
            with self._host_factory() as host:
                verdict = validate(
                    host, level=Level.QUICK, config=self.config, timeout=self.run_timeout
                )
        except DolmenError as e:
            self._failed(e.message)
            return None
        except Exception as e:  # a bug in a check's framework: the agent must go on
            self._failed(f"{e.__class__.__name__}: {e}")
            return None
        finally:
            self.running_since = None
        finished = time.monotonic()
        text = render_json(verdict)
        # stored first: once /readyz says ready, /v1/verdict/latest has it too
        block = verdict_block(verdict)
        run_id = self.store.add(verdict_document(verdict), text, block)
        self._finished, self.run_id = finished, run_id  # the age is never of another verdict
        self.verdict, self.verdict_json, self.metrics_block = verdict, text, block
        self.runs_total += 1
        self.last_error = None
        return verdict

    def _failed(self, why: str) -> None:
        self.failures_total += 1
        self.runs_total += 1
        self.last_error = why

    # --- what it tells ------------------------------------------------------------------
    def age(self) -> float | None:
        """Seconds since the latest verdict was made, or None before the first."""
        return None if self.verdict is None else time.monotonic() - self._finished

    def stuck(self) -> float | None:
        """How long the run in progress has gone past its deadline and grace, or None."""
        since = self.running_since
        if since is None:
            return None
        over = time.monotonic() - since - self.run_timeout - STUCK_GRACE
        return over if over > 0 else None

    def answer(self, req: Request) -> dict[str, Any]:
        """The validate client's answer, or ``{"refused": why}`` (the client runs cold)."""
        verdict, age = self.verdict, self.age()
        if verdict is None or age is None:
            return {"refused": "no verdict yet"}
        if (req.source or None) != (self.source or None):
            return {"refused": f"the agent reads {self.source or 'this host'}, not {req.source}"}
        limit = min(self.max_age, req.max_age) if req.max_age is not None else self.max_age
        if age > limit:
            return {"refused": f"verdict {age:.0f} s old, older than {limit:g} s"}
        if req.slurm:  # a drain or resume each time: never cached
            with self._host_factory() as host:
                return render(req, verdict, host, age)
        return _aged(self._rendered(req, verdict), age)

    def _rendered(self, req: Request, verdict: Verdict) -> dict[str, Any]:
        """The answer for ``req`` rendered once per verdict (the age line is added later)."""
        cache = self._answers
        if cache.get("verdict") is not verdict:
            cache.clear()
            cache["verdict"] = verdict
        key = (req.mode, req.verbose)
        if key not in cache:
            cache[key] = render(req, verdict, None, 0.0)
        done: dict[str, Any] = cache[key]
        return done

    def cached_answer(self, req: Request) -> dict[str, Any] | None:
        """The answer when it was rendered for this verdict already (the event loop serves
        it without a worker thread), else None."""
        verdict = self.verdict
        if req.slurm or verdict is None or self._answers.get("verdict") is not verdict:
            return None
        if (req.mode, req.verbose) not in self._answers:
            return None
        return self.answer(req)

    def status(self) -> dict[str, Any]:
        """``GET /v1/agent``: the loop's state."""
        age = self.age()
        return {
            "source": self.source or "live",
            "interval_s": self.interval,
            "run_timeout_s": self.run_timeout,
            "max_age_s": self.max_age,
            "runs_total": self.runs_total,
            "failures_total": self.failures_total,
            "last_error": self.last_error,
            "verdict_age_s": None if age is None else round(age, 3),
            "running": self.running_since is not None,
            "stuck_s": self.stuck(),
            "store": {"path": str(self.store.path), "degraded": self.store.degraded},
        }


def _aged(answer: dict[str, Any], age: float) -> dict[str, Any]:
    """A rendered answer with this request's age line (the last line of stderr)."""
    err = answer["stderr"].rsplit("dolmen: answered by", 1)[0]
    return answer | {"stderr": err + age_line(age), "age_s": age}
