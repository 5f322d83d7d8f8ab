"""A stand-in for a misbehaving service or proxy: a local HTTP server that
answers each route from a script, for faults the real service never shows
(an empty 200, an HTML page, a fail refused whatever its text).

It is a real HTTP peer on 127.0.0.1, so the client under test goes through
its whole transport.
"""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any, Dict, List, NamedTuple, Optional, Tuple


class Answer(NamedTuple):
    """One scripted answer: a status, the body's bytes, and extra headers."""

    status: int
    body: bytes = b""
    headers: Tuple[Tuple[str, str], ...] = ()


def json_answer(status: int, value: Any) -> Answer:
    """An answer whose body is value as JSON."""
    return Answer(status, json.dumps(value).encode(), (("Content-Type", "application/json"),))


def problem(status: int, code: str, detail: str) -> Answer:
    """A refusal as the service writes it: an RFC 9457 problem."""
    body = {"type": "about:blank", "title": code, "status": status, "detail": detail, "code": code}
    return Answer(status, json.dumps(body).encode(), (("Content-Type", "application/problem+json"),))


class Request(NamedTuple):
    """A request the fake service received."""

    method: str
    path: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class FakeService:
    """Answers "<METHOD> <path>" (the query left off) from a list of answers
    given in order; the last one is given again and again. Any other route
    is 404 EMQNOTFOUND. Use it as a context manager."""

    def __init__(self, routes: Dict[str, List[Answer]]) -> None:
        self._routes = {route: list(answers) for route, answers in routes.items()}
        self._lock = threading.Lock()
        self.requests: List[Request] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake service", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeService":
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def received(self, method: str, path: str) -> List[Request]:
        """The requests received on one route, in order."""
        with self._lock:
            return [r for r in self.requests if r.method == method and r.path == path]

    def _answer(self, method: str, path: str, body: bytes) -> Answer:
        with self._lock:
            self.requests.append(Request(method, path, body))
            answers: Optional[List[Answer]] = self._routes.get(f"{method} {path}")
            if not answers:
                return problem(404, "EMQNOTFOUND", f"no route {method} {path}")
            return answers.pop(0) if len(answers) > 1 else answers[0]

    def _handler_class(self) -> type:
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                answer = fake._answer(self.command, self.path.split("?", 1)[0], body)
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            do_GET = do_POST = _serve

            def log_message(self, *_: Any) -> None:  # quiet: the test says what went wrong
                pass

        return Handler
