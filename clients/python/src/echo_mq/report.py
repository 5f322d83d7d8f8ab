"""The report of a job's outcome: complete, fail or snooze, retried while it may hold.

A report that meets a 502, 503, 504, 429 or no answer is sent again after
a pause (sending the same complete, fail or snooze twice is safe: the
service answers a repeat as the first), for as long as the job's lease may
still hold. After that the service's sweep takes the job back and runs it
again, so the report is given up with a warning. A 409 EMQSTALE or 404
EMQGONE means the job is no longer this worker's: its outcome is dropped,
with a warning. A result or snooze the service refuses fails the job
instead, and a fail refused 400 (its text, say) fails it once more with a
plain text, so that it does not stay active until its lease lapses.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Dict, Optional

from .backoff import Backoff, retryable
from .errors import EmqError, Gone, Stale
from .job import Job
from .text import well_formed


class GaveUp(Exception):
    """A report retried until the job's lease lapsed; error is the last failure."""

    def __init__(self, error: EmqError) -> None:
        super().__init__(error.summary())
        self.error = error


def lost_warning(logger: logging.Logger, job: Job, refusal: Optional[EmqError]) -> None:
    """Logs that job is no longer this worker's (it went to another worker,
    or was removed), so its outcome is dropped: "lost <id>: 409 EMQSTALE"."""
    if refusal is None:
        logger.warning("lost %s", job.id)
    else:
        logger.warning("lost %s: %s", job.id, f"{refusal.status} {refusal.code}".strip())


class Report:
    """Reports one job's outcome, retrying while its lease may hold."""

    def __init__(self, job: Job, lease_end: float, call_timeout: float, logger: logging.Logger) -> None:
        self._job = job
        self._lease_end = lease_end
        self._timeout = call_timeout
        self._log = logger

    def complete(self, result: Any) -> None:
        """Completes the job with result; a result refused fails it instead."""
        try:
            self._retry(lambda: self._job._complete(result, minimal=True, timeout=self._timeout))
        except (Stale, Gone) as refusal:
            lost_warning(self._log, self._job, refusal)
        except GaveUp as gave_up:
            self._gave_up("complete", gave_up.error)
        except EmqError as refusal:
            self.fail(f"result refused: {refusal.summary()}")
        else:
            self._log.info("completed %s", self._job.id)

    def fail(self, error: str, fatal: bool = False, fallback: bool = True) -> None:
        """Fails the job's attempt with the error's text (fatal: dead at once).
        When the service refuses it 400 and fallback holds, fails it once more
        with "the error's text was refused: <refusal>"."""
        error = well_formed(error)  # as sent, and safe to log
        try:
            answer = self._retry(lambda: self._job._fail(error, None, fatal, minimal=True, timeout=self._timeout))
        except (Stale, Gone) as refusal:
            lost_warning(self._log, self._job, refusal)
        except GaveUp as gave_up:
            self._gave_up("fail", gave_up.error)
        except EmqError as refusal:
            self._log.error("fail %s refused: %s", self._job.id, refusal.summary())
            if fallback and refusal.status == 400:
                self.fail(f"the error's text was refused: {refusal.summary()}", fatal, fallback=False)
        else:
            self._log_end(answer, f"failed {self._job.id}: {error}")

    def snooze(self, delay_ms: int) -> None:
        """Puts the job back for delay_ms; a snooze refused fails it instead."""
        try:
            answer = self._retry(lambda: self._job._snooze(delay_ms, timeout=self._timeout))
        except (Stale, Gone) as refusal:
            lost_warning(self._log, self._job, refusal)
        except GaveUp as gave_up:
            self._gave_up("snooze", gave_up.error)
        except EmqError as refusal:
            self.fail(f"snooze refused: {refusal.summary()}")
        else:
            self._log_end(answer, f"snoozed {self._job.id}: {delay_ms} ms")

    def _log_end(self, answer: Dict[str, Any], otherwise: str) -> None:
        """Logs how a reported job ended: "cancelled <id>: <reason>" when its
        cancel was requested (the service cancels it), otherwise as said."""
        if answer.get("state") == "cancelled":
            self._log.info("cancelled %s: %s", self._job.id, answer.get("cancel_reason") or "")
        else:
            self._log.info("%s", otherwise)

    def _retry(self, call: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
        """Makes call until it succeeds or fails in a way not worth retrying,
        pausing after each retryable failure, until the lease may have lapsed:
        then one last call, and GaveUp. Pauses do not end when the worker is
        told to stop: a stop promises the jobs in hand are reported."""
        backoff = Backoff()
        while True:
            try:
                return call()
            except EmqError as error:
                if not retryable(error):
                    raise
                remaining = self._lease_end - time.monotonic()
                if remaining <= 0:
                    raise GaveUp(error) from error
                pause = min(backoff.pause(error), remaining)
                self._log.warning("backing off %gs: %s (reporting job %s)", pause, error.summary(), self._job.id)
                time.sleep(pause)

    def _gave_up(self, verb: str, error: EmqError) -> None:
        self._log.warning(
            "gave up the %s of %s: %s; its lease has lapsed, the service's sweep will run it again",
            verb, self._job.id, error.summary(),
        )
