"""The paths of the service's routes, each name escaped as one path segment."""

from __future__ import annotations

import urllib.parse


def segment(name: str) -> str:
    """name escaped as one path segment; ":" is kept, as in "batch:7"."""
    return urllib.parse.quote(str(name), safe=":")


def queue_path(queue: str, suffix: str = "") -> str:
    """The path of queue, with suffix after it: "/queues/emails/claim"."""
    return f"/queues/{segment(queue)}{suffix}"


def job_path(queue: str, job_id: str, suffix: str = "") -> str:
    """The path of job job_id of queue, with suffix after it: "/queues/emails/jobs/j1/lease"."""
    return queue_path(queue, f"/jobs/{segment(job_id)}{suffix}")
