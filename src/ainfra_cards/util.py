"""Small helpers shared by several stages: hashing, packaged static files, atomic writes."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from importlib.resources import files
from pathlib import Path

from .errors import CardsError, Problem

DIGEST_CHARS = 16  # hex characters kept of a SHA-256: 64 bits, ample for one bank's notes


def digest(*parts: object) -> str:
    """A short stable hash of the repr of each part (content digests, cache keys)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\x1f")
    return h.hexdigest()[:DIGEST_CHARS]


def text_key(*parts: str | bytes) -> str:
    """A hash of texts, for naming cache entries: unlike digest(), no repr() of a whole file."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(b"%d\x1f" % len(data))
        h.update(data)
    return h.hexdigest()


def short_hash(text: str, n: int = 8) -> str:
    """A few hex characters of SHA-1, for anchors and browser-storage ids (never for identity)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:n]


@cache
def static_text(name: str) -> str:
    """A file shipped in the package's static/ folder (templates, CSS, JS)."""
    return files("ainfra_cards").joinpath("static").joinpath(name).read_text(encoding="utf-8")


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn an operating-system error while writing path into a one-line CardsError."""
    try:
        yield
    except OSError as e:
        where = Path(e.filename) if e.filename else path
        raise CardsError(
            Problem(
                str(where),
                1,
                f"cannot write {path.name}: {e.strerror or e}; make sure {path.parent} is a folder "
                "you can write to (the previous outputs were left as they were)",
            )
        ) from e


def leftover_temp_files(path: Path) -> list[Path]:
    """Temporary files that atomic_write(path) made and a killed process never renamed."""
    return sorted(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call write(tmp) for a temporary file beside path, then rename it over path.

    The file ends up with the mode a new file gets under the umask, or the mode of the file it
    replaces: mkstemp's private 0600 must not leak into outputs meant to be shared.
    """
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(name)
        try:
            write(tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.chmod(tmp, _mode_for(path))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def write_bytes(path: Path, data: bytes) -> None:
    atomic_write(path, lambda tmp: tmp.write_bytes(data))


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
