"""The build memo: results of pure stages, kept between builds in one SQLite file.

Every entry is named by a hash of its input and of the *whole package's code* and the versions
of the libraries that shape output (code_stamp), so an entry can never be stale: any change to
any module, template or library is a miss. Nothing here knows what it stores; build.py decides
what to reuse (see Memo.get_or).

The file lives in the user's cache folder ($XDG_CACHE_HOME/ainfra-cards, else
~/.cache/ainfra-cards). Values are pickled: the file is the user's own, like their
site-packages. SQLite makes two builds at once safe (a write that finds the file busy is simply
not kept). A corrupt or foreign file is removed and made anew; a folder that cannot be written
means no memo. Neither is ever an error: the memo only saves time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sqlite3
import sys
import time
from collections.abc import Callable
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
APP_DIR = "ainfra-cards"
FILE_NAME = "memo.sqlite3"
APPLICATION_ID = 0x41494352  # "AICR": marks the file as ours (PRAGMA application_id)
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memo (key TEXT PRIMARY KEY, stamp TEXT, day INTEGER, value BLOB);"
    "CREATE INDEX IF NOT EXISTS memo_day ON memo (day)"
)
KEEP_DAYS = 60  # an entry not used for this long is removed
KEEP_CODE_VERSIONS = 3  # entries of the code versions (stamps) written most recently; older go
# Libraries (import names) whose version can change what a build writes.
LIBRARIES = ("markdown", "pygments", "nh3", "latex2mathml", "bs4", "genanki", "yaml")


def default_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / APP_DIR / FILE_NAME


@cache
def code_stamp() -> str:
    """A hash of every file of this package (code, templates, vendored scripts), the library
    versions above and the Python version: whatever can shape a build's result."""
    h = hashlib.sha256(sys.version.encode())
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in LIBRARIES:
        h.update(f"{name}={_installed(name)}".encode())
    return h.hexdigest()


def _installed(module: str) -> tuple[str, int, int]:
    """Which installed copy of a library this is, without importing it: its package file's path,
    size and modification time (an upgrade or reinstall replaces the file). importlib.metadata
    would take 100 ms here, a tenth of a build that changed nothing."""
    spec = find_spec(module)
    origin = spec.origin if spec is not None and spec.origin else ""
    try:
        st = os.stat(origin)
    except OSError:
        return (origin, 0, 0)
    return (origin, st.st_size, st.st_mtime_ns)


class Memo:
    """get_or(kind, parts, compute): compute's result, reused while parts and the code are the same.
    Memo(None) keeps nothing (build --no-cache)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.hits = self.misses = 0
        self._db: sqlite3.Connection | None = None
        self._new: list[tuple[str, bytes]] = []
        self._today = int(time.time() // 86400)
        if path is not None:
            self._db = _open(path)

    @classmethod
    def default(cls) -> Memo:
        return cls(default_path())

    def key(self, kind: str, *parts: Any) -> str:
        h = hashlib.sha256(f"{code_stamp()}\0{kind}".encode())
        for part in parts:
            h.update(b"\0" + (part if isinstance(part, bytes) else repr(part).encode()))
        return h.hexdigest()

    def get_or(self, kind: str, parts: tuple[Any, ...], compute: Callable[[], T]) -> T:
        if self._db is None:
            return compute()
        key = self.key(kind, *parts)
        hit = self._get(key)
        if hit is not None:
            self.hits += 1
            return hit  # type: ignore[no-any-return]
        self.misses += 1
        value = compute()
        self.put(key, value)
        return value

    def get(self, key: str) -> Any | None:
        return None if self._db is None else self._get(key)

    def put(self, key: str, value: Any) -> None:
        if self._db is not None:
            self._new.append((key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)))

    def _get(self, key: str) -> Any | None:
        assert self._db is not None
        try:
            row = self._db.execute("SELECT value, day FROM memo WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            if row[1] < self._today - KEEP_DAYS // 2:  # still in use: keep it another while
                self._new.append((key, row[0]))
            return pickle.loads(row[0])
        except Exception:  # noqa: BLE001 - a damaged entry or file is a miss
            return None

    def close(self) -> None:
        """Keep what this build computed and drop what has gone unused; then let go of the file."""
        db, self._db = self._db, None
        if db is None:
            return
        if not self._new:  # a build that reused everything: nothing to keep, nothing to sweep
            db.close()
            return
        stamp = code_stamp()
        with contextlib.suppress(sqlite3.Error), db:  # busy (another build) or broken: not kept
            db.executemany(
                "INSERT OR REPLACE INTO memo VALUES (?, ?, ?, ?)",
                [(key, stamp, self._today, value) for key, value in self._new],
            )
            db.execute("DELETE FROM memo WHERE day < ?", (self._today - KEEP_DAYS,))
            db.execute(  # every code change makes a whole new set of entries: keep a few sets
                "DELETE FROM memo WHERE stamp NOT IN (SELECT stamp FROM memo GROUP BY stamp"
                " ORDER BY max(rowid) DESC LIMIT ?)",
                (KEEP_CODE_VERSIONS,),
            )
        db.close()
        self._new = []


def _open(path: Path) -> sqlite3.Connection | None:
    """The memo file, made anew if it is missing, corrupt or not ours; None if it cannot be had."""
    for _ in range(2):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=5)
        except (OSError, sqlite3.Error):
            return None
        try:
            app = db.execute("PRAGMA application_id").fetchone()[0]
            if app == 0 and db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                app = APPLICATION_ID
            if app == APPLICATION_ID:
                db.executescript(SCHEMA)
                db.execute("SELECT key, stamp, day, value FROM memo LIMIT 1").fetchall()
                db.commit()
                return db
        except sqlite3.Error:
            pass
        db.close()
        with contextlib.suppress(OSError):
            path.unlink()  # corrupt or foreign: start again
    return None


NO_MEMO = Memo(None)
