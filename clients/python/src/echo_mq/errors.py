"""The errors of echo_mq: the service's refusals, and the signals a handler raises.

Every refusal of the service is an RFC 9457 problem with a machine-readable
``code``; :func:`error_from_answer` turns one into the :class:`EmqError`
subclass named after that code (``EMQSTALE`` is :class:`Stale`, ...), so
that a caller catches the refusals it can act on by class. A code this
package does not know, or an answer that is not a problem (a proxy's 502
page), is a plain :class:`EmqError`, as is a 2xx answer that is not the
JSON object the call expects. A request that got no answer at all is
:class:`ConnectionFailed`.

:class:`Fatal`, :class:`Snooze` and :class:`Cancelled` are not refusals:
a handler run by ``Client.work`` raises them to say how its job ends.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type, cast


class EmqError(Exception):
    """A refusal from the service: an answer whose status is not 2xx (or a
    2xx that is not the JSON object expected: code "", a detail saying so).

    ``status`` is the HTTP status (0 for no answer: see
    :class:`ConnectionFailed`); ``code``, ``title`` and ``detail`` are the
    problem's (empty when the answer was not a problem); ``problem`` is the
    whole problem body as a dict (``errors`` names the invalid fields of an
    ``EMQINVALID``); ``retry_after`` is the answer's Retry-After in whole
    seconds, or None when it had none (or gave an HTTP date, ignored).
    """

    #: The problem code this class stands for; "" for the base class.
    CODE = ""

    def __init__(
        self,
        status: int,
        code: str = "",
        title: str = "",
        detail: str = "",
        problem: Optional[Dict[str, Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.problem: Dict[str, Any] = problem if problem is not None else {}
        self.retry_after = retry_after
        super().__init__(self.summary())

    def summary(self) -> str:
        """Says what the refusal was: "409 EMQSTALE: <detail>"."""
        kind = f"{self.status} {self.code}".strip()
        return f"{kind}: {self.detail}" if self.detail else kind

    def __reduce__(self) -> Any:  # keeps the fields through pickling (multiprocessing)
        return (type(self), (self.status, self.code, self.title, self.detail, self.problem, self.retry_after))


class ConnectionFailed(EmqError):
    """No answer came: the connection was refused or reset, or timed out.

    Its status is 0 and its detail says what happened. Sending the request
    again may work: ``Client.work`` does, after a pause.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(0, detail=detail)

    def summary(self) -> str:
        return f"no answer: {self.detail}"

    def __reduce__(self) -> Any:
        return (type(self), (self.detail,))


class Stale(EmqError):
    """409 EMQSTALE: the token does not hold the job (any more). Drop the job."""

    CODE = "EMQSTALE"


class Gone(EmqError):
    """404 EMQGONE: no such job (or schedule, batch, push target). Drop the job."""

    CODE = "EMQGONE"


class WrongState(EmqError):
    """409 EMQSTATE: the verb does not apply in the job's state (cancelling a completed job)."""

    CODE = "EMQSTATE"


class Invalid(EmqError):
    """400 EMQINVALID: the request is malformed; ``problem["errors"]`` names the fields."""

    CODE = "EMQINVALID"


class TooLarge(EmqError):
    """413 EMQTOOLARGE: a payload, result or progress over 1 MiB, or a body over 16 MiB."""

    CODE = "EMQTOOLARGE"


class MediaType(EmqError):
    """415 EMQMEDIATYPE: the body was not sent as application/json."""

    CODE = "EMQMEDIATYPE"


class Unauthorized(EmqError):
    """401 EMQUNAUTHORIZED: no key, a wrong one, or a bad signature (the detail says which)."""

    CODE = "EMQUNAUTHORIZED"


class Forbidden(EmqError):
    """403 EMQFORBIDDEN: the key's role may not do this."""

    CODE = "EMQFORBIDDEN"


class Busy(EmqError):
    """429 or 503 EMQBUSY: too many claims are waiting; retry after ``retry_after``."""

    CODE = "EMQBUSY"


class Quota(EmqError):
    """409 EMQQUOTA: the call would make a new queue past the service's limit."""

    CODE = "EMQQUOTA"


class Unavailable(EmqError):
    """503 EMQUNAVAILABLE: the service cannot reach Redis; retry after ``retry_after``."""

    CODE = "EMQUNAVAILABLE"


class NotFound(EmqError):
    """404 EMQNOTFOUND: no such route (check the base URL)."""

    CODE = "EMQNOTFOUND"


class MethodNotAllowed(EmqError):
    """405 EMQMETHOD: the route exists, not with this method."""

    CODE = "EMQMETHOD"


class Internal(EmqError):
    """500 EMQINTERNAL: a bug in the service, which logs it."""

    CODE = "EMQINTERNAL"


#: Each problem code this package knows, and the class a refusal with it raises.
ERRORS_BY_CODE: Dict[str, Type[EmqError]] = {
    cls.CODE: cls
    for cls in (
        Stale, Gone, WrongState, Invalid, TooLarge, MediaType, Unauthorized,
        Forbidden, Busy, Quota, Unavailable, NotFound, MethodNotAllowed, Internal,
    )
}


def error_from_answer(status: int, problem: Any, retry_after: Optional[float] = None) -> EmqError:
    """The error a refused answer raises: the class of its problem's code.

    ``problem`` is the answer's body as decoded JSON; anything that is not a
    problem object (a proxy's page, read as text) makes a plain EmqError
    whose detail is that text.
    """
    fields = cast(Dict[str, Any], problem) if isinstance(problem, dict) else {}
    code = fields.get("code")
    if isinstance(code, str):
        cls = ERRORS_BY_CODE.get(code, EmqError)
        title, detail = str(fields.get("title") or ""), str(fields.get("detail") or "")
        return cls(status, code, title, detail, fields, retry_after)
    detail = problem if isinstance(problem, str) else ""
    return EmqError(status, detail=detail, retry_after=retry_after)


class Fatal(Exception):
    """Raised by a handler to fail its job for good: it becomes dead at once,
    whatever attempts it has left (bad input that no retry will mend)."""


class Snooze(Exception):
    """Raised by a handler whose work cannot go ahead yet (a rate limit
    upstream, a file not there yet): the job is put back for ``delay_ms``
    without spending its attempt, instead of failing."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = max(0, int(delay_ms))
        super().__init__(f"snooze for {self.delay_ms} ms")

    def __reduce__(self) -> Any:
        return (type(self), (self.delay_ms,))


class Cancelled(Exception):
    """Raised by ``Job.raise_if_cancelled`` once the job was cancelled (or
    lost): ``reason`` is the reason the canceller gave. A handler lets it
    propagate, and the job ends cancelled."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason
        super().__init__(f"cancelled: {reason}" if reason else "cancelled")

    def __reduce__(self) -> Any:
        return (type(self), (self.reason,))
