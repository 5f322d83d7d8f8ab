#!/usr/bin/env python3
"""An echo_mq worker in Python with the echo-mq package (clients/python).

Client.work claims jobs from one queue with a long poll, extends each job's
lease while handle() runs, completes or fails the job (or snoozes it: work
that cannot go ahead yet is put back for later, not failed), backs off when
the service answers 502, 503, 504 or 429 or cannot be reached, and on
SIGTERM or SIGINT finishes the job in hand; then this file exits 0 (a
second signal exits at once, 143 or 130, leaving the job to its lease).

Put your own work in handle() below; examples/README.md describes the loop.
Install the package, then run it:

    pip install --no-build-isolation ./clients/python
    EMQ_URL=http://127.0.0.1:8080 EMQ_QUEUE=jobs python3 worker.py
"""

import logging
import os
import signal
import socket
import sys
import threading
import time

from echo_mq import Client, EmqError, Snooze

client = Client(os.environ.get("EMQ_URL", "http://127.0.0.1:8080"), key=os.environ.get("EMQ_API_KEY") or None)
QUEUE = os.environ.get("EMQ_QUEUE", "jobs")


def handle(job):
    """Does the job's work and returns its result (any JSON value).

    Raise an exception to fail the job: its text becomes the job's last_error
    and the service retries the job with backoff. Raise Snooze(delay_ms) when
    the work cannot go ahead yet: the job comes back after delay_ms, and the
    attempt is not spent. Call job.raise_if_cancelled() at every safe point:
    it raises once the job was cancelled or is no longer ours, so the work
    ends there.

    The example: the payload {"ms": N} works for N milliseconds (default 100)
    in steps of at most 100 ms, each step a safe point; {"fail": "text"}
    fails with that text once it has worked; {"not_before": <Unix ms>}
    snoozes the job until then when it comes earlier.
    """
    payload = job.payload if isinstance(job.payload, dict) else {}
    if "not_before" in payload:
        wait_ms = int(payload["not_before"]) - int(time.time() * 1000)
        if wait_ms > 0:
            raise Snooze(wait_ms)
    ms = int(payload.get("ms", 100))
    worked = 0
    while worked < ms:
        job.raise_if_cancelled()  # a safe point
        step = min(100, ms - worked)
        time.sleep(step / 1000)
        worked += step
    if "fail" in payload:
        raise RuntimeError(str(payload["fail"]))
    return {"worked_ms": worked, "by": "python"}


def main():
    # Every line the loop logs goes to standard error: "claimed <id>",
    # "completed <id>", "backing off 0.5s: 503 EMQUNAVAILABLE", ...
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    log = logging.getLogger("echo_mq")

    # The first SIGTERM or SIGINT stops claiming and finishes the job in
    # hand. A second exits at once, with 128 + the signal's number, leaving
    # the job to its lease: once that lapses, a sweep gives it to another
    # worker.
    stopping = threading.Event()

    def on_signal(signum, frame):
        if stopping.is_set():
            os.write(2, f"stopped at once (a second {signal.Signals(signum).name})\n".encode())
            os._exit(128 + signum)
        os.write(2, b"stopping\n")  # unbuffered: safe inside a signal handler
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    try:
        client.work(
            QUEUE,
            handle,
            stop=stopping,
            lease_ms=int(os.environ.get("EMQ_LEASE_MS", "30000")),
            wait_ms=int(os.environ.get("EMQ_WAIT_MS", "10000")),
            worker=os.environ.get("EMQ_WORKER") or f"python-{socket.gethostname()}-{os.getpid()}",
        )
    except EmqError:
        return 1  # a claim refused for good: work() logged "claim refused: ..."
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
