#!/usr/bin/env python3
"""Enqueues jobs on an echo_mq queue with the echo-mq package (clients/python).

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
import uuid

from echo_mq import Client, EmqError, retryable

client = Client(os.environ.get("EMQ_URL", "http://127.0.0.1:8080"), key=os.environ.get("EMQ_API_KEY") or None)
QUEUE = os.environ.get("EMQ_QUEUE", "jobs")


def enqueue(payload):
    """Enqueues one job and returns it, retrying while that is worth it.

    On a 502, 503 or 504 answer, or none, it waits Retry-After seconds when
    the answer gives them, or else 0.5 s doubling, up to 30 s, and sends the
    same job again. That is safe because the job has an id: if the first try
    was stored but its answer lost, the service answers the next with the
    job it has instead of making another.
    """
    job_id = str(uuid.uuid4())
    backoff = 0.5
    while True:
        try:
            return client.enqueue(QUEUE, payload, id=job_id)
        except EmqError as error:
            if not retryable(error):
                raise
            pause = min(error.retry_after or backoff, 30)
            print(f"backing off {pause:g}s: {error.summary()}", file=sys.stderr, flush=True)
            time.sleep(pause)
            backoff = min(backoff * 2, 30)


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
        try:
            job = enqueue(payload)
        except EmqError as error:
            print(f"enqueue refused: {error.summary()}", file=sys.stderr)
            return 1
        print(f"{job['id']} {job['state']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
