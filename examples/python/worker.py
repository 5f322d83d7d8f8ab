#!/usr/bin/env python3
"""An echo_mq worker in Python, standard library only.

It claims jobs from one queue with a long poll, extends each job's lease on a
timer while the work runs, stops at a safe point when the job is cancelled,
completes or fails the job, backs off when the service answers 503 or cannot
be reached, and exits 0 on SIGTERM or SIGINT once the job in hand is done.

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

# How long any call may take before it counts as a connection error: a claim
# waits up to WAIT_MS for a job, so it gets that much more.
CALL_TIMEOUT_S = 30
MAX_BACKOFF_S = 30


class Stopped(Exception):
    """Raised by handle() at a safe point when should_stop() says so."""


# ---------------------------------------------------------------------------
# Your work goes here.
# ---------------------------------------------------------------------------

def handle(job, should_stop):
    """Does the job's work and returns its result (any JSON value).

    Raise an exception to fail the job: its text becomes the job's last_error
    and the service retries the job with backoff. Call should_stop() at every
    safe point and raise Stopped when it returns True: the job was cancelled
    or is no longer ours, so the work must end there.

    The example: the payload {"ms": N} works for N milliseconds (default 100)
    in steps of at most 100 ms, each step a safe point; {"fail": "text"}
    fails with that text once it has worked.
    """
    payload = job.get("payload")
    if not isinstance(payload, dict):
        payload = {}
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


def send(path, body, timeout):
    """POSTs body as JSON to the queue's path; returns (status, headers, answer).

    Any HTTP status is an answer; only a connection error raises.
    """
    request = urllib.request.Request(
        f"{URL}/queues/{QUEUE}{path}",
        data=json.dumps(body).encode(),
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


def call(path, body, timeout=CALL_TIMEOUT_S, give_up=None):
    """Sends a request until it gets an answer other than 503.

    On 503 (EMQUNAVAILABLE, EMQBUSY) it waits Retry-After seconds, or 0.5 s
    doubling up to 30 s when there is none, and sends the same request again;
    on a connection error likewise. Sending a complete or a fail again is
    safe: the service answers a repeat as the first time. Returns (status,
    answer), or (None, None) when the event give_up is set while it waits.
    """
    backoff = 0.5
    while True:
        try:
            status, headers, answer = send(path, body, timeout)
            if status != 503:
                return status, answer
            pause = retry_after(headers) or backoff
            why = f"503 {answer.get('code', '')}".strip()
        except (urllib.error.URLError, OSError, HTTPException) as error:
            pause = backoff
            why = str(getattr(error, "reason", error))
        log(f"backing off {pause:g}s: {why}")
        if give_up is None:
            time.sleep(pause)
        elif give_up.wait(pause):
            return None, None
        backoff = min(backoff * 2, MAX_BACKOFF_S)


def retry_after(headers):
    """The Retry-After header in seconds, or None when absent or a date."""
    value = headers.get("Retry-After", "")
    return float(value) if value.strip().isdigit() else None


# ---------------------------------------------------------------------------
# The checkpoint: extends the lease while the work runs.
# ---------------------------------------------------------------------------

class Checkpoint(threading.Thread):
    """Extends a job's lease every LEASE_MS / 3 until finish() is called.

    It sets self.stop when the answer says the job was cancelled (and keeps
    the reason in self.cancel_reason) or when the job is no longer ours: a
    409 EMQSTALE or 404 EMQGONE (self.lost).
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
        while not self._finished.wait(LEASE_MS / 3 / 1000):
            status, answer = call(path, body, give_up=self._finished)
            if status is None:  # the work ended while we backed off
                return
            if status in (404, 409):
                self.lost = True
                self.stop.set()
                return
            if status != 200:
                log(f"extend {self.job['id']} refused: {status} {answer.get('detail', '')}")
            elif answer.get("cancel_requested"):
                self.cancel_reason = answer.get("cancel_reason") or ""
                self.stop.set()
                return

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
    result, error, stopped = None, None, False
    try:
        result = handle(job, checkpoint.stop.is_set)
    except Stopped:
        stopped = True
    except Exception as exc:  # the work failed: report it, keep the worker alive
        error = str(exc) or type(exc).__name__
    finally:
        checkpoint.finish()

    if checkpoint.lost:
        log(f"lost {job_id}")  # someone else holds it now: report nothing
    elif stopped and checkpoint.cancel_reason is not None:
        reason = checkpoint.cancel_reason
        report(job, "fail", {"error": f"cancelled: {reason}"}, f"cancelled {job_id}: {reason}")
    elif error is not None or stopped:
        error = error or "stopped"
        report(job, "fail", {"error": error}, f"failed {job_id}: {error}")
    else:
        report(job, "complete", {"result": result}, f"completed {job_id}")


def report(job, verb, body, done_line):
    """Completes or fails the job with its token, and logs done_line."""
    status, answer = call(f"/jobs/{job['id']}/{verb}", {"token": job["token"], **body})
    if status == 200:
        log(done_line)
    elif status in (404, 409):
        log(f"lost {job['id']}")
    else:
        log(f"{verb} {job['id']} refused: {status} {answer.get('detail', '')}")


def main():
    stopping = threading.Event()

    def on_signal(signum, frame):
        if not stopping.is_set():
            os.write(2, b"stopping\n")  # unbuffered: safe inside a signal handler
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    claim = {"lease_ms": LEASE_MS, "wait_ms": WAIT_MS, "worker": WORKER}
    while not stopping.is_set():
        # A signal does not cut the long poll short: a job it brings is worked.
        status, answer = call("/claim", claim, CALL_TIMEOUT_S + WAIT_MS / 1000, give_up=stopping)
        if status is None:
            break
        if status != 200:  # a wrong key, queue name or setting: asking again will not help
            log(f"claim refused: {status} {answer.get('detail', '')}")
            return 1
        for job in answer.get("jobs", []):  # an empty list: nothing came, ask again
            work(job)
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
