#!/usr/bin/env python3
"""An echo_mq push receiver in Python, standard library only.

echo_mq POSTs each job of a queue with a push target to this server
(docs/push.md). It checks the Standard Webhooks signature, does the work,
and answers: 200 with a JSON result completes the job, another status fails
the attempt (echo_mq retries it under the job's backoff). A job whose
payload says {"long": true} is answered 202 at once and worked in the
background; the receiver then completes it itself over the worker routes,
with the job's token, as any worker does.

The signature check is the Standard Webhooks scheme written out with hmac;
the `standardwebhooks` package on PyPI does the same in one call. Run it with:

    EMQ_PUSH_SECRET=whsec_... EMQ_URL=http://127.0.0.1:8080 PORT=9000 python3 receiver.py
"""

import base64
import hashlib
import hmac
import json
import os
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

URL = os.environ.get("EMQ_URL", "http://127.0.0.1:8080").rstrip("/")
API_KEY = os.environ.get("EMQ_API_KEY", "")
SECRET = os.environ["EMQ_PUSH_SECRET"]
PORT = int(os.environ.get("PORT", "9000"))
TOLERANCE_S = 5 * 60  # a delivery older (or newer) than this is refused: a replay


def verified(headers, body):
    """Whether a delivery is signed with SECRET (Standard Webhooks v1)."""
    msg_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    if not msg_id or not stamp.isdigit() or abs(time.time() - int(stamp)) > TOLERANCE_S:
        return False
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    signed = f"{msg_id}.{stamp}.".encode() + body
    want = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for signature in headers.get("webhook-signature", "").split():
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value, want):
            return True
    return False


def handle(job):
    """The work. Put yours here: a returned value is the job's result."""
    return {"handled": job["id"]}


def report(job, result):
    """Completes a job this receiver answered 202, with its token."""
    path = f"/queues/{job['queue']}/jobs/{job['id']}/complete"
    body = json.dumps({"token": job["token"], "result": result}).encode()
    headers = {"Content-Type": "application/json"}
    if API_KEY:
        headers["Authorization"] = f"Bearer {API_KEY}"
    request = urllib.request.Request(URL + path, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()


def work_later(job):
    time.sleep(job["payload"].get("ms", 100) / 1000)
    report(job, {**handle(job), "long": True})


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not verified(self.headers, body):
            return self.answer(401, {"error": "bad signature"})
        job = json.loads(body)
        payload = job.get("payload") or {}
        if isinstance(payload, dict) and payload.get("long"):
            threading.Thread(target=work_later, args=(job,), daemon=True).start()
            return self.answer(202, {})
        if isinstance(payload, dict) and payload.get("fail"):
            return self.answer(500, {"error": "failed on purpose"})
        self.answer(200, handle(job))

    def answer(self, status, value):
        text = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, *args):
        pass  # one line per delivery is echo_mq's job (its metrics and logs)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Receiver)
    print(f"receiver listening on 127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()
