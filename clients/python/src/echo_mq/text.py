"""Text the service takes: well-formed Unicode.

A Python str may hold lone surrogates (U+D800 to U+DFFF): bytes decoded
with "surrogateescape", a path from os.listdir, half an emoji cut off. JSON
escapes them as "\\ud800", which the service refuses (400 EMQINVALID: no
character), so a fail whose error text holds one would leave its job
active until the lease lapses.
"""

from __future__ import annotations


def well_formed(text: str) -> str:
    """text with each lone surrogate replaced by U+FFFD; a surrogate pair (a
    high one then a low one) is joined into the character it stands for."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text
