"""One job in hand, start to end: the handler with a heartbeat, then its report.

How the handler ended decides the report, as the Go client's Work does:

- the job was lost (an extend answered 409 or 404): nothing, a warning;
- it returned: complete with the result (a result that is not JSON fails
  the job instead), even when a cancel came too late to stop it;
- it raised after a cancel was seen: fail with "cancelled: <reason>", which
  the service turns into the job's cancellation;
- it raised Snooze: snooze; Fatal: fail for good; any other Exception:
  fail with the exception's text (its class name when it has none);
- it raised a BaseException that is no Exception (SystemExit from
  sys.exit(), KeyboardInterrupt, asyncio.CancelledError, GeneratorExit):
  fail with "<class name>: <text>", and log an error. The worker goes on:
  the handler runs in a thread of its own, where such an exception could
  only end that thread; stopping the worker is the stop event's job.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Tuple

from .errors import Fatal, Snooze
from .heartbeat import Heartbeat
from .job import Job
from .report import Report, lost_warning
from .transport import encode_json


def run_job(
    job: Job,
    handler: Callable[[Job], Any],
    lease_ms: int,
    call_timeout: float,
    logger: logging.Logger,
    claimed_at: float,
) -> None:
    """Runs handler on job with a heartbeat beside it, then reports the outcome."""
    logger.info("claimed %s", job.id)
    heartbeat = Heartbeat(job, lease_ms, call_timeout, logger, claimed_at)
    heartbeat.start()
    try:
        returned, value = _call(handler, job, logger)
    finally:
        heartbeat.finish()
    try:
        if job.lost:
            lost_warning(logger, job, job.lost_by)
            return
        report = Report(job, heartbeat.lease_end, call_timeout, logger)
        if returned:
            _report_result(report, value)
        else:
            _report_error(report, job, value)
    finally:
        heartbeat.join()


def _call(handler: Callable[[Job], Any], job: Job, logger: logging.Logger) -> Tuple[bool, Any]:
    """Calls handler; returns (True, its result) or (False, the exception it raised)."""
    try:
        return True, handler(job)
    except Exception as error:  # the handler's failure is the job's, never the worker's
        if not isinstance(error, (Fatal, Snooze)):
            logger.info("handler of job %s raised %s", job.id, type(error).__name__, exc_info=error)
        return False, error
    except BaseException as error:  # SystemExit, KeyboardInterrupt, ...: still the job's
        logger.error(
            "handler of job %s raised %s, which is no Exception: the job is failed and the worker goes on",
            job.id, type(error).__name__, exc_info=error,
        )
        return False, error


def _report_result(report: Report, result: Any) -> None:
    """Completes with result, or fails the job when result is not JSON."""
    try:
        encode_json(result)
    except Exception as error:  # TypeError, ValueError, RecursionError, a __repr__ that raises...
        report.fail(f"the result is not JSON: {error_text(error)}")
        return
    report.complete(result)


def _report_error(report: Report, job: Job, error: BaseException) -> None:
    """Reports the exception the handler raised."""
    if job.cancel_reason is not None:
        reason = job.cancel_reason
        report.fail(f"cancelled: {reason}" if reason else "cancelled")
    elif isinstance(error, Snooze):
        report.snooze(error.delay_ms)
    elif isinstance(error, Fatal):
        report.fail(error_text(error), fatal=True)
    else:
        report.fail(error_text(error))


def error_text(error: BaseException) -> str:
    """What a failed job's last_error says: an Exception's text, or its class
    name when it has none (or its str() raises); for any other BaseException,
    its class name, then ": " and its text when it has one."""
    name = type(error).__name__
    try:
        text = str(error)
    except Exception:  # a __str__ that raises must not leave the job unreported
        text = ""
    if isinstance(error, Exception):
        return text or name
    return f"{name}: {text}" if text else name
