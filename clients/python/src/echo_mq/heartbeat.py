"""The heartbeat of a job in hand: extends its lease while its handler runs.

Every third of the lease it extends the lease by the whole lease, so that
a hung extend still leaves time for the next before the lease lapses (an
extend gives up after a third of the lease for the same reason). Its
answers tell the job whether a cancel was requested; a 409 EMQSTALE or a
404 EMQGONE marks the job lost and ends the heartbeat. Any other failure,
even one that is no EmqError (a bug), is logged and the next extend is
still sent: a heartbeat that died would let the lease lapse under a
handler still at work. It also keeps the
latest the lease may end, which bounds how long the report after the
handler is retried.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Optional

from .backoff import Backoff, retryable
from .errors import EmqError, Gone, Stale
from .job import Job


class Heartbeat(threading.Thread):
    """Extends one job's lease every lease_ms / 3 until finish() is called."""

    def __init__(
        self, job: Job, lease_ms: int, call_timeout: float, logger: logging.Logger, claimed_at: float
    ) -> None:
        super().__init__(name=f"echo_mq heartbeat {job.id}", daemon=True)
        self._job = job
        self._lease_ms = lease_ms
        self._interval = lease_ms / 3000
        self._timeout = min(call_timeout, self._interval)
        self._log = logger
        self._finished = threading.Event()
        self._lock = threading.Lock()
        self._lease_end = claimed_at + lease_ms / 1000

    @property
    def lease_end(self) -> float:
        """The latest the job's lease may end, on time.monotonic(): a lease
        granted by an answer at t ends at t + lease or sooner."""
        with self._lock:
            return self._lease_end

    def finish(self) -> None:
        """Stops the heartbeat; an extend in flight ends on its own, its answer unused."""
        self._finished.set()

    def run(self) -> None:
        backoff = Backoff()
        pause: Optional[float] = self._interval
        while pause is not None and not self._finished.wait(max(0.0, pause)):
            started = time.monotonic()
            pause = self._beat(backoff)
            if pause is not None:  # extends start an interval apart, start to start
                pause -= time.monotonic() - started

    def _beat(self, backoff: Backoff) -> Optional[float]:
        """Extends the lease once; returns the pause before the next extend,
        counted from this one's start, or None when the heartbeat must end."""
        try:
            self._job._extend(self._lease_ms, None, self._timeout)
        except (Stale, Gone):
            return None  # the job is marked lost: the handler sees job.cancelled()
        except EmqError as error:
            if self._finished.is_set():
                return None
            if not retryable(error):  # such as 400: the next extend may do
                self._log.warning("extend of job %s refused: %s", self._job.id, error.summary())
                return self._interval
            pause = min(backoff.pause(error), self._interval)
            self._log.warning("backing off %gs: %s (extending job %s)", pause, error.summary(), self._job.id)
            return pause
        except Exception:  # a bug must not end the heartbeat
            self._log.exception("extend of job %s failed", self._job.id)
            return None if self._finished.is_set() else self._interval
        backoff.reset()
        with self._lock:
            self._lease_end = time.monotonic() + self._lease_ms / 1000
        return self._interval
