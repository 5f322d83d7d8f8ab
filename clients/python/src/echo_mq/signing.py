"""Signing requests with a key instead of sending it (X-EMQ-Signature).

A signed request carries ``X-EMQ-Timestamp: <Unix seconds>`` and
``X-EMQ-Signature: sha256=<hex HMAC-SHA256(key, "<ts>.<METHOD>.<path and
query>.<body>")>``. The service accepts each signature once and refuses a
replay, so the same signature must never be sent twice. Two identical
requests signed in the same second (two claims with the same body, a retry
of a call) would have the same signature: this module remembers the
signatures it gave out in the last few seconds, process-wide, and on a
collision waits for the next second and signs again.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from typing import Dict, Set, Union

#: How many seconds back the signatures given out are remembered. Only a
#: signature of the same second can collide; the margin covers a thread
#: that read the clock and was descheduled before it signed.
_REMEMBERED_S = 5


class _SignaturesGiven:
    """The signatures given out lately, by their timestamp: shared by every
    Signer of the process, so that two clients with the same key collide
    no more than one does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_second: Dict[int, Set[str]] = {}

    def take(self, timestamp: int, signature: str) -> bool:
        """Records signature as given out, or reports False when it was already."""
        with self._lock:
            for second in [s for s in self._by_second if s < timestamp - _REMEMBERED_S]:
                del self._by_second[second]
            given = self._by_second.setdefault(timestamp, set())
            if signature in given:
                return False
            given.add(signature)
            return True


_GIVEN = _SignaturesGiven()


class Signer:
    """Signs requests with one key: see the module's doc."""

    def __init__(self, key: Union[str, bytes]) -> None:
        self._key = key.encode() if isinstance(key, str) else bytes(key)

    def sign(self, timestamp: int, method: str, target: str, body: bytes) -> str:
        """The hex HMAC-SHA256 of "<timestamp>.<METHOD>.<target>.<body>"."""
        mac = hmac.new(self._key, f"{timestamp}.{method}.{target}.".encode(), hashlib.sha256)
        mac.update(body)
        return mac.hexdigest()

    def headers(self, method: str, target: str, body: bytes) -> Dict[str, str]:
        """The headers that sign one request never signed before.

        target is the path and query as sent ("/queues/q/claim"); body the
        exact bytes sent (b"" for none). When this very request was signed
        in the current second already, it waits for the next second.
        """
        while True:
            timestamp = int(time.time())
            signature = self.sign(timestamp, method, target, body)
            if _GIVEN.take(timestamp, signature):
                return {"X-EMQ-Timestamp": str(timestamp), "X-EMQ-Signature": f"sha256={signature}"}
            time.sleep(max(0.0, timestamp + 1 - time.time()))
