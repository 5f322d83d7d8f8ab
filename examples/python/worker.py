#!/usr/bin/env python3
"""An echo_mq worker in Python, standard library only.

It claims jobs from one queue with a long poll, extends each job's lease on a
timer while the work runs, stops at a safe point when the job is cancelled,
completes or fails the job (or snoozes it: work that cannot go ahead yet is
put back for later, not failed), backs off when the service answers 502, 503,
504 or 429 or cannot be reached, and exits 0 on SIGTERM or SIGINT once the job in
hand is done (a second signal exits at once, 143 or 130, leaving the job to
its lease).

Put your own work in handle() below; the rest is the loop every echo_mq
worker runs (see examples/README.md). Run it with:

    EMQ_URL=http://127.0.0.1:8080 EMQ_QUEUE=jobs python3 worker.py
"""

import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from http.client import HTTPException

URL = os.environ.get("EMQ_URL", "http://127.0.0.1:8080").rstrip("/")
QUEUE = os.environ.get("EMQ_QUEUE", "jobs")
API_KEY = os.environ.get("EMQ_API_KEY", "")
LEASE_MS = int(os.environ.get("EMQ_LEASE_MS", "30000"))
WAIT_MS = int(os.environ.get("EMQ_WAIT_MS", "10000"))
WORKER = os.environ.get("EMQ_WORKER") or f"python-{socket.gethostname()}-{os.getpid()}"

# How long a call may take before it counts as a connection error: a claim
# waits up to WAIT_MS for a job, so it gets that much more; an extend gets at
# most a third of the lease, the time until the next one is due.
CALL_TIMEOUT_S = 30
CLAIM_TIMEOUT_S = CALL_TIMEOUT_S + WAIT_MS / 1000
EXTEND_EVERY_S = LEASE_MS / 3 / 1000
EXTEND_TIMEOUT_S = min(CALL_TIMEOUT_S, EXTEND_EVERY_S)

# The longest wait between two tries of a call (an extend waits at most until
# the next one is due), and the answers worth another try: a proxy or the
# service that cannot answer now (502, 503 EMQUNAVAILABLE or EMQBUSY, 504, and
# 429 EMQBUSY: the API key has its share of waiting claims).
MAX_BACKOFF_S = 30
RETRYABLE = (429, 502, 503, 504)


class Stopped(Exception):
    """Raised by handle() at a safe point when should_stop() says so."""


class Snooze(Exception):
    """Raised by handle() when the work cannot go ahead yet (a rate limit
    upstream, a file not there yet): the job is put back for delay_ms
    without spending its attempt, instead of failing."""

    def __init__(self, delay_ms):
        super().__init__(f"snooze for {delay_ms} ms")
        self.delay_ms = max(0, int(delay_ms))


# ---------------------------------------------------------------------------
# Your work goes here.
# ---------------------------------------------------------------------------

def handle(job, should_stop):
    """Does the job's work and returns its result (any JSON value).

    Raise an exception to fail the job: its text becomes the job's last_error
    and the service retries the job with backoff. Raise Snooze(delay_ms) when
    the work cannot go ahead yet: the job comes back after delay_ms, and the
    attempt is not spent. Call should_stop() at every safe point and raise
    Stopped when it returns True: the job was cancelled or is no longer ours,
    so the work must end there.

    The example: the payload {"ms": N} works for N milliseconds (default 100)
    in steps of at most 100 ms, each step a safe point; {"fail": "text"}
    fails with that text once it has worked; {"not_before": <Unix ms>}
    snoozes the job until then when it comes earlier.
    """
    payload = job.get("payload")
    if not isinstance(payload, dict):
        payload = {}
    if "not_before" in payload:
        wait_ms = int(payload["not_before"]) - int(time.time() * 1000)
        if wait_ms > 0:
            raise Snooze(wait_ms)
    ms = int(payload.get("ms", 100))
    worked = 0
    while worked < ms:
        if should_stop():
            raise Stopped()
        step = min(100, ms - worked)
        time.sleep(step / 1000)
        worked += step
    if "fail" in payload:
        raise RuntimeError(str(payload["fail"]))
    return {"worked_ms": worked, "by": "python"}


# ---------------------------------------------------------------------------
# Talking to the service.
# ---------------------------------------------------------------------------

def log(line):
    """Writes one event line to standard error."""
    print(line, file=sys.stderr, flush=True)


def send(path, data, timeout):
    """POSTs data (JSON bytes) to the queue's path; returns (status, headers, answer).

    Any HTTP status is an answer; only a connection error or a timeout raises.
    """
    request = urllib.request.Request(
        f"{URL}/queues/{QUEUE}{path}",
        data=data,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if API_KEY:
        request.add_header("Authorization", f"Bearer {API_KEY}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, parse(response.read())
    except urllib.error.HTTPError as error:  # a 4xx or 5xx answer
        with error:
            return error.code, error.headers, parse(error.read())


def parse(raw):
    """Decodes a JSON answer; anything else (a proxy's HTML page) becomes {}."""
    try:
        answer = json.loads(raw)
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def call(path, body, timeout=CALL_TIMEOUT_S, max_pause=MAX_BACKOFF_S, give_up=None, retryable=RETRYABLE):
    """Sends a request until it gets an answer that is not worth another try.

    On a retryable answer (429, 502, 503, 504), a connection error or a timeout it
    waits Retry-After seconds when the answer gives them, or else 0.5 s
    doubling, never more than max_pause, and sends the same request again.
    Sending a complete, a fail or a snooze again is safe: the service answers
    a repeat as the first time. Returns (status, answer), or (None, None)
    when the event give_up is set while it waits.
    """
    data = json.dumps(body).encode()
    backoff = 0.5
    while True:
        try:
            status, headers, answer = send(path, data, timeout)
            if status not in retryable:
                return status, answer
            pause = retry_after(headers) or backoff
            why = f"{status} {answer.get('code', '')}".strip()
        except (urllib.error.URLError, OSError, HTTPException) as error:  # timeouts are OSErrors
            pause = backoff
            why = str(getattr(error, "reason", error)) or type(error).__name__
        pause = min(pause, max_pause)
        log(f"backing off {pause:g}s: {why}")
        if give_up is None:
            time.sleep(pause)
        elif give_up.wait(pause):
            return None, None
        backoff = min(backoff * 2, MAX_BACKOFF_S)


def retry_after(headers):
    """The Retry-After header in seconds, or None when absent or an HTTP date."""
    value = headers.get("Retry-After", "").strip()
    return float(value) if value.isascii() and value.isdigit() else None


def refusal(status, answer):
    """Says what a refusal was, for a log line or a job's error: "413 EMQTOOLARGE: <detail>"."""
    code = answer.get("code")
    return f"{status} {code}: {answer.get('detail', '')}" if code else f"{status}: {answer.get('detail', '')}"


# ---------------------------------------------------------------------------
# The checkpoint: extends the lease while the work runs.
# ---------------------------------------------------------------------------

class Checkpoint(threading.Thread):
    """Extends a job's lease every LEASE_MS / 3 until finish() is called.

    It sets self.stop when the answer says the job was cancelled, and keeps
    the reason in self.cancel_reason: the work stops at its next safe point,
    but the extends go on until it has, so that the job is not swept as
    stalled meanwhile. When the job is no longer ours (409 EMQSTALE or 404
    EMQGONE) it sets self.stop and self.lost, and ends.
    """

    def __init__(self, job):
        super().__init__(daemon=True)
        self.job = job
        self.stop = threading.Event()
        self.cancel_reason = None
        self.lost = False
        self._finished = threading.Event()

    def run(self):
        path = f"/jobs/{self.job['id']}/lease"
        body = {"token": self.job["token"], "lease_ms": LEASE_MS}
        while not self._finished.wait(EXTEND_EVERY_S):
            status, answer = call(path, body, EXTEND_TIMEOUT_S, EXTEND_EVERY_S, give_up=self._finished)
            if status is None:  # the work ended while we backed off
                return
            if status in (404, 409):
                self.lost = True
                self.stop.set()
                return
            if status != 200:
                log(f"extend {self.job['id']} refused: {refusal(status, answer)}")
            elif answer.get("cancel_requested") and self.cancel_reason is None:
                self.cancel_reason = answer.get("cancel_reason") or ""
                self.stop.set()

    def finish(self):
        """Stops the timer and waits for an extend in flight to end."""
        self._finished.set()
        self.join()


# ---------------------------------------------------------------------------
# The loop.
# ---------------------------------------------------------------------------

def work(job):
    """Runs handle() on one claimed job and reports how it ended."""
    job_id = job["id"]
    log(f"claimed {job_id}")
    checkpoint = Checkpoint(job)
    checkpoint.start()
    result, error, finished, snooze_ms = None, None, False, None
    try:
        result = handle(job, checkpoint.stop.is_set)
        json.dumps(result)  # a result that is not JSON fails the job, not the worker
        finished = True
    except Stopped:
        error = "stopped"
    except Snooze as exc:  # not a failure: the job comes back later
        snooze_ms = exc.delay_ms
    except Exception as exc:  # the work failed: report it, keep the worker alive
        error = str(exc) or type(exc).__name__
    finally:
        checkpoint.finish()

    if checkpoint.lost:
        log(f"lost {job_id}")  # someone else holds it now, or it was removed: report nothing
    elif finished:  # also when a cancel came too late to stop it
        complete(job, result)
    elif checkpoint.cancel_reason is not None:
        reason = checkpoint.cancel_reason
        fail(job, f"cancelled: {reason}", f"cancelled {job_id}: {reason}")
    elif snooze_ms is not None:
        snooze(job, snooze_ms)
    else:
        fail(job, error, f"failed {job_id}: {error}")


def complete(job, result):
    """Completes the job with its result. A result the service refuses (400
    not valid, 413 too large) fails the job instead, so that it does not stay
    active until its lease lapses."""
    status, answer = call(f"/jobs/{job['id']}/complete", {"token": job["token"], "result": result})
    if status == 200:
        log(f"completed {job['id']}")
    elif status in (404, 409):
        log(f"lost {job['id']}")
    else:
        error = f"result refused: {refusal(status, answer)}"
        fail(job, error, f"failed {job['id']}: {error}")


def snooze(job, delay_ms):
    """Puts the job back for delay_ms without spending its attempt. A job
    whose cancel was requested is cancelled instead. A snooze the service
    refuses (400: a delay over a year) fails the job, so that it does not
    stay active until its lease lapses."""
    status, answer = call(f"/jobs/{job['id']}/snooze", {"token": job["token"], "delay_ms": delay_ms})
    if status == 200 and answer.get("state") == "cancelled":
        log(f"cancelled {job['id']}: {answer.get('cancel_reason') or ''}")
    elif status == 200:
        log(f"snoozed {job['id']}: {delay_ms} ms")
    elif status in (404, 409):
        log(f"lost {job['id']}")
    else:
        error = f"snooze refused: {refusal(status, answer)}"
        fail(job, error, f"failed {job['id']}: {error}")


def fail(job, error, done_line):
    """Fails the job with the error text, and logs done_line."""
    status, answer = call(f"/jobs/{job['id']}/fail", {"token": job["token"], "error": error})
    if status == 200:
        log(done_line)
    elif status in (404, 409):
        log(f"lost {job['id']}")
    else:
        log(f"fail {job['id']} refused: {refusal(status, answer)}")


def main():
    stopping = threading.Event()

    def on_signal(signum, frame):
        if stopping.is_set():  # a second signal: exit now, the lease gives the job back
            os.write(2, f"stopped at once (a second {signal.Signals(signum).name})\n".encode())
            os._exit(128 + signum)
        os.write(2, b"stopping\n")  # unbuffered: safe inside a signal handler
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    # Any 5xx (or 429) on a claim is worth another try: a claim changes
    # nothing until it is answered.
    claim_retryable = (429, *range(500, 600))
    claim = {"lease_ms": LEASE_MS, "wait_ms": WAIT_MS, "worker": WORKER}
    while not stopping.is_set():
        # A signal does not cut the long poll short: a job it brings is worked.
        status, answer = call("/claim", claim, CLAIM_TIMEOUT_S, give_up=stopping, retryable=claim_retryable)
        if status is None:
            break
        if status != 200:  # a wrong key, queue name or setting: asking again will not help
            log(f"claim refused: {refusal(status, answer)}")
            return 1
        for job in answer.get("jobs", []):  # an empty list: nothing came, ask again
            work(job)
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
