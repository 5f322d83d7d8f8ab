"""The client of one echo_mq service: enqueue, claim, read, cancel, and work.

One :class:`Client` is safe to share between threads: it keeps no
connection open (each call is one request) and no state but its settings.
"""

from __future__ import annotations

import datetime
import logging
import threading
from typing import Any, Callable, Dict, List, Optional, Union

from .answers import CLAIMED, JOB, JOBS, LOG_PAGE
from .job import Job, jobs_of
from .paths import job_path, queue_path
from .transport import Transport
from .worker import Worker


class Client:
    """Calls one echo_mq service.

    base_url is the service's URL ("http://127.0.0.1:8080", or with a path
    prefix "https://emq.example.com/emq"); anything that is not an http://
    or https:// URL with a host raises ValueError. key is sent as
    ``Authorization: Bearer <key>``; with signing_key instead, no key is
    sent and every request is signed with it (X-EMQ-Signature). timeout is
    how long, in seconds, a call waits for the connection and for each part
    of the answer before it raises ConnectionFailed (a claim's wait is
    added to it).
    """

    def __init__(
        self,
        base_url: str,
        key: Optional[str] = None,
        *,
        signing_key: Union[str, bytes, None] = None,
        timeout: float = 30.0,
    ) -> None:
        self._transport = Transport(base_url, key, signing_key, timeout)

    @property
    def base_url(self) -> str:
        """The service's base URL, without a trailing slash."""
        return self._transport.base_url

    @property
    def timeout(self) -> float:
        """How long a call waits for an answer, in seconds (a claim adds its wait)."""
        return self._transport.timeout

    def enqueue(self, queue: str, payload: Any, **options: Any) -> Dict[str, Any]:
        """Enqueues a job whose payload is any JSON value, and returns it.

        options are the enqueue's other fields, sent as given: id, priority,
        delay_ms, run_at (an RFC 3339 string, or a datetime with a time
        zone), max_attempts, backoff, group, dedupe, expires_in_ms,
        timeout_ms, depends_on, ... (docs/api.md); an option that is None is
        left out. With an id, enqueueing again returns the job that has it.
        """
        body = _enqueue_body({**options, "payload": payload})
        return self._transport.request("POST", queue_path(queue, "/jobs"), body, expect=JOB)

    def enqueue_many(self, queue: str, jobs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Enqueues up to 1000 jobs in one request (each a dict of the fields
        enqueue takes, payload among them); returns the jobs in order."""
        body = {"jobs": [_enqueue_body(job) for job in jobs]}
        answer = self._transport.request("POST", queue_path(queue, "/jobs/batch"), body, expect=JOBS)
        return list(answer["jobs"])

    def claim(
        self,
        queue: str,
        count: int = 1,
        lease_ms: int = 30000,
        wait_ms: int = 0,
        worker: Optional[str] = None,
    ) -> List[Job]:
        """Leases up to count jobs (1 to 100) of queue for lease_ms each,
        priority first and FIFO within a priority. With wait_ms (up to
        30,000) it is a long poll: when no job is there, the answer comes as
        soon as one is, or empty after wait_ms. worker names the claimer on
        the jobs.

        Do not cut a claim short: one abandoned after the service leased its
        jobs leaves them stranded until their leases lapse.
        """
        body: Dict[str, Any] = {"count": count, "lease_ms": lease_ms, "wait_ms": wait_ms}
        if worker is not None:
            body["worker"] = worker
        timeout = self._transport.timeout + wait_ms / 1000
        answer = self._transport.request("POST", queue_path(queue, "/claim"), body, timeout=timeout, expect=CLAIMED)
        return jobs_of(self._transport, queue, answer)

    def get(self, queue: str, id: str) -> Dict[str, Any]:
        """Reads job id of queue; Gone when there is none."""
        return self._transport.request("GET", job_path(queue, id), expect=JOB)

    def cancel(self, queue: str, id: str, reason: Optional[str] = None) -> Dict[str, Any]:
        """Cancels job id of queue and returns it. A pending, delayed or waiting
        job is cancelled at once (state "cancelled"); an active one is asked
        to stop (state "active", cancel_requested true): its worker sees it at
        its next extend. WrongState for a completed or dead job."""
        body = {"reason": reason} if reason is not None else {}
        return self._transport.request("POST", job_path(queue, id, "/cancel"), body, expect=JOB)

    def logs(self, queue: str, id: str) -> List[Dict[str, Any]]:
        """Reads the whole log of job id of queue, oldest line first: each line
        ``{at, line}``. Gone when there is no such job."""
        lines: List[Dict[str, Any]] = []
        query: Dict[str, Any] = {"limit": 1000}
        while True:
            page = self._transport.request("GET", job_path(queue, id, "/logs"), query=query, expect=LOG_PAGE)
            lines.extend(page["lines"])
            cursor = page.get("next_cursor")
            if not page["lines"] or not cursor or cursor == query.get("cursor"):
                return lines
            query["cursor"] = cursor

    def work(
        self,
        queue: str,
        handler: Callable[[Job], Any],
        concurrency: int = 1,
        stop: Optional[threading.Event] = None,
        *,
        lease_ms: int = 30000,
        wait_ms: int = 10000,
        worker: Optional[str] = None,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        """Claims jobs of queue and runs handler on each, until stop is set.

        handler(job) returns the job's result (any JSON value), which
        completes it; raising fails it (Fatal: dead at once; Snooze: put back
        without spending the attempt). Up to concurrency jobs run at once,
        each in a thread of its own, with a heartbeat that extends its lease
        every lease_ms / 3 and makes ``job.cancelled()`` true once the job is
        cancelled or lost. Claims long-poll for wait_ms (at most 30,000).
        502, 503, 504, 429 and connection failures are waited out (Retry-After,
        else 0.5 s doubling to 30 s). worker names this worker on its jobs
        (default "python-<host>-<pid>"); logger defaults to
        ``logging.getLogger("echo_mq")``.

        Once stop is set (None: never), it stops claiming, lets a claim
        already sent answer, finishes the jobs in hand, reports them, and
        returns. A claim refused in a way asking again cannot mend (400, 401,
        403, ...) is raised, once the jobs in hand are finished.
        """
        Worker(
            self,
            queue,
            handler,
            concurrency=concurrency,
            stop=stop,
            lease_ms=lease_ms,
            wait_ms=wait_ms,
            worker=worker,
            logger=logger,
        ).run()


def _enqueue_body(fields: Dict[str, Any]) -> Dict[str, Any]:
    """An enqueue's fields as sent: None left out, a run_at datetime as RFC 3339."""
    body = {name: value for name, value in fields.items() if value is not None or name == "payload"}
    run_at = body.get("run_at")
    if isinstance(run_at, datetime.datetime):
        body["run_at"] = rfc3339(run_at)
    return body


def rfc3339(when: datetime.datetime) -> str:
    """when in UTC as RFC 3339 to the millisecond ("2026-12-01T09:00:00.000Z").
    A datetime without a time zone is refused (ValueError): it could be any."""
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"run_at {when!r} has no time zone: give one (datetime.timezone.utc)")
    utc = when.astimezone(datetime.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
