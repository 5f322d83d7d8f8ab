"""The build backend of echo-mq (PEP 517 and PEP 660), standard library only.

Why not setuptools: a fresh venv has no ``wheel`` package, and the setuptools
a venv comes with (58.1 on Python 3.9, 65.5 on 3.11, none at all on 3.12+)
cannot build a wheel without it. This backend needs nothing, so
``pip install --no-build-isolation --no-index ./clients/python`` works offline
in any fresh venv of Python 3.9 or later.

The package is pure Python, so a wheel is the files of src/echo_mq and a
.dist-info directory (METADATA, WHEEL, RECORD); an sdist is the source tree
with a PKG-INFO; an editable wheel is a .pth file naming src/. The metadata
is below; the version is src/echo_mq/version.py's.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, Iterator, List, Optional, Tuple

NAME = "echo-mq"
SUMMARY = "Client and worker loop for echo_mq, the Redis-backed job queue behind an HTTP/JSON API"
REQUIRES_PYTHON = ">=3.9"
CLASSIFIERS = [
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    "Topic :: System :: Distributed Computing",
    "Typing :: Typed",
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIR = os.path.join(ROOT, "src", "echo_mq")
#: What an sdist holds, besides PKG-INFO.
SDIST_PARTS = ("pyproject.toml", "README.md", "build_backend", "src", "tests")
#: The time stamped on every file of a wheel or an sdist, so builds of the
#: same source are the same bytes: SOURCE_DATE_EPOCH when set, else 1980.
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))


def version() -> str:
    """The version src/echo_mq/version.py declares."""
    with open(os.path.join(PACKAGE_DIR, "version.py"), encoding="utf-8") as file:
        found = re.search(r'^__version__ = "([^"]+)"$', file.read(), re.MULTILINE)
    if found is None:
        raise RuntimeError("src/echo_mq/version.py declares no __version__")
    return found.group(1)


def dist_name() -> str:
    """The name as a wheel's file and .dist-info directory spell it."""
    return f"{NAME.replace('-', '_')}-{version()}"


def metadata() -> str:
    """The core metadata (METADATA, PKG-INFO), with README.md as the description."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version()}",
        f"Summary: {SUMMARY}",
        f"Requires-Python: {REQUIRES_PYTHON}",
        *(f"Classifier: {classifier}" for classifier in CLASSIFIERS),
        "Description-Content-Type: text/markdown",
    ]
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    return "\n".join(lines) + "\n\n" + readme


def dist_info_files() -> Dict[str, bytes]:
    """The files of the .dist-info directory but RECORD, by name."""
    wheel = f"Wheel-Version: 1.0\nGenerator: echo_mq_build {version()}\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    return {
        "METADATA": metadata().encode("utf-8"),
        "WHEEL": wheel.encode(),
        "top_level.txt": b"echo_mq\n",
    }


def package_files() -> Iterator[Tuple[str, str]]:
    """(path in the wheel, path on disk) of each file of the package."""
    for folder, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith((".pyc", ".pyo")):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, os.path.dirname(PACKAGE_DIR)).replace(os.sep, "/"), path


def record_line(name: str, data: bytes) -> str:
    """A RECORD line: the file, its urlsafe base64 SHA-256, its size."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(wheel_directory: str, contents: Dict[str, bytes], tag: str = "py3-none-any") -> str:
    """Writes a wheel of contents (path in the wheel: bytes) and its .dist-info;
    returns its file name."""
    info = dist_name() + ".dist-info"
    files = dict(contents)
    files.update({f"{info}/{name}": data for name, data in dist_info_files().items()})
    record = [record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    filename = f"{dist_name()}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            entry = zipfile.ZipInfo(name, date_time=_zip_time())
            entry.external_attr = 0o644 << 16
            wheel.writestr(entry, data, zipfile.ZIP_DEFLATED)
    return filename


def _zip_time() -> Tuple[int, int, int, int, int, int]:
    """EPOCH as a zip entry's date and time."""
    stamp = time.gmtime(max(EPOCH, 315532800))  # a zip cannot say before 1980
    return (stamp.tm_year, stamp.tm_mon, stamp.tm_mday, stamp.tm_hour, stamp.tm_min, stamp.tm_sec)


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


# --- the hooks of PEP 517 and PEP 660 ----------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None
) -> str:
    """Writes the .dist-info directory the wheel will have; returns its name."""
    info = dist_name() + ".dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, data in dist_info_files().items():
        with open(os.path.join(metadata_directory, info, name), "wb") as file:
            file.write(data)
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(
    wheel_directory: str,
    config_settings: Optional[Dict[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    """Builds the wheel: src/echo_mq and its .dist-info."""
    return write_wheel(wheel_directory, {name: _read(path) for name, path in package_files()})


def build_editable(
    wheel_directory: str,
    config_settings: Optional[Dict[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    """Builds an editable wheel: a .pth file that puts src/ on sys.path."""
    pth = (os.path.join(ROOT, "src") + "\n").encode()
    return write_wheel(wheel_directory, {"echo_mq_editable.pth": pth})


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    """Builds the sdist: the source tree (without caches) and PKG-INFO."""
    base = dist_name()
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for part in SDIST_PARTS:
            sdist.add(os.path.join(ROOT, part), f"{base}/{part}", filter=_sdist_entry)
        pkg_info = metadata().encode("utf-8")
        entry = tarfile.TarInfo(f"{base}/PKG-INFO")
        entry.size, entry.mtime, entry.mode = len(pkg_info), EPOCH, 0o644
        sdist.addfile(entry, io.BytesIO(pkg_info))
    return filename


def _sdist_entry(entry: tarfile.TarInfo) -> Optional[tarfile.TarInfo]:
    """Leaves caches and build output out of an sdist, and stamps the rest alike."""
    if "__pycache__" in entry.name or entry.name.endswith((".pyc", ".egg-info")):
        return None
    entry.mtime, entry.uid, entry.gid, entry.uname, entry.gname = EPOCH, 0, 0, "", ""
    return entry
