"""What the suites share: the environment the Go harness gives them, clients of
each role, queue names of their own, the control server, and a worker run
in a thread whose log records are kept.

clients/README.md is the contract: ``go test ./clients -run TestPython``
starts the service and the control server and sets the EMQ_TEST_ variables.
Without them the suites fail (never skip), so that a run that tested nothing
cannot pass.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import urllib.request
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

from echo_mq import Client, EmqError
from echo_mq.backoff import retryable

#: The variables clients/README.md lists.
REQUIRED = (
    "EMQ_TEST_URL",
    "EMQ_TEST_ADMIN_KEY",
    "EMQ_TEST_WORKER_KEY",
    "EMQ_TEST_READER_KEY",
    "EMQ_TEST_CONTROL",
    "EMQ_TEST_BEHAVIOUR",
)

#: Tells this run's queues from another's on the same service (the harness
#: runs the suite once per Python on one service).
RUN_ID = uuid.uuid4().hex[:8]


class Env:
    """The service, the keys of each role, and the control server."""

    def __init__(self, values: Dict[str, str]) -> None:
        self.url = values["EMQ_TEST_URL"]
        self.admin_key = values["EMQ_TEST_ADMIN_KEY"]
        self.worker_key = values["EMQ_TEST_WORKER_KEY"]
        self.reader_key = values["EMQ_TEST_READER_KEY"]
        self.control = values["EMQ_TEST_CONTROL"].rstrip("/")
        self.behaviour = values["EMQ_TEST_BEHAVIOUR"]

    def admin(self) -> Client:
        return Client(self.url, self.admin_key)

    def worker(self, signed: bool = False) -> Client:
        """A client with the worker key: sent as a bearer key, or signing."""
        if signed:
            return Client(self.url, signing_key=self.worker_key)
        return Client(self.url, self.worker_key)

    def reader(self) -> Client:
        return Client(self.url, self.reader_key)


def load_env() -> Env:
    """The EMQ_TEST_ variables; AssertionError (a failure) when any is missing."""
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        raise AssertionError(
            f"missing {', '.join(missing)}: this suite runs against a service the Go harness starts; "
            "run it with `go test ./clients -run TestPython` (clients/README.md)"
        )
    return Env({name: os.environ[name] for name in REQUIRED})


def load_behaviour() -> Optional[Dict[str, Any]]:
    """The table of clients/behaviour.json, or None when EMQ_TEST_BEHAVIOUR is not set."""
    path = os.environ.get("EMQ_TEST_BEHAVIOUR")
    if not path:
        return None
    with open(path, encoding="utf-8") as file:
        table: Dict[str, Any] = json.load(file)
    return table


def queue_name(label: str) -> str:
    """A queue name of this run's own, made from label."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", label).strip("-")[:60]
    return f"py-{RUN_ID}-{slug}"


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Polls predicate until it is true (True) or timeout seconds passed (False)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def get_job(client: Client, queue: str, job_id: str, timeout: float = 30) -> Dict[str, Any]:
    """Reads a job, asking again for up to timeout seconds while the service
    answers 503 or not at all (a case restarts Redis under it)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return client.get(queue, job_id)
        except EmqError as error:
            if not retryable(error) or time.monotonic() >= deadline:
                raise
        time.sleep(0.1)


def control(env: Env, path: str, body: Dict[str, Any]) -> Any:
    """POSTs body to the control server; an answer that is not 200 raises."""
    request = urllib.request.Request(
        env.control + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")


class Records(logging.Handler):
    """Keeps every record logged to it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []
        self._lock_records = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock_records:
            self.records.append(record)

    def matching(self, level: int, text: str) -> List[logging.LogRecord]:
        """The records at level or above whose message contains text."""
        with self._lock_records:
            return [r for r in self.records if r.levelno >= level and text in r.getMessage()]

    def dump(self) -> str:
        """Every record, one a line, for a failure's message."""
        with self._lock_records:
            return "\n".join(f"  {r.levelname} {r.getMessage()}" for r in self.records)


def recorded_logger(label: str) -> Tuple[logging.Logger, Records]:
    """A logger of its own for one worker, and the handler that keeps its records."""
    logger = logging.getLogger(f"echo_mq.test.{RUN_ID}.{label}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    records = Records()
    logger.addHandler(records)
    return logger, records


class WorkerThread:
    """Runs client.work in a thread; stop() ends it and keeps what it raised."""

    def __init__(self, client: Client, queue: str, handler: Callable[..., Any], **options: Any) -> None:
        self.stop_event = threading.Event()
        self.error: Optional[BaseException] = None
        self.returned = threading.Event()
        self._thread = threading.Thread(
            target=self._work, args=(client, queue, handler, options), name=f"work {queue}", daemon=True
        )

    def _work(self, client: Client, queue: str, handler: Callable[..., Any], options: Dict[str, Any]) -> None:
        try:
            client.work(queue, handler, stop=self.stop_event, **options)
        except BaseException as error:  # kept for the test to look at
            self.error = error
        finally:
            self.returned.set()

    def start(self) -> "WorkerThread":
        self._thread.start()
        return self

    def stop(self, timeout: float = 90) -> bool:
        """Sets the stop event and waits for work() to return; False when it did not in time."""
        self.stop_event.set()
        return self.join(timeout)

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()
