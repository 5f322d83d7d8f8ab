"""What a 2xx answer must be before the client reads it.

Every route this package calls answers a JSON object. A 2xx that is not
one (an empty 200 or 204, a proxy's HTML page, a JSON array), or that
lacks the members the caller reads, is an :class:`~echo_mq.errors.EmqError`
whose status is that 2xx, whose code is "" and whose detail says what was
wrong, never an AttributeError or a KeyError deep in the caller.
"""

from __future__ import annotations

import json
from typing import Any, Dict, NamedTuple, Optional, Tuple

from .errors import EmqError

#: How much of an answer that is not the JSON expected goes into the detail.
MAX_DETAIL = 512


class Expect(NamedTuple):
    """What a 2xx answer must hold, beyond being a JSON object."""

    #: Members the object must have.
    keys: Tuple[str, ...] = ()
    #: A member that must be a list of objects ("jobs" of a claim; null
    #: counts as empty), or None.
    list_of: Optional[str] = None
    #: Members each object of that list must have.
    item_keys: Tuple[str, ...] = ()


#: Any JSON object.
OBJECT = Expect()
#: A job (enqueue, get, cancel, complete, fail, snooze).
JOB = Expect(keys=("id", "state"))
#: A claim's answer: the jobs leased, each with its token.
CLAIMED = Expect(list_of="jobs", item_keys=("id", "token"))
#: A batch enqueue's answer: the jobs, in order.
JOBS = Expect(list_of="jobs", item_keys=("id",))
#: A page of a job's log.
LOG_PAGE = Expect(list_of="lines")


def decode_answer(status: int, raw: bytes, expect: Expect) -> Dict[str, Any]:
    """The JSON object of a 2xx answer, or EmqError when it is not what expect says."""
    try:
        answer = json.loads(raw) if raw.strip() else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise _unexpected(status, "not a JSON object", raw)
    missing = [key for key in expect.keys if key not in answer]
    if missing:
        raise _unexpected(status, f"no {', '.join(missing)}", raw)
    if expect.list_of is not None:
        if answer.get(expect.list_of, []) is None:  # an empty list, as Go writes a nil one
            answer[expect.list_of] = []
        _check_list(status, raw, answer.get(expect.list_of), expect)
    return answer


def _check_list(status: int, raw: bytes, items: Any, expect: Expect) -> None:
    """Raises EmqError unless items is a list of objects with expect.item_keys."""
    if not isinstance(items, list):
        raise _unexpected(status, f"{expect.list_of} is not a list", raw)
    for item in items:
        if not isinstance(item, dict) or any(key not in item for key in expect.item_keys):
            want = f"objects with {', '.join(expect.item_keys)}" if expect.item_keys else "objects"
            raise _unexpected(status, f"{expect.list_of} holds not only {want}", raw)


def _unexpected(status: int, what: str, raw: bytes) -> EmqError:
    """The error of a 2xx answer that is not the JSON expected."""
    text = raw[:MAX_DETAIL].decode("utf-8", "replace").strip()
    return EmqError(status, detail=f"the answer was not the JSON expected ({what}): {text!r}")
