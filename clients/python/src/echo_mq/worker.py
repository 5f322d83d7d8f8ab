"""The worker loop behind ``Client.work``: claim, run, report, until told to stop.

One loop claims for every free slot at once (``count``: the slots free), so
the worker never holds more jobs than its concurrency, and each job runs in
a thread of its own (see :mod:`echo_mq.jobrun`). A claim that meets a 502,
503, 504, 429 or no answer is sent again after a pause; one refused in a
way asking again cannot mend (a wrong key, a bad queue name or lease) ends
the loop, and ``work()`` raises it once the jobs in hand are finished.
When the stop event is set, a claim already sent is left to answer (one
cut short after the service leased jobs would strand them until their
leases lapse), the jobs it brings are worked too, and ``work()`` returns
once every job in hand is reported.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, List, Optional

from .backoff import Backoff, retryable_claim
from .errors import EmqError
from .job import Job
from .jobrun import run_job

if TYPE_CHECKING:
    from .client import Client

#: The longest wait a claim may ask for: the service refuses a longer one.
MAX_WAIT_MS = 30000
#: The most jobs one claim may ask for: the service refuses more.
MAX_CLAIM_COUNT = 100
#: The pause between empty claims when the wait is 0, so a poll without a
#: wait does not spin.
IDLE_PAUSE_S = 1.0
#: How often a loop waiting for a free slot looks at the stop event.
_SLOT_POLL_S = 0.2


def default_worker_name() -> str:
    """The name a worker gives itself on its jobs: "python-<host>-<pid>"."""
    return f"python-{socket.gethostname()}-{os.getpid()}"


class Worker:
    """One call of Client.work: see its doc."""

    def __init__(
        self,
        client: "Client",
        queue: str,
        handler: Callable[[Job], Any],
        *,
        concurrency: int,
        stop: Optional[threading.Event],
        lease_ms: int,
        wait_ms: int,
        worker: Optional[str],
        logger: Optional[logging.Logger],
    ) -> None:
        self._client = client
        self._queue = queue
        self._handler = handler
        self._concurrency = max(1, int(concurrency))
        self._stop = stop if stop is not None else threading.Event()
        self._lease_ms = lease_ms
        self._wait_ms = min(max(0, wait_ms), MAX_WAIT_MS)
        self._name = worker or default_worker_name()
        self._log = logger if logger is not None else logging.getLogger("echo_mq")
        self._slots = threading.Condition()
        self._in_hand = 0
        self._threads: List[threading.Thread] = []

    def run(self) -> None:
        """Claims and works jobs until stopped; raises a claim refused for good."""
        self._log.info("worker %s working queue %s", self._name, self._queue)
        try:
            refused = self._claim_loop()
            if self._stop.is_set():
                self._log.info("stopping: finishing the jobs in hand")
        finally:
            self._wait_for_jobs()
        self._log.info("worker %s stopped", self._name)
        if refused is not None:
            raise refused

    def _claim_loop(self) -> Optional[EmqError]:
        """Claims for the free slots until stopped; returns a claim refused for good."""
        backoff = Backoff()
        while not self._stop.is_set():
            free = self._free_slots()
            if free == 0:
                break  # stopped while every slot was taken
            try:
                jobs = self._client.claim(
                    self._queue, count=free, lease_ms=self._lease_ms, wait_ms=self._wait_ms, worker=self._name
                )
            except EmqError as error:
                if not retryable_claim(error):
                    self._log.error("claim refused: %s", error.summary())
                    return error
                pause = backoff.pause(error)
                self._log.warning("backing off %gs: %s (claiming from queue %s)", pause, error.summary(), self._queue)
                self._stop.wait(pause)
                continue
            backoff.reset()
            claimed_at = time.monotonic()
            for job in jobs:
                self._start(job, claimed_at)
            if not jobs and self._wait_ms == 0:
                self._stop.wait(IDLE_PAUSE_S)
        return None

    def _free_slots(self) -> int:
        """Waits until a slot is free and returns how many are; 0 once stopped."""
        with self._slots:
            while self._in_hand >= self._concurrency:
                if self._stop.is_set():
                    return 0
                self._slots.wait(_SLOT_POLL_S)
            return min(self._concurrency - self._in_hand, MAX_CLAIM_COUNT)

    def _start(self, job: Job, claimed_at: float) -> None:
        """Runs job in a thread of its own, holding a slot until it is reported."""
        with self._slots:
            self._in_hand += 1
            self._threads = [thread for thread in self._threads if thread.is_alive()]
        thread = threading.Thread(target=self._run, args=(job, claimed_at), name=f"echo_mq job {job.id}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run(self, job: Job, claimed_at: float) -> None:
        try:
            run_job(job, self._handler, self._lease_ms, self._client.timeout, self._log, claimed_at)
        except BaseException:  # a bug here must not cost the slot, nor go unseen
            self._log.exception("working job %s failed", job.id)
        finally:
            with self._slots:
                self._in_hand -= 1
                self._slots.notify_all()

    def _wait_for_jobs(self) -> None:
        """Waits until every job in hand is reported."""
        for thread in list(self._threads):
            thread.join()
