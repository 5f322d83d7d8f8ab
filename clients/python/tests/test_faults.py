"""Faults the real service cannot be made to show, met with a local fake
service (fake_service.py) or a stand-in object: 2xx answers that are not
the JSON expected, a fail refused whatever its text, a heartbeat whose
extend raises a bug. Also the parts that need no service at all: the
signing rule's memory, well-formed error texts, Retry-After, error texts
of unusual exceptions.
"""

from __future__ import annotations

import logging
import threading
import time
import unittest
import uuid
from typing import Any, Dict, List

import harness
from fake_service import Answer, FakeService, json_answer, problem

from echo_mq import Client, EmqError, Job
from echo_mq.backoff import Backoff
from echo_mq.heartbeat import Heartbeat
from echo_mq.jobrun import error_text
from echo_mq.signing import BORROW_S, SentSignatures, Signer
from echo_mq.text import well_formed
from echo_mq.transport import parse_retry_after

JOB_PATH = "/queues/q/jobs/j"
A_JOB = {"id": "j", "queue": "q", "state": "active", "token": 7, "attempts": 1, "payload": {}}


class Signing(unittest.TestCase):
    """The rule: borrow an earlier second, never wait while one of 31 is free."""

    def signer(self) -> Signer:
        return Signer(f"key-{uuid.uuid4().hex}")  # a key of its own: no other test's signatures

    def test_31_identical_requests_are_signed_at_once_with_distinct_seconds(self) -> None:
        signer = self.signer()
        before, began = int(time.time()), time.monotonic()
        stamps = [signer.headers("POST", "/queues/q/claim", b'{"count":1}') for _ in range(BORROW_S + 1)]
        self.assertLess(time.monotonic() - began, 0.9, "signing waited")
        seconds = [int(h["X-EMQ-Timestamp"]) for h in stamps]
        self.assertEqual(len(set(seconds)), BORROW_S + 1, seconds)
        self.assertEqual(len({h["X-EMQ-Signature"] for h in stamps}), BORROW_S + 1)
        self.assertGreaterEqual(min(seconds), before - BORROW_S)
        self.assertLessEqual(max(seconds), int(time.time()))

    def test_the_32nd_identical_request_gets_a_second_of_its_own(self) -> None:
        signer = self.signer()
        stamps = [signer.headers("GET", "/queues/q/jobs/j", b"")["X-EMQ-Timestamp"] for _ in range(BORROW_S + 3)]
        self.assertEqual(len(set(stamps)), BORROW_S + 3, stamps)

    def test_two_signers_with_one_key_share_what_was_sent(self) -> None:
        key = f"key-{uuid.uuid4().hex}"
        first = Signer(key).headers("POST", "/queues/q/claim", b"{}")
        second = Signer(key).headers("POST", "/queues/q/claim", b"{}")
        self.assertNotEqual(first["X-EMQ-Timestamp"], second["X-EMQ-Timestamp"])

    def test_another_key_signs_with_the_current_second(self) -> None:
        body = b'{"same":true}'
        self.signer().headers("POST", "/p", body)
        before = int(time.time())
        other = self.signer().headers("POST", "/p", body)
        self.assertGreaterEqual(int(other["X-EMQ-Timestamp"]), before)

    def test_the_memory_keeps_31_seconds(self) -> None:
        sent = SentSignatures()
        self.assertTrue(sent.take(100, 100, "a"))
        self.assertFalse(sent.take(100, 100, "a"))
        self.assertTrue(sent.take(100, 100 - BORROW_S, "a"))
        self.assertEqual(sent.seconds(), {100 - BORROW_S, 100})
        self.assertTrue(sent.take(101, 101, "b"))  # 100 - BORROW_S is forgotten now
        self.assertEqual(sent.seconds(), {100, 101})
        self.assertTrue(sent.take(100 + BORROW_S, 100 + BORROW_S, "c"))
        self.assertFalse(sent.take(100 + BORROW_S, 100, "a"))  # still remembered
        self.assertEqual(sent.seconds(), {100, 101, 100 + BORROW_S})


class Texts(unittest.TestCase):
    """What a fail says, and which Retry-After counts."""

    def test_lone_surrogates_become_replacement_characters(self) -> None:
        self.assertEqual(well_formed("plain ✓"), "plain ✓")
        self.assertEqual(well_formed("bad \udc80 byte"), "bad \ufffd byte")
        self.assertEqual(well_formed("\ud800\ud83d\ude00"), "\ufffd😀")
        self.assertEqual(well_formed(b"caf\xe9".decode("utf-8", "surrogateescape")), "caf\ufffd")

    def test_error_text_of_unusual_exceptions(self) -> None:
        class Unprintable(Exception):
            def __str__(self) -> str:
                raise RuntimeError("no text")

        self.assertEqual(error_text(RuntimeError("boom")), "boom")
        self.assertEqual(error_text(ValueError()), "ValueError")
        self.assertEqual(error_text(Unprintable("x")), "Unprintable")
        self.assertEqual(error_text(SystemExit(3)), "SystemExit: 3")
        self.assertEqual(error_text(KeyboardInterrupt()), "KeyboardInterrupt")
        self.assertEqual(error_text(GeneratorExit("closed")), "GeneratorExit: closed")

    def test_retry_after_counts_whole_seconds_only(self) -> None:
        self.assertEqual(parse_retry_after("3"), 3.0)
        self.assertEqual(parse_retry_after(" 7 "), 7.0)
        for ignored in (None, "", "soon", "1.5", "-1", "²", "Thu, 01 Jan 1970 00:00:00 GMT", "Wed, 21 Oct 2099 07:28:00 GMT"):
            with self.subTest(value=ignored):
                self.assertIsNone(parse_retry_after(ignored))

    def test_a_retry_after_date_leaves_the_own_backoff(self) -> None:
        backoff = Backoff()
        dated = EmqError(503, retry_after=parse_retry_after("Wed, 21 Oct 2099 07:28:00 GMT"))
        self.assertEqual([backoff.pause(dated) for _ in range(3)], [0.5, 1.0, 2.0])
        self.assertEqual(Backoff().pause(EmqError(503, retry_after=parse_retry_after("120"))), 30.0)


class NotTheJsonExpected(unittest.TestCase):
    """A 2xx that is not the JSON object a call expects is an EmqError."""

    def check(self, answer: Answer, call: str = "get") -> EmqError:
        routes = {f"GET {JOB_PATH}": [answer], "POST /queues/q/claim": [answer]}
        with FakeService(routes) as fake, self.assertRaises(EmqError) as raised:
            client = Client(fake.url, "k", timeout=5)
            client.get("q", "j") if call == "get" else client.claim("q")
        error = raised.exception
        self.assertIs(type(error), EmqError)
        self.assertEqual((error.status, error.code), (answer.status, ""))
        self.assertIn("not the JSON expected", error.detail)
        return error

    def test_empty_answers(self) -> None:
        self.check(Answer(200))
        self.check(Answer(204))
        self.check(Answer(200), call="claim")

    def test_a_proxy_page(self) -> None:
        error = self.check(Answer(200, b"<html>hello from the proxy</html>"))
        self.assertIn("hello from the proxy", error.detail)

    def test_json_that_is_not_the_object_expected(self) -> None:
        self.check(json_answer(200, [A_JOB]))
        self.check(json_answer(200, "ok"))
        self.check(json_answer(200, {"id": "j"}))  # no state
        self.check(json_answer(200, {}), call="claim")
        self.check(json_answer(200, {"jobs": [1]}), call="claim")
        self.check(json_answer(200, {"jobs": [{"id": "j"}]}), call="claim")  # no token
        self.check(json_answer(200, {"jobs": {"id": "j"}}), call="claim")

    def test_a_null_list_is_empty(self) -> None:
        with FakeService({"POST /queues/q/claim": [json_answer(200, {"jobs": None})]}) as fake:
            self.assertEqual(Client(fake.url, "k", timeout=5).claim("q"), [])


class WorkerFaults(unittest.TestCase):
    """work() against a fake service: every job still reported, the loop goes on."""

    def work(self, fake: FakeService, handler: Any, done: Any, **options: Any) -> harness.Records:
        logger, records = harness.recorded_logger(f"faults-{uuid.uuid4().hex[:6]}")
        worker = harness.WorkerThread(Client(fake.url, "k", timeout=5), "q", handler, wait_ms=0, logger=logger, **options)
        worker.start()
        try:
            reached = harness.wait_until(done, 20)
        finally:
            stopped = worker.stop(30)
        self.assertTrue(reached, f"not done in time\n{records.dump()}")
        self.assertTrue(stopped, "work() did not return once stopped")
        self.assertIsNone(worker.error, records.dump())
        return records

    def routes(self, **more: List[Answer]) -> Dict[str, List[Answer]]:
        routes = {
            "POST /queues/q/claim": [json_answer(200, {"jobs": [A_JOB]}), json_answer(200, {"jobs": []})],
            f"POST {JOB_PATH}/lease": [json_answer(200, {"lease_expires_at": "x", "cancel_requested": False})],
            f"POST {JOB_PATH}/complete": [json_answer(200, {**A_JOB, "state": "completed"})],
        }
        routes.update({f"POST {JOB_PATH}/{verb}": answers for verb, answers in more.items()})
        return routes

    def test_a_fail_refused_400_is_sent_once_more_with_a_plain_text(self) -> None:
        refused = problem(400, "EMQINVALID", "the error is no good")
        with FakeService(self.routes(fail=[refused])) as fake:

            def handler(job: Job) -> None:
                raise RuntimeError("boom \udc80")

            records = self.work(fake, handler, lambda: len(fake.received("POST", f"{JOB_PATH}/fail")) >= 2)
            time.sleep(0.3)  # a third fail would come now
            fails = [r.json()["error"] for r in fake.received("POST", f"{JOB_PATH}/fail")]
        self.assertEqual(fails, ["boom \ufffd", "the error's text was refused: 400 EMQINVALID: the error is no good"])
        self.assertEqual(len(records.matching(logging.ERROR, "fail j refused")), 2, records.dump())

    def test_a_fail_refused_otherwise_is_not_sent_again(self) -> None:
        with FakeService(self.routes(fail=[problem(409, "EMQSTATE", "no")])) as fake:

            def handler(job: Job) -> None:
                raise RuntimeError("boom")

            self.work(fake, handler, lambda: len(fake.received("POST", f"{JOB_PATH}/fail")) >= 1)
            time.sleep(0.3)
            self.assertEqual(len(fake.received("POST", f"{JOB_PATH}/fail")), 1)

    def test_garbled_extends_do_not_stop_the_heartbeat(self) -> None:
        routes = self.routes()
        routes[f"POST {JOB_PATH}/lease"] = [Answer(200, b"<html>proxy</html>")]
        with FakeService(routes) as fake:

            def handler(job: Job) -> str:
                time.sleep(0.8)
                return "done"

            records = self.work(fake, handler, lambda: bool(fake.received("POST", f"{JOB_PATH}/complete")), lease_ms=300)
        self.assertGreaterEqual(len(fake.received("POST", f"{JOB_PATH}/lease")), 3, records.dump())
        self.assertTrue(records.matching(logging.WARNING, "extend of job j refused: 200"), records.dump())

    def test_a_claim_answered_with_a_page_ends_work_with_its_error(self) -> None:
        with FakeService({"POST /queues/q/claim": [Answer(200, b"<html>proxy</html>")]}) as fake:
            logger, _ = harness.recorded_logger("faults-claim-page")
            worker = harness.WorkerThread(Client(fake.url, "k", timeout=5), "q", lambda job: None, wait_ms=0, logger=logger)
            worker.start()
            self.assertTrue(worker.join(20), "work() did not return")
        self.assertIsInstance(worker.error, EmqError)
        assert isinstance(worker.error, EmqError)
        self.assertEqual((worker.error.status, worker.error.code), (200, ""))


class _FlakyJob:
    """Stands in for a Job whose extend raises a bug once, then works."""

    id = "flaky"

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def _extend(self, lease_ms: int, progress: Any, timeout: Any) -> Dict[str, Any]:
        with self._lock:
            self.calls += 1
            if self.calls == 1:
                raise AttributeError("a bug")
        return {"cancel_requested": False}


class HeartbeatSurvives(unittest.TestCase):
    def test_an_extend_raising_any_exception_is_logged_and_the_next_sent(self) -> None:
        logger, records = harness.recorded_logger("faults-heartbeat")
        job = _FlakyJob()
        heartbeat = Heartbeat(job, 300, 5.0, logger, time.monotonic())  # type: ignore[arg-type]
        heartbeat.start()
        try:
            self.assertTrue(harness.wait_until(lambda: job.calls >= 3, 5), records.dump())
        finally:
            heartbeat.finish()
            heartbeat.join(5)
        self.assertFalse(heartbeat.is_alive())
        self.assertTrue(records.matching(logging.ERROR, "extend of job flaky failed"), records.dump())


if __name__ == "__main__":
    unittest.main()
