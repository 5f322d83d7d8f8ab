"""What the behaviour table does not cover: base URLs, signing, Snooze, a result
that is not JSON, a claim refused for good, the stop event, and the errors
and options of the plain calls.
"""

from __future__ import annotations

import asyncio
import datetime
import threading
import time
import unittest
from typing import Any, Dict, Optional

import harness

from echo_mq import Client, ConnectionFailed, EmqError, Job, Snooze, Unauthorized
from echo_mq.errors import error_from_answer
from echo_mq.transport import parse_retry_after


class Offline(unittest.TestCase):
    """What needs no service."""

    def test_base_url_refused(self) -> None:
        for bad in ("localhost:8080", "127.0.0.1:8080", "ftp://emq.example.com", "http://", "", "http://h/?q=1"):
            with self.subTest(base_url=bad), self.assertRaises(ValueError):
                Client(bad)
        self.assertEqual(Client("https://emq.example.com/emq/").base_url, "https://emq.example.com/emq")

    def test_unknown_code_is_a_plain_error(self) -> None:
        error = error_from_answer(418, {"code": "EMQTEAPOT", "detail": "short and stout"}, 2.0)
        self.assertIs(type(error), EmqError)
        self.assertEqual((error.status, error.code, error.detail, error.retry_after), (418, "EMQTEAPOT", "short and stout", 2.0))
        page = error_from_answer(502, "<html>bad gateway</html>")
        self.assertEqual((type(page), page.status, page.code, page.detail), (EmqError, 502, "", "<html>bad gateway</html>"))

    def test_retry_after(self) -> None:
        self.assertEqual(parse_retry_after("3"), 3.0)
        self.assertIsNone(parse_retry_after(None))
        self.assertIsNone(parse_retry_after("soon"))
        self.assertIsNone(parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT"))  # a date is ignored

    def test_no_answer_is_connection_failed(self) -> None:
        with self.assertRaises(ConnectionFailed) as raised:
            Client("http://127.0.0.1:1", timeout=5).get("q", "j")
        self.assertEqual(raised.exception.status, 0)

    def test_run_at_needs_a_time_zone(self) -> None:
        with self.assertRaises(ValueError):
            Client("http://127.0.0.1:1").enqueue("q", 1, run_at=datetime.datetime(2030, 1, 1))


class AgainstTheService(unittest.TestCase):
    """What needs the service the Go harness starts."""

    env: harness.Env
    admin: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.env = harness.load_env()
        cls.admin = cls.env.admin()

    def queue(self) -> str:
        return harness.queue_name(self.id().rsplit(".", 1)[-1])

    def job(self, queue: str, job_id: str) -> Dict[str, Any]:
        return harness.get_job(self.admin, queue, job_id)

    def work_until(self, queue: str, handler: Any, done: Any, client: Optional[Client] = None, **options: Any) -> str:
        """Works queue until done() is true (at most 60 s) and stops; returns the worker's log."""
        logger, records = harness.recorded_logger(queue)
        worker = harness.WorkerThread(client or self.env.worker(), queue, handler, wait_ms=1000, logger=logger, **options)
        worker.start()
        try:
            reached = harness.wait_until(done, 60, 0.1)
        finally:
            stopped = worker.stop()
        self.assertTrue(reached, f"not done within 60 s\nworker log:\n{records.dump()}")
        self.assertTrue(stopped, "work() did not return once stopped")
        self.assertIsNone(worker.error)
        return records.dump()

    def test_identical_signed_requests_borrow_earlier_seconds(self) -> None:
        signed = self.env.worker(signed=True)
        queue = self.queue()
        for _ in range(40):  # more than the 31 seconds one may borrow: the last wait for the next second
            self.assertEqual(signed.claim(queue), [])
        other = self.env.worker(signed=True)  # another client with the same key shares what was sent
        self.assertEqual(other.claim(queue), [])

    def test_a_handler_raising_a_base_exception_fails_its_job_and_work_goes_on(self) -> None:
        queue = self.queue()
        raised = {
            "exit": SystemExit("bye"),
            "interrupt": KeyboardInterrupt(),
            "cancelled": asyncio.CancelledError("stop"),
            "generator": GeneratorExit(),
        }
        for job_id in raised:
            self.admin.enqueue(queue, {"n": 1}, id=job_id, max_attempts=1)
        self.admin.enqueue(queue, {"n": 2}, id="after")

        def handler(job: Job) -> str:
            if job.id in raised:
                raise raised[job.id]
            return "still working"

        log = self.work_until(queue, handler, lambda: self.job(queue, "after")["state"] == "completed")
        want = {"exit": "SystemExit: bye", "interrupt": "KeyboardInterrupt", "cancelled": "CancelledError: stop", "generator": "GeneratorExit"}
        for job_id, text in want.items():
            job = self.job(queue, job_id)
            self.assertEqual((job["state"], job["last_error"]), ("dead", text), job)
            self.assertIn(f"ERROR handler of job {job_id} raised", log)

    def test_a_lone_surrogate_in_an_error_text_is_sent_as_a_replacement_character(self) -> None:
        queue = self.queue()
        self.admin.enqueue(queue, {"n": 1}, id="by-work", max_attempts=1)

        def handler(job: Job) -> None:
            raise RuntimeError(b"caf\xe9".decode("utf-8", "surrogateescape"))

        self.work_until(queue, handler, lambda: self.job(queue, "by-work")["state"] == "dead")
        self.assertEqual(self.job(queue, "by-work")["last_error"], "caf\ufffd")
        self.admin.enqueue(queue, {"n": 2}, id="by-hand", max_attempts=1)
        [job] = self.env.worker().claim(queue)
        self.assertEqual(job.fail("half \ud83d an emoji", fatal=True)["state"], "dead")
        self.assertEqual(self.job(queue, "by-hand")["last_error"], "half \ufffd an emoji")

    def test_a_wrong_signing_key_is_unauthorized(self) -> None:
        with self.assertRaises(Unauthorized):
            Client(self.env.url, signing_key="not-a-key-of-this-service").claim(self.queue())

    def test_snooze_puts_the_job_back_without_spending_its_attempt(self) -> None:
        queue = self.queue()
        self.admin.enqueue(queue, {"n": 1}, id="later", max_attempts=1)

        def handler(job: Job) -> None:
            raise Snooze(60000)

        self.work_until(queue, handler, lambda: self.job(queue, "later")["state"] in ("delayed", "pending"))
        job = self.job(queue, "later")
        self.assertEqual(job["attempts"], 0, job)
        self.assertIn(job["state"], ("delayed", "pending"), job)

    def test_a_result_that_is_not_json_fails_the_job(self) -> None:
        queue = self.queue()
        self.admin.enqueue(queue, {"n": 1}, id="odd", max_attempts=1)
        def handler(job: Job) -> object:
            return object()

        self.work_until(queue, handler, lambda: self.job(queue, "odd")["state"] == "dead")
        self.assertIn("not JSON", self.job(queue, "odd")["last_error"])

    def test_work_raises_unauthorized_on_a_wrong_key(self) -> None:
        queue = self.queue()
        self.admin.enqueue(queue, {"n": 1}, id="untouched")
        called = threading.Event()

        def handler(job: Job) -> None:
            called.set()

        logger, _ = harness.recorded_logger(queue)
        worker = harness.WorkerThread(Client(self.env.url, "not-a-key-of-this-service"), queue, handler, logger=logger)
        worker.start()
        self.assertTrue(worker.join(60), "work() did not return on a claim refused 401")
        self.assertIsInstance(worker.error, Unauthorized)
        self.assertFalse(called.is_set())
        self.assertEqual(self.job(queue, "untouched")["state"], "pending")

    def test_stop_lets_the_job_in_hand_finish_first(self) -> None:
        queue = self.queue()
        self.admin.enqueue(queue, {"n": 1}, id="in-hand")
        started, finished = threading.Event(), threading.Event()

        def handler(job: Job) -> str:
            started.set()
            time.sleep(1.5)
            finished.set()
            return "finished"

        logger, records = harness.recorded_logger(queue)
        worker = harness.WorkerThread(self.env.worker(), queue, handler, wait_ms=5000, logger=logger).start()
        self.assertTrue(started.wait(60), f"the job was not claimed\n{records.dump()}")
        self.assertTrue(worker.stop(60), "work() did not return once stopped")
        self.assertIsNone(worker.error)
        self.assertTrue(finished.is_set(), "work() returned before the handler finished")
        job = self.job(queue, "in-hand")
        self.assertEqual((job["state"], job.get("result")), ("completed", "finished"), job)

    def test_concurrency_bounds_the_jobs_in_hand(self) -> None:
        queue = self.queue()
        self.admin.enqueue_many(queue, [{"id": f"c{i}", "payload": i} for i in range(6)])
        lock, running, most = threading.Lock(), [0], [0]

        def handler(job: Job) -> int:
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.3)
            with lock:
                running[0] -= 1
            return int(job.payload)

        done = lambda: all(self.job(queue, f"c{i}")["state"] == "completed" for i in range(6))  # noqa: E731
        self.work_until(queue, handler, done, concurrency=2)
        self.assertEqual(most[0], 2)

    def test_enqueue_options_batch_cancel_and_logs(self) -> None:
        queue = self.queue()
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        job = self.admin.enqueue(queue, {"n": 1}, id="planned", run_at=later, priority=3, group=None)
        self.assertEqual((job["state"], job["priority"]), ("delayed", 3))
        self.assertEqual(self.admin.cancel(queue, "planned", reason="not needed")["state"], "cancelled")
        jobs = self.admin.enqueue_many(queue, [{"id": "b1", "payload": 1}, {"id": "b2", "payload": 2}])
        self.assertEqual([j["id"] for j in jobs], ["b1", "b2"])
        claimed = self.env.worker().claim(queue, count=2, lease_ms=5000)
        self.assertEqual(sorted(j.id for j in claimed), ["b1", "b2"])
        first = claimed[0]
        self.assertEqual(first.log("one", "two")["total"], 2)
        self.assertFalse(first.extend(5000, progress={"pct": 50})["cancel_requested"])
        self.admin.cancel(queue, first.id, reason="stop now")
        first.extend(5000)
        self.assertTrue(first.cancelled())
        self.assertEqual(first.cancel_reason, "stop now")
        self.assertEqual(first.fail("cancelled: stop now")["state"], "cancelled")
        self.assertEqual([line["line"] for line in self.admin.logs(queue, first.id)], ["one", "two"])
        self.assertEqual(claimed[1].complete({"ok": True})["result"], {"ok": True})


if __name__ == "__main__":
    unittest.main()
