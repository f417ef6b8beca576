"""The build cache: what parsing and rendering produced, kept between builds.

Entries live in the user's cache folder (``$XDG_CACHE_HOME/ainfra-cards``, else
``~/.cache/ainfra-cards``), one JSON file per entry, named by a hash of everything that shapes
the entry (the input text, and the code and library versions that turn it into output). So an
entry is never stale: a changed input or a changed renderer asks for another name. The cache
never changes what is built; an entry that is missing, unreadable, corrupt or from another
format is a miss, and a cache folder that cannot be written just means no cache.

Entries are never stale, but they pile up (every edited file, every lock a build writes), so a
build sweeps the folder at most once a day: entries not written for MAX_AGE_DAYS go, and of the
locks' data only the newest few are kept. A removed entry only costs a later miss.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

CACHE_FORMAT = 1
APP_DIR = "ainfra-cards"
SWEEP_EVERY = 24 * 3600  # seconds between two sweeps of the cache folder
MAX_AGE_DAYS = 60  # an entry not written for this long is removed by the next sweep
KEEP_NEWEST = {"lock": 8}  # kinds only useful while recent: the newest this many are kept
SWEEP_STAMP = ".last-sweep"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / APP_DIR


class Cache:
    """get/put JSON values by (kind, key); a Cache(None) remembers nothing (build --no-cache)."""

    def __init__(self, root: Path | None):
        self.root = root
        self.hits = 0
        self.misses = 0

    @classmethod
    def default(cls) -> Cache:
        return cls(default_cache_dir())

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def _path(self, kind: str, key: str) -> Path:
        assert self.root is not None
        return self.root / kind / key[:2] / f"{key}.json"

    def get(self, kind: str, key: str) -> Any | None:
        if self.root is None:
            return None
        path = self._path(kind, key)
        try:
            entry = json.loads(path.read_bytes())
        except (OSError, ValueError):  # missing, unreadable or not JSON: a miss
            self.misses += 1
            return None
        if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT or entry.get("key") != key:
            self.misses += 1
            return None
        self.hits += 1
        self._keep_alive(path)
        return entry.get("data")

    def _keep_alive(self, path: Path) -> None:
        """An entry still in use is re-stamped once it is half-way to the sweep's age limit."""
        with contextlib.suppress(OSError):
            if time.time() - path.stat().st_mtime > MAX_AGE_DAYS * 86400 / 2:
                os.utime(path)

    def put(self, kind: str, key: str, data: Any) -> None:
        if self.root is None:
            return
        path = self._path(kind, key)
        try:
            text = json.dumps({"format": CACHE_FORMAT, "key": key, "data": data}, ensure_ascii=False)
        except (TypeError, ValueError):  # not JSON data (a hand-written lock with a date in it)
            return
        with contextlib.suppress(OSError):  # a cache that cannot be written is no cache, not an error
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def sweep(self, now: float | None = None) -> int:
        """Remove old entries, if the last sweep was over a day ago; return how many went."""
        if self.root is None:
            return 0
        now = time.time() if now is None else now
        stamp = self.root / SWEEP_STAMP
        with contextlib.suppress(OSError):
            if now - stamp.stat().st_mtime < SWEEP_EVERY:
                return 0
        removed = 0
        with contextlib.suppress(OSError):
            for kind_dir in [d for d in self.root.iterdir() if d.is_dir()]:
                entries = sorted(
                    ((p.stat().st_mtime, p) for p in kind_dir.glob("*/*.json")),
                    key=lambda e: e[0],
                    reverse=True,
                )
                keep = KEEP_NEWEST.get(kind_dir.name, len(entries))
                for i, (mtime, path) in enumerate(entries):
                    if i >= keep or now - mtime > MAX_AGE_DAYS * 86400:
                        with contextlib.suppress(OSError):
                            path.unlink()
                            removed += 1
            stamp.touch()
            os.utime(stamp, (now, now))
        return removed


NO_CACHE = Cache(None)
