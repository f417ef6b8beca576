"""The build cache: what parsing and rendering produced, kept between builds.

Entries live in the user's cache folder (``$XDG_CACHE_HOME/ainfra-cards``, else
``~/.cache/ainfra-cards``), one JSON file per entry, named by a hash of everything that shapes
the entry (the input text, and the code and library versions that turn it into output). So an
entry is never stale: a changed input or a changed renderer asks for another name. The cache
never changes what is built; an entry that is missing, unreadable, corrupt or from another
format is a miss, and a cache folder that cannot be written just means no cache.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_FORMAT = 1
APP_DIR = "ainfra-cards"


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
        try:
            entry = json.loads(self._path(kind, key).read_bytes())
        except (OSError, ValueError):  # missing, unreadable or not JSON: a miss
            self.misses += 1
            return None
        if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT or entry.get("key") != key:
            self.misses += 1
            return None
        self.hits += 1
        return entry.get("data")

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


NO_CACHE = Cache(None)
