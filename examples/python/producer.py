#!/usr/bin/env python3
"""Enqueues jobs on an echo_mq queue, standard library only.

Each argument is one job's payload as JSON; with no argument it enqueues one
job {"ms": 1000}. It prints "<id> <state>" per job:

    python3 producer.py '{"ms": 2000}' '{"fail": "boom"}'

It reads EMQ_URL, EMQ_QUEUE and EMQ_API_KEY like the worker, and backs off
like it when the service answers 503 or cannot be reached.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request
from http.client import HTTPException

URL = os.environ.get("EMQ_URL", "http://127.0.0.1:8080").rstrip("/")
QUEUE = os.environ.get("EMQ_QUEUE", "jobs")
API_KEY = os.environ.get("EMQ_API_KEY", "")


def enqueue(payload):
    """POSTs one job; returns (status, answer), retrying on 503 and connection errors.

    Sending the same enqueue again can make a second job if the first one
    was stored but its answer lost; give jobs an "id" to make that safe.
    """
    request = urllib.request.Request(
        f"{URL}/queues/{QUEUE}/jobs",
        data=json.dumps({"payload": payload}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if API_KEY:
        request.add_header("Authorization", f"Bearer {API_KEY}")
    backoff = 0.5
    while True:
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            with error:
                body = error.read().decode(errors="replace")
                if error.code != 503:
                    return error.code, body
                value = error.headers.get("Retry-After", "")
                pause = float(value) if value.isdigit() else backoff
                why = "503"
        except (urllib.error.URLError, OSError, HTTPException) as error:
            pause = backoff
            why = str(getattr(error, "reason", error))
        print(f"backing off {pause:g}s: {why}", file=sys.stderr, flush=True)
        time.sleep(pause)
        backoff = min(backoff * 2, 30)


def main(args):
    try:
        payloads = [json.loads(arg) for arg in args] or [{"ms": 1000}]
    except ValueError as error:
        print(f"a payload is not JSON: {error}", file=sys.stderr)
        return 2
    for payload in payloads:
        status, answer = enqueue(payload)
        if status not in (200, 201):
            print(f"enqueue refused: {status} {answer}", file=sys.stderr)
            return 1
        print(f"{answer['id']} {answer['state']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
