"""echo_mq: the Python client of echo_mq, a Redis-backed job queue behind an HTTP/JSON API.

:class:`Client` enqueues, claims, reads and cancels jobs, and runs a worker
loop (``Client.work``); a claimed :class:`Job` extends its lease, logs, and
completes, fails or snoozes. Refusals raise :class:`EmqError` subclasses
named after the problem codes (:class:`Stale` for ``EMQSTALE``, ...); a
handler raises :class:`Fatal`, :class:`Snooze` or :class:`Cancelled` to say
how its job ends. Standard library only.
"""

from .backoff import retryable
from .client import Client
from .errors import (
    Busy,
    Cancelled,
    ConnectionFailed,
    EmqError,
    Fatal,
    Forbidden,
    Gone,
    Internal,
    Invalid,
    MediaType,
    MethodNotAllowed,
    NotFound,
    Quota,
    Snooze,
    Stale,
    TooLarge,
    Unauthorized,
    Unavailable,
    WrongState,
)
from .job import Job
from .version import __version__

__all__ = [
    "Busy",
    "Cancelled",
    "Client",
    "ConnectionFailed",
    "EmqError",
    "Fatal",
    "Forbidden",
    "Gone",
    "Internal",
    "Invalid",
    "Job",
    "MediaType",
    "MethodNotAllowed",
    "NotFound",
    "Quota",
    "Snooze",
    "Stale",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "WrongState",
    "__version__",
    "retryable",
]
