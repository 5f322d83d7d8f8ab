"""Signing requests with a key instead of sending it (X-EMQ-Signature).

A signed request carries ``X-EMQ-Timestamp: <Unix seconds>`` and
``X-EMQ-Signature: sha256=<hex HMAC-SHA256(key, "<ts>.<METHOD>.<path and
query>.<body>")>``. The service accepts each signature once and refuses a
replay, so the same signature must never be sent twice. Two byte-identical
requests stamped with the same second (a worker's claims, one job's
extends) would have the same signature, so a request whose signature of
this second was sent already borrows an earlier second: it is stamped with
the latest of now, now - 1, ..., now - 30 whose signature this process has
not sent. The service takes timestamps within 300 s of its clock; 30 s
stays far from that edge. Only when all 31 are taken does it wait for the
next second. Signing thus costs no throughput.

The signatures sent are remembered by second, for the last 31 seconds
only, per key and for the whole process, so that two clients with the same
key never collide either. Two processes signing with the same key must not
send byte-identical requests in the same second: a worker's claims carry
its worker name, unique by default.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from typing import Dict, Set, Union

#: How many seconds before now a signature's timestamp may be put.
BORROW_S = 30


class SentSignatures:
    """The signatures sent with one key, by their second, for the last
    BORROW_S + 1 seconds. Safe for concurrent use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_second: Dict[int, Set[str]] = {}

    def take(self, now: int, timestamp: int, signature: str) -> bool:
        """Counts signature, stamped with timestamp, as sent, or reports False
        when it was sent already. Forgets the seconds before now - BORROW_S."""
        with self._lock:
            for second in [s for s in self._by_second if s < now - BORROW_S]:
                del self._by_second[second]
            sent = self._by_second.setdefault(timestamp, set())
            if signature in sent:
                return False
            sent.add(signature)
            return True

    def seconds(self) -> Set[int]:
        """The seconds whose signatures are remembered."""
        with self._lock:
            return set(self._by_second)


_SENT_LOCK = threading.Lock()
_SENT_BY_KEY: Dict[bytes, SentSignatures] = {}


def sent_with(key: bytes) -> SentSignatures:
    """The signatures this process sent with key (made on first use)."""
    with _SENT_LOCK:
        sent = _SENT_BY_KEY.get(key)
        if sent is None:
            sent = _SENT_BY_KEY[key] = SentSignatures()
        return sent


class Signer:
    """Signs requests with one key: see the module's doc."""

    def __init__(self, key: Union[str, bytes]) -> None:
        self._key = key.encode() if isinstance(key, str) else bytes(key)
        self._sent = sent_with(self._key)

    def sign(self, timestamp: int, method: str, target: str, body: bytes) -> str:
        """The hex HMAC-SHA256 of "<timestamp>.<METHOD>.<target>.<body>"."""
        mac = hmac.new(self._key, f"{timestamp}.{method}.{target}.".encode(), hashlib.sha256)
        mac.update(body)
        return mac.hexdigest()

    def headers(self, method: str, target: str, body: bytes) -> Dict[str, str]:
        """The headers that sign one request with a signature never sent before.

        target is the path and query as sent ("/queues/q/claim"); body the
        exact bytes sent (b"" for none). The timestamp is the latest second,
        now or up to BORROW_S before, whose signature was not sent yet; when
        all are taken, it waits for the next second.
        """
        while True:
            now = int(time.time())
            for timestamp in range(now, now - BORROW_S - 1, -1):
                signature = self.sign(timestamp, method, target, body)
                if self._sent.take(now, timestamp, signature):
                    return {"X-EMQ-Timestamp": str(timestamp), "X-EMQ-Signature": f"sha256={signature}"}
            time.sleep(max(0.0, now + 1 - time.time()))
