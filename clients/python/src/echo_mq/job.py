"""A claimed job: its fields, and the calls its holder makes under its token.

``Client.claim`` and ``Client.work`` give out :class:`Job` objects. The
holder extends the lease (a heartbeat, which also says whether someone
asked the job to stop), writes lines to the job's log, and ends the attempt:
complete, fail or snooze. Every call names the job's token, so a holder
that lost the job (its lease lapsed and it went to another worker, or it
was removed) is refused 409 :class:`~echo_mq.errors.Stale` or 404
:class:`~echo_mq.errors.Gone`, and must drop it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from .answers import JOB
from .errors import Cancelled, EmqError, Gone, Stale
from .paths import job_path
from .text import well_formed
from .transport import Transport

#: The header that asks for an answer without the job's payload and result.
_MINIMAL = {"Prefer": "return=minimal"}


class Job:
    """A job this holder claimed.

    ``id``, ``queue``, ``payload``, ``token`` and ``attempts`` (this attempt
    counted) are the claim's; ``data`` is the whole job as the claim
    answered it. ``cancelled()`` turns true once an extend saw a cancel
    request or the job was lost; inside ``Client.work`` the heartbeat
    extends for you, so a handler only looks.
    """

    def __init__(self, transport: Transport, queue: str, data: Dict[str, Any]) -> None:
        self._transport = transport
        self.data = data
        self.id: str = data["id"]
        self.queue: str = data.get("queue") or queue
        self.payload: Any = data.get("payload")
        self.token: int = data["token"]
        self.attempts: int = data.get("attempts", 0)
        self._cancel_reason: Optional[str] = None  # set once, by whichever thread sees it
        self._lost_by: Optional[EmqError] = None

    def __repr__(self) -> str:
        return f"Job(queue={self.queue!r}, id={self.id!r}, attempts={self.attempts})"

    @property
    def cancel_reason(self) -> Optional[str]:
        """The reason of the cancel an extend saw ("" when none was given), or None."""
        return self._cancel_reason

    @property
    def lost(self) -> bool:
        """Whether the job is no longer this holder's: an extend or a log append
        was answered 409 EMQSTALE or 404 EMQGONE. Its outcome is not reported."""
        return self._lost_by is not None

    @property
    def lost_by(self) -> Optional[EmqError]:
        """The refusal that showed the job was lost, or None."""
        return self._lost_by

    def cancelled(self) -> bool:
        """Whether the job should stop: a cancel was requested, or it was lost."""
        return self._cancel_reason is not None or self._lost_by is not None

    def raise_if_cancelled(self) -> None:
        """Raises Cancelled (with the reason) when the job should stop: call it
        at each safe point of a long handler."""
        if self._cancel_reason is not None:
            raise Cancelled(self._cancel_reason)
        if self._lost_by is not None:
            raise Cancelled(f"the job is no longer this worker's ({self._lost_by.summary()})")

    def extend(self, lease_ms: int = 30000, progress: Any = None) -> Dict[str, Any]:
        """Renews the lease for lease_ms from now (storing progress when given),
        and records a cancel request the answer carries.

        Returns ``{lease_expires_at, cancel_requested, cancel_reason}``. Stale or
        Gone marks the job lost, and is raised.
        """
        return self._extend(lease_ms, progress, None)

    def complete(self, result: Any = None) -> Dict[str, Any]:
        """Completes the job with result (any JSON value; None: none). Returns the job."""
        return self._complete(result, minimal=False, timeout=None)

    def fail(self, error: str, retry_in_ms: Optional[int] = None, fatal: bool = False) -> Dict[str, Any]:
        """Fails this attempt with the error's text (a lone surrogate in it, which
        the service refuses, is sent as U+FFFD). The service retries the job
        with its backoff (after retry_in_ms instead, when given) while attempts
        are left; fatal makes it dead at once; a job whose cancel was requested
        becomes cancelled. Returns the job."""
        return self._fail(error, retry_in_ms, fatal, minimal=False, timeout=None)

    def snooze(self, delay_ms: int) -> Dict[str, Any]:
        """Puts the job back for delay_ms without spending the attempt (pending
        at once for 0). Returns the job: delayed, pending, or cancelled when
        its cancel was requested."""
        return self._snooze(delay_ms, timeout=None)

    def log(self, *lines: str) -> Dict[str, Any]:
        """Appends lines (1 to 1000, each at most 2,048 bytes) to the job's log,
        stamped with the service's time. Returns ``{appended, total}``. Stale or
        Gone marks the job lost, and is raised."""
        body = {"token": self.token, "lines": list(lines)}
        return self._fenced(lambda: self._transport.request("POST", job_path(self.queue, self.id, "/logs"), body))

    # The calls as Client.work makes them: with a timeout of their own, and
    # (for the reports) answers without the payload and result.

    def _extend(self, lease_ms: int, progress: Any, timeout: Optional[float]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"token": self.token, "lease_ms": lease_ms}
        if progress is not None:
            body["progress"] = progress
        path = job_path(self.queue, self.id, "/lease")
        answer = self._fenced(lambda: self._transport.request("POST", path, body, timeout=timeout))
        if answer.get("cancel_requested") and self._cancel_reason is None:
            self._cancel_reason = answer.get("cancel_reason") or ""
        return answer

    def _complete(self, result: Any, *, minimal: bool, timeout: Optional[float]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"token": self.token}
        if result is not None:
            body["result"] = result
        return self._report("/complete", body, minimal, timeout)

    def _fail(
        self, error: str, retry_in_ms: Optional[int], fatal: bool, *, minimal: bool, timeout: Optional[float]
    ) -> Dict[str, Any]:
        body: Dict[str, Any] = {"token": self.token, "error": well_formed(error)}
        if retry_in_ms is not None:
            body["retry_in_ms"] = retry_in_ms
        if fatal:
            body["fatal"] = True
        return self._report("/fail", body, minimal, timeout)

    def _snooze(self, delay_ms: int, *, timeout: Optional[float]) -> Dict[str, Any]:
        return self._report("/snooze", {"token": self.token, "delay_ms": delay_ms}, False, timeout)

    def _report(self, suffix: str, body: Dict[str, Any], minimal: bool, timeout: Optional[float]) -> Dict[str, Any]:
        headers = _MINIMAL if minimal else None
        path = job_path(self.queue, self.id, suffix)
        return self._transport.request("POST", path, body, timeout=timeout, headers=headers, expect=JOB)

    def _fenced(self, call: Callable[[], Any]) -> Dict[str, Any]:
        """Makes a call fenced by the token; Stale or Gone marks the job lost."""
        try:
            answer: Dict[str, Any] = call()
        except (Stale, Gone) as refusal:
            if self._lost_by is None:
                self._lost_by = refusal
            raise
        return answer


def jobs_of(transport: Transport, queue: str, answer: Dict[str, Any]) -> List[Job]:
    """The jobs of a claim's answer (checked by answers.CLAIMED)."""
    jobs: List[Dict[str, Any]] = answer["jobs"]
    return [Job(transport, queue, data) for data in jobs]
