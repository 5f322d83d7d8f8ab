"""When a failed call is worth sending again, and how long to wait first.

A 502, 503, 504 or 429 answer, or no answer at all, may pass: the service
restarting, Redis failing over, a proxy that lost its upstream, a key with
its share of waiting claims. Any other refusal will not, so asking again
cannot help. The pause is the answer's Retry-After when it gave one, else
0.5 s doubling per failure up to 30 s, as the Go client's Work waits.
"""

from __future__ import annotations

from .errors import ConnectionFailed, EmqError

#: The first pause after a retryable failure without Retry-After.
FIRST_PAUSE_S = 0.5
#: The longest pause: the doubling stops here.
MAX_PAUSE_S = 30.0
#: The answers worth sending the same request again after a pause.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


def retryable(error: BaseException) -> bool:
    """Whether the call that raised error is worth sending again after a pause."""
    if isinstance(error, ConnectionFailed):
        return True
    return isinstance(error, EmqError) and error.status in RETRYABLE_STATUSES


def retryable_claim(error: BaseException) -> bool:
    """Whether a claim that raised error is worth sending again: as retryable,
    and on any other 5xx too, since a claim changes nothing until it is
    answered (a 500 may be a proxy's, or pass)."""
    return retryable(error) or (isinstance(error, EmqError) and error.status >= 500)


class Backoff:
    """The pauses between the tries of one call (or one loop of calls).

    Not safe for concurrent use: each loop or call keeps its own.
    """

    def __init__(self) -> None:
        self._next = 0.0

    def pause(self, error: EmqError) -> float:
        """How long to wait after error, in seconds: its Retry-After when it
        gave one, else the next of 0.5 s, 1 s, 2 s, ...; never more than 30 s."""
        if error.retry_after:
            return min(error.retry_after, MAX_PAUSE_S)
        pause = max(self._next, FIRST_PAUSE_S)
        self._next = min(2 * pause, MAX_PAUSE_S)
        return pause

    def reset(self) -> None:
        """Starts the doubling again, after a call that succeeded."""
        self._next = 0.0
