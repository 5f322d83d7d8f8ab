#!/usr/bin/env python3
"""Enqueues jobs on an echo_mq queue, standard library only.

Each argument is one job's payload as JSON; with no argument it enqueues one
job {"ms": 1000}. It prints "<id> <state>" per job:

    python3 producer.py '{"ms": 2000}' '{"fail": "boom"}'

It reads EMQ_URL, EMQ_QUEUE and EMQ_API_KEY like the worker, and backs off
like it when the service answers 502, 503 or 504 or cannot be reached. Each
job gets its id here, so sending an enqueue again never makes a second job.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid
from http.client import HTTPException

URL = os.environ.get("EMQ_URL", "http://127.0.0.1:8080").rstrip("/")
QUEUE = os.environ.get("EMQ_QUEUE", "jobs")
API_KEY = os.environ.get("EMQ_API_KEY", "")

CALL_TIMEOUT_S = 30  # a call that takes longer counts as a connection error
MAX_BACKOFF_S = 30
RETRYABLE = (502, 503, 504)


def enqueue(job):
    """POSTs one job; returns (status, answer), retrying while that is worth it.

    On a 502, 503 or 504 answer, a connection error or a timeout it waits
    Retry-After seconds when the answer gives them, or else 0.5 s doubling,
    up to 30 s, and sends the same job again. That is safe because the job
    has an id: if the first try was stored but its answer lost, the service
    answers the next with the job it has (200) instead of making another.
    """
    request = urllib.request.Request(
        f"{URL}/queues/{QUEUE}/jobs",
        data=json.dumps(job).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if API_KEY:
        request.add_header("Authorization", f"Bearer {API_KEY}")
    backoff = 0.5
    while True:
        try:
            with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            with error:
                body = error.read().decode(errors="replace")
                if error.code not in RETRYABLE:
                    return error.code, body
                value = error.headers.get("Retry-After", "").strip()
                # Seconds only: an HTTP date falls back to our own pause.
                pause = float(value) if value.isascii() and value.isdigit() else backoff
                why = str(error.code)
        except (urllib.error.URLError, OSError, HTTPException) as error:  # timeouts are OSErrors
            pause = backoff
            why = str(getattr(error, "reason", error)) or type(error).__name__
        pause = min(pause, MAX_BACKOFF_S)
        print(f"backing off {pause:g}s: {why}", file=sys.stderr, flush=True)
        time.sleep(pause)
        backoff = min(backoff * 2, MAX_BACKOFF_S)


def strict_json(text):
    """Decodes JSON text, refusing the NaN and Infinity that json.loads lets through."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def main(args):
    # Every argument is checked before any job is sent: a typo in the third
    # payload must not leave the first two enqueued.
    try:
        payloads = [strict_json(arg) for arg in args] or [{"ms": 1000}]
    except ValueError as error:
        print(f"a payload is not JSON: {error}", file=sys.stderr)
        return 2
    for payload in payloads:
        status, answer = enqueue({"id": str(uuid.uuid4()), "payload": payload})
        if status not in (200, 201):
            print(f"enqueue refused: {status} {answer}", file=sys.stderr)
            return 1
        print(f"{answer['id']} {answer['state']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
