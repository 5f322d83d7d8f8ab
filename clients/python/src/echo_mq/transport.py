"""One HTTP request to the service, and its answer as JSON or an EmqError.

The transport knows the base URL and how to authenticate (a bearer key, or
a signature per request), encodes the body as compact JSON, and turns every
outcome into one of two things: the JSON object of a 2xx (checked as
:mod:`echo_mq.answers` says), or an :class:`~echo_mq.errors.EmqError` (the
problem's class for a refusal, a plain one for a 2xx that is not the JSON
expected, :class:`~echo_mq.errors.ConnectionFailed` when no answer came).
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from .answers import MAX_DETAIL, OBJECT, Expect, decode_answer
from .errors import ConnectionFailed, error_from_answer
from .signing import Signer
from .version import __version__

#: How much of a refusal's body is read.
_MAX_ERROR_BODY = 64 << 10
#: A Retry-After this package honours: whole seconds (an HTTP date is ignored).
_DELAY_SECONDS = re.compile(r"[0-9]+")


def check_base_url(base_url: str) -> str:
    """Returns base_url without its trailing slashes, or raises ValueError when
    it is not an http:// or https:// URL with a host, or has a query or
    fragment: a URL that cannot work ("localhost:8080") is refused at once
    rather than failing every call later."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base URL {base_url!r}: want http://host:port or https://host")
    if parts.query or parts.fragment:
        raise ValueError(f"base URL {base_url!r}: want no query or fragment")
    return base_url.rstrip("/")


def encode_json(value: Any) -> bytes:
    """Encodes value as compact JSON; NaN and infinities, which are not JSON,
    raise ValueError, and values that are not JSON raise TypeError."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


class Transport:
    """Sends requests to one service, authenticated one way."""

    def __init__(
        self,
        base_url: str,
        key: Optional[str],
        signing_key: Union[str, bytes, None],
        timeout: float,
    ) -> None:
        self.base_url = check_base_url(base_url)
        self._base_path = urllib.parse.urlsplit(self.base_url).path
        self._key = key
        self._signer = Signer(signing_key) if signing_key else None
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
        expect: Expect = OBJECT,
    ) -> Dict[str, Any]:
        """Sends one request and returns its 2xx answer, a JSON object.

        path is below the base URL ("/queues/q/claim"), already escaped;
        body (None: none) is sent as JSON; timeout (default: the client's)
        bounds each wait for the connection and the answer, and starts
        after signing. Raises the EmqError of a refusal, a plain EmqError
        when a 2xx is not the JSON object expect says, or ConnectionFailed
        when no answer came.
        """
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        data = encode_json(body) if body is not None else b""
        request = urllib.request.Request(
            self.base_url + path,
            data=data if body is not None else None,
            headers=self._headers(method, self._base_path + path, data, body is not None, headers),
            method=method,
        )
        status, answer_headers, raw = self._send(request, self.timeout if timeout is None else timeout)
        if 200 <= status <= 299:
            return decode_answer(status, raw, expect)
        return _raise_refusal(status, answer_headers, raw)

    def _headers(
        self, method: str, target: str, data: bytes, has_body: bool, extra: Optional[Mapping[str, str]]
    ) -> Dict[str, str]:
        """The request's headers: JSON, the client's name, and its authentication
        (a fresh signature on every call, retries included)."""
        headers = {"Accept": "application/json", "User-Agent": f"echo-mq-python/{__version__}"}
        if has_body:
            headers["Content-Type"] = "application/json"
        if extra:
            headers.update(extra)
        if self._signer is not None:
            headers.update(self._signer.headers(method, target, data))
        elif self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    @staticmethod
    def _send(request: urllib.request.Request, timeout: float) -> Tuple[int, Any, bytes]:
        """Sends request; returns (status, headers, body) for any answer, and
        raises ConnectionFailed when none came."""
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as refusal:  # a 4xx or 5xx answer
            with refusal:
                try:
                    raw = refusal.read(_MAX_ERROR_BODY)
                except (OSError, http.client.HTTPException):
                    raw = b""
                return refusal.code, refusal.headers, raw
        except urllib.error.URLError as error:
            raise ConnectionFailed(_reason(error.reason)) from error
        except (OSError, http.client.HTTPException) as error:  # timeouts are OSErrors
            raise ConnectionFailed(_reason(error)) from error


def _reason(error: Any) -> str:
    """What went wrong with a connection, for a ConnectionFailed's detail."""
    text = str(error)
    return text if text else type(error).__name__


def _raise_refusal(status: int, headers: Any, raw: bytes) -> Any:
    """Raises the error of a refused answer: the problem's class, or a plain
    EmqError whose detail is the start of a body that is not a problem."""
    try:
        problem: Any = json.loads(raw)
    except ValueError:
        problem = raw[:MAX_DETAIL].decode("utf-8", "replace").strip()
    retry_after = parse_retry_after(headers.get("Retry-After") if headers is not None else None)
    raise error_from_answer(status, problem, retry_after)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """A Retry-After header's whole seconds, or None when it is absent or not
    whole seconds: an HTTP date is ignored (examples/README.md), since the
    two clocks need not agree, and the caller's own backoff is used."""
    if not value or not _DELAY_SECONDS.fullmatch(value.strip()):
        return None
    return float(value.strip())
