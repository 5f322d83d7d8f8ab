"""The table both client packages must satisfy: clients/behaviour.json.

Every entry of "errors" and every one of "cases" is a test method of its
own, made from the table, run as clients/README.md says: each case on a
queue of its own, its jobs worked by ``Client.work`` with a handler that
runs each job's payload.script, the jobs' fields checked once each is in
its expected state, and the worker's log records matched against "logs".
A step, provoke, expectation or auth this suite does not know fails.
"""

from __future__ import annotations

import logging
import time
import unittest
from typing import Any, Callable, Dict, List

import harness

import echo_mq
from echo_mq import Client, EmqError, Fatal, Job
from echo_mq.errors import error_from_answer

TABLE = harness.load_behaviour()

#: How long a case's jobs have to reach their states (a busy machine is slow).
STATE_DEADLINE_S = 60
#: The claims' wait in the cases: short, so that a stop (which lets a claim
#: already sent answer) ends each case soon.
WAIT_MS = 1000
#: The levels a "logs" entry may name.
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
#: The job fields an expectation may name, read from GET .../jobs/{id}.
JOB_FIELDS = ("state", "result", "last_error", "attempts", "stalled", "cancel_reason")


class ScriptHandler:
    """The handler of a case: runs each job's payload.script (clients/README.md)."""

    def __init__(self, env: harness.Env, admin: Client, queue: str) -> None:
        self._env = env
        self._admin = admin
        self._queue = queue
        self.problems: List[str] = []  # what went wrong that the job's end may not show
        self._steps: Dict[str, Callable[[Job, Dict[str, Any]], Any]] = {
            "raise": self._raise,
            "raise_on_attempt": self._raise_on_attempt,
            "fatal": self._fatal,
            "sleep": self._sleep,
            "cancel": self._cancel,
            "await_cancel": self._await_cancel,
            "steal": self._steal,
            "restart_redis": self._restart_redis,
            "log": self._log,
        }

    def known(self, step: Dict[str, Any]) -> bool:
        return step.get("do") == "return" or step.get("do") in self._steps

    def __call__(self, job: Job) -> Any:
        for step in job.payload["script"]:
            if step["do"] == "return":
                return step["value"]
            if step["do"] not in self._steps:
                self.problems.append(f"job {job.id}: unknown step {step!r}")
                raise RuntimeError(f"unknown step {step['do']!r}")
            self._steps[step["do"]](job, step)
        return None

    def _raise(self, job: Job, step: Dict[str, Any]) -> None:
        raise RuntimeError(step["message"])

    def _raise_on_attempt(self, job: Job, step: Dict[str, Any]) -> None:
        if job.attempts == step["attempt"]:
            raise RuntimeError(step["message"])

    def _fatal(self, job: Job, step: Dict[str, Any]) -> None:
        raise Fatal(step["message"])

    def _sleep(self, job: Job, step: Dict[str, Any]) -> None:
        time.sleep(step["ms"] / 1000)

    def _cancel(self, job: Job, step: Dict[str, Any]) -> None:
        answer = self._admin.cancel(self._queue, job.id, reason=step["reason"])
        if answer.get("state") != "active" or not answer.get("cancel_requested"):  # a 200, not a 202
            self.problems.append(f"job {job.id}: cancel answered {answer!r}, want 202 cancel requested")

    def _await_cancel(self, job: Job, step: Dict[str, Any]) -> None:
        deadline = time.monotonic() + step["ms"] / 1000
        while time.monotonic() < deadline:
            job.raise_if_cancelled()
            time.sleep(0.02)
        raise RuntimeError("no cancel seen")

    def _steal(self, job: Job, step: Dict[str, Any]) -> None:
        harness.control(self._env, "/steal", {"queue": self._queue, "id": job.id})

    def _restart_redis(self, job: Job, step: Dict[str, Any]) -> None:
        harness.control(self._env, "/restart-redis", {"down_ms": step["down_ms"]})

    def _log(self, job: Job, step: Dict[str, Any]) -> None:
        job.log(*step["lines"])


class Behaviour(unittest.TestCase):
    """One test per error entry and per case of clients/behaviour.json."""

    env: harness.Env
    admin: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.env = harness.load_env()
        cls.admin = cls.env.admin()

    def test_table_was_read(self) -> None:
        self.assertIsNotNone(TABLE, "EMQ_TEST_BEHAVIOUR is not set")
        assert TABLE is not None
        self.assertTrue(TABLE["errors"], "the table has no errors")
        self.assertTrue(TABLE["cases"], "the table has no cases")

    # --- errors ---------------------------------------------------------

    def check_error(self, entry: Dict[str, Any]) -> None:
        cls = getattr(echo_mq, entry["name"], None)
        if not (isinstance(cls, type) and issubclass(cls, EmqError)):
            self.fail(f"echo_mq.{entry['name']} is not an EmqError class")
        problem = {"type": "about:blank", "title": "t", "status": entry["status"], "detail": "d", "code": entry["code"]}
        made = error_from_answer(entry["status"], problem)
        self.assertIs(type(made), cls)
        self.assertEqual((made.status, made.code, made.detail), (entry["status"], entry["code"], "d"))
        if "provoke" in entry:
            self.check_provoked(entry, cls)

    def check_provoked(self, entry: Dict[str, Any], cls: type) -> None:
        provoke = getattr(self, f"provoke_{entry['provoke']}", None)
        if provoke is None:
            self.fail(f"unknown provoke {entry['provoke']!r}")
        queue = harness.queue_name(f"error-{entry['code']}")
        with self.assertRaises(EmqError) as raised:
            provoke(queue)
        error = raised.exception
        self.assertIs(type(error), cls, f"{entry['provoke']} raised {error!r}")
        self.assertEqual((error.status, error.code), (entry["status"], entry["code"]))

    def claim_one(self, queue: str) -> Job:
        self.admin.enqueue(queue, {"n": 1}, id="j")
        jobs = self.env.worker().claim(queue)
        self.assertEqual([job.id for job in jobs], ["j"])
        return jobs[0]

    def provoke_complete_with_wrong_token(self, queue: str) -> None:
        job = self.claim_one(queue)
        job.token += 1
        job.complete("x")

    def provoke_get_missing_job(self, queue: str) -> None:
        self.admin.get(queue, "never-enqueued")

    def provoke_cancel_completed_job(self, queue: str) -> None:
        self.claim_one(queue).complete("done")
        self.admin.cancel(queue, "j", reason="too late")

    def provoke_claim_count_zero(self, queue: str) -> None:
        self.env.worker().claim(queue, count=0)

    def provoke_wrong_key(self, queue: str) -> None:
        Client(self.env.url, "not-a-key-of-this-service").get(queue, "j")

    def provoke_reader_key_enqueues(self, queue: str) -> None:
        self.env.reader().enqueue(queue, {"n": 1})

    # --- cases ----------------------------------------------------------

    def run_case(self, number: int, case: Dict[str, Any]) -> None:
        queue = harness.queue_name(f"case-{number}")
        handler = ScriptHandler(self.env, self.admin, queue)
        self.check_case_is_known(case, handler)
        for job in case["jobs"]:
            self.admin.enqueue(queue, job["payload"], id=job["id"], **job.get("options", {}))
        options = case.get("work", {})
        logger, records = harness.recorded_logger(queue)
        worker = harness.WorkerThread(
            self.env.worker(signed=case.get("auth") == "signed"),
            queue,
            handler,
            concurrency=options.get("concurrency", 1),
            lease_ms=options.get("lease_ms", 30000),
            wait_ms=WAIT_MS,
            logger=logger,
        ).start()
        try:
            reached = harness.wait_until(lambda: self.in_expected_states(queue, case), STATE_DEADLINE_S, 0.1)
        finally:
            stopped = worker.stop()
        jobs = {job_id: harness.get_job(self.admin, queue, job_id) for job_id in case["expect"]}
        context = f"\njobs: {jobs}\nworker log:\n{records.dump()}"
        self.assertTrue(reached, f"the jobs did not reach their states within {STATE_DEADLINE_S} s{context}")
        self.assertTrue(stopped, f"work() did not return once stopped{context}")
        self.assertIsNone(worker.error, f"work() raised{context}")
        self.assertEqual(handler.problems, [], context)
        for job_id, expect in case["expect"].items():
            self.check_job(queue, job_id, jobs[job_id], expect, context)
        for entry in case.get("logs", []):
            self.check_logged(records, entry, context)

    def check_case_is_known(self, case: Dict[str, Any], handler: ScriptHandler) -> None:
        self.assertIn(case.get("auth", "bearer"), ("bearer", "signed"), "unknown auth")
        self.assertLessEqual(set(case.get("work", {})), {"concurrency", "lease_ms"}, "unknown work option")
        for job in case["jobs"]:
            for step in job["payload"]["script"]:
                self.assertTrue(handler.known(step), f"job {job['id']}: unknown step {step!r}")
        for job_id, expect in case["expect"].items():
            self.assertLessEqual(set(expect), set(JOB_FIELDS) | {"log_lines"}, f"job {job_id}: unknown expectation")
        for entry in case.get("logs", []):
            self.assertTrue({"job", "contains"} & set(entry), f"log entry {entry!r} names no job nor text")

    def in_expected_states(self, queue: str, case: Dict[str, Any]) -> bool:
        for job_id, expect in case["expect"].items():
            if "state" in expect and harness.get_job(self.admin, queue, job_id)["state"] != expect["state"]:
                return False
        return True

    def check_job(self, queue: str, job_id: str, job: Dict[str, Any], expect: Dict[str, Any], context: str) -> None:
        for field, want in expect.items():
            if field == "log_lines":
                got = [line["line"] for line in self.admin.logs(queue, job_id)]
            else:
                got = job.get(field)
            self.assertEqual(got, want, f"job {job_id}: {field}{context}")

    def check_logged(self, records: harness.Records, entry: Dict[str, Any], context: str) -> None:
        self.assertIn(entry["level"], LEVELS, "unknown log level")
        level = LEVELS[entry["level"]]
        text = entry.get("job") or entry["contains"]
        self.assertTrue(records.matching(level, text), f"no {entry['level']} record naming {text!r}{context}")


def _error_test(entry: Dict[str, Any]) -> Callable[[Behaviour], None]:
    def test(self: Behaviour) -> None:
        self.check_error(entry)

    return test


def _case_test(number: int, case: Dict[str, Any]) -> Callable[[Behaviour], None]:
    def test(self: Behaviour) -> None:
        self.run_case(number, case)

    test.__doc__ = case["name"]
    return test


def _add_table_tests() -> None:
    """Adds a test method for each error entry and each case of the table."""
    if TABLE is None:
        return  # test_table_was_read fails
    for entry in TABLE["errors"]:
        setattr(Behaviour, f"test_error_{entry['code']}", _error_test(entry))
    for number, case in enumerate(TABLE["cases"], 1):
        slug = "".join(c if c.isalnum() else "_" for c in case["name"].lower())[:60].strip("_")
        setattr(Behaviour, f"test_case_{number:02d}_{slug}", _case_test(number, case))


_add_table_tests()

if __name__ == "__main__":
    unittest.main()
