"""The build cache: what parsing and rendering produced, kept between builds.

Entries live in the user's cache folder (``$XDG_CACHE_HOME/ainfra-cards``, else
``~/.cache/ainfra-cards``), one JSON file per entry (its data is JSON data, where bytes may
stand too: a file holds them as base64), named by a hash of everything that shapes
the entry (the input text, and the code and library versions that turn it into output). So an
entry is never stale: a changed input or a changed renderer asks for another name. The cache
never changes what is built; an entry that is missing, unreadable, corrupt or from another
format is a miss, and a cache folder that cannot be written just means no cache.

Entries are never stale, but they pile up (every edited file, every lock a build writes), so a
build sweeps the folder at most once a day: entries not written for MAX_AGE_DAYS go, and of the
locks' data only the newest few are kept. A removed entry only costs a later miss.

A build also keeps a bundle: one file holding every entry that build used (read or written),
named after the output it builds. The next build of that output reads the bundle once instead
of a thousand small files; what the bundle lacks is looked up entry by entry as before. A build
that changed little (one edit) does not write the whole bundle again: what it added goes into
a small second bundle beside it, the delta (see close_bundle). Bundled entries are stored as
plain JSON data would be read back (tuples as lists), each unpacked afresh on every read, so
a bundle can change neither what a build reads nor what it makes. A bundle that is damaged,
truncated or written by another Python is ignored whole.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import marshal
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

CACHE_FORMAT = 1
APP_DIR = "ainfra-cards"
SWEEP_EVERY = 24 * 3600  # seconds between two sweeps of the cache folder
MAX_AGE_DAYS = 60  # an entry not written for this long is removed by the next sweep
KEEP_NEWEST = {"lock": 8, "bundle": 8}  # kinds only useful while recent: the newest this many are kept
SWEEP_STAMP = ".last-sweep"
ENTRY_SUFFIXES = (".json", ".bin")  # an entry's file; a bundle's
# Kinds whose entries change under one name (a record of an output; the last version of a file):
# never bundled, always read from their own file, so a bundle can never hold a stale one.
UNBUNDLED = {"output", "render-last"}
# A bundle is written again only when enough of what a build used was not in it (or enough of
# it went unused): after one edit the next build reads its few new entries one by one instead.
REBUNDLE_SHARE = 0.05
BUNDLE_MAGIC = (
    b"ainfra-cards cache bundle 2 " + sys.implementation.cache_tag.encode() + b" %d\n" % marshal.version
)


Packed = bytes | memoryview  # an entry's marshalled data (a view into the bundle file it came from)


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / APP_DIR


class Cache:
    """get/put JSON values by (kind, key); a Cache(None) remembers nothing (build --no-cache)."""

    def __init__(self, root: Path | None):
        self.root = root
        self.hits = 0
        self.misses = 0
        self._bundle_path: Path | None = None  # set by open_bundle()
        self._bundled: dict[str, Packed] = {}  # "kind/key" -> marshalled data, as the bundle was read
        self._used: dict[str, Packed] = {}  # the entries this build read or wrote, for the next bundle
        self._pending: set[str] = set()  # entries written while bundling: files only if no new bundle
        self._delta: dict[str, Packed] = {}  # the entries recent builds added to the bundle
        self._fallback: dict[str, Packed] = {}  # another output's bundle, read when this one lacks an entry
        self._folders: set[Path] = set()  # folders known to exist (a mkdir costs a millisecond)

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
        if self._bundle_path is not None and kind not in UNBUNDLED:
            name = f"{kind}/{key}"
            packed = (
                self._used.get(name)
                or self._bundled.get(name)
                or self._delta.get(name)
                or self._fallback.get(name)
            )
            if packed is not None:
                with contextlib.suppress(ValueError, EOFError, TypeError):  # a broken entry is a miss
                    data = marshal.loads(packed)
                    self.hits += 1
                    self._used[name] = packed
                    return data
        path = self._path(kind, key)
        try:
            raw = path.read_bytes()
            entry = json.loads(raw, object_hook=_bytes_from_json) if _BYTES_MARK in raw else json.loads(raw)
        except (OSError, ValueError):  # missing, unreadable or not JSON: a miss
            self.misses += 1
            return None
        if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT or entry.get("key") != key:
            self.misses += 1
            return None
        self.hits += 1
        self._keep_alive(path)
        if self._bundle_path is not None and kind not in UNBUNDLED:
            self._used[f"{kind}/{key}"] = marshal.dumps(entry.get("data"))  # JSON data: plain already
        return entry.get("data")

    def _keep_alive(self, path: Path) -> None:
        """An entry still in use is re-stamped once it is half-way to the sweep's age limit."""
        with contextlib.suppress(OSError):
            if time.time() - path.stat().st_mtime > MAX_AGE_DAYS * 86400 / 2:
                os.utime(path)

    def put(self, kind: str, key: str, data: Any, plain: bool = False) -> None:
        """Keep data (JSON data, or bytes in its place) under (kind, key). plain: the caller
        vouches that data holds only what json.loads gives (str-keyed dicts, lists, strings,
        numbers, None) and bytes, so the bundle takes it as it is."""
        if self.root is None:
            return
        if self._bundle_path is not None and kind not in UNBUNDLED:
            name = f"{kind}/{key}"
            try:
                self._used[name] = marshal.dumps(data if plain else _as_json_reads(data))
            except (TypeError, ValueError):  # not JSON data (a hand-written lock with a date in it)
                return
            self._pending.add(name)  # written when the bundle is closed (see close_bundle)
            return
        self._write_entry(kind, key, data)

    def _write_entry(self, kind: str, key: str, data: Any) -> None:
        try:
            entry = {"format": CACHE_FORMAT, "key": key, "data": data}
            text = json.dumps(entry, ensure_ascii=False, default=_bytes_as_json)
        except (TypeError, ValueError):  # not JSON data (a hand-written lock with a date in it)
            return
        self._write(self._path(kind, key), text.encode("utf-8"))

    def open_bundle(self, name: str, fallback: str | None = None) -> None:
        """Read the bundle of the last build named `name` (an output's path); from now on every
        entry read or written is also kept for the next bundle (see close_bundle).

        fallback names another output's bundle to read entries from when this one lacks them
        (a module's deck, or study.html alone, from the bank's whole deck): entries that went
        into a bundle have no file of their own."""
        if self.root is None:
            return
        self._bundle_path = self._bundle_file(name)
        self._bundled, self._used = self._read_bundle(self._bundle_path), {}
        self._delta = self._read_bundle(_delta_file(self._bundle_path))
        if fallback is not None and fallback != name:
            self._fallback = self._read_bundle(self._bundle_file(fallback))

    def _bundle_file(self, name: str) -> Path:
        return self._path("bundle", digest_name(name)).with_suffix(".bin")

    def _read_bundle(self, path: Path) -> dict[str, Packed]:
        """A bundle's entries; {} for a missing, damaged, truncated or foreign one.

        A bundle is BUNDLE_MAGIC, a line "<index length> <crc of the rest>", the index (name ->
        offset and length, marshalled), then the entries one after another. Each entry is read
        in place (a view of the file's bytes): the file is not copied again."""
        with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
            raw = path.read_bytes()
            if not raw.startswith(BUNDLE_MAGIC):
                return {}
            start = raw.index(b"\n", len(BUNDLE_MAGIC)) + 1
            size, crc = map(int, raw[len(BUNDLE_MAGIC) : start].split())
            rest = memoryview(raw)[start:]
            if zlib.crc32(rest) != crc:
                return {}
            index, data = marshal.loads(rest[:size]), rest[size:]
            if isinstance(index, dict) and all(
                isinstance(name, str) and type(at) is tuple and len(at) == 2 and at[0] + at[1] <= len(data)
                for name, at in index.items()
            ):
                self._keep_alive(path)
                return {name: data[offset : offset + length] for name, (offset, length) in index.items()}
        return {}

    @staticmethod
    def _bundle_bytes(entries: dict[str, Packed]) -> bytes:
        """The bytes _read_bundle() reads these entries back from."""
        index, offset = {}, 0
        for name, packed in entries.items():
            index[name] = (offset, len(packed))
            offset += len(packed)
        head = marshal.dumps(index)
        rest = b"".join([head, *entries.values()])
        return BUNDLE_MAGIC + b"%d %d\n" % (len(head), zlib.crc32(rest)) + rest

    def close_bundle(self, rebundle: bool = True) -> None:
        """Stop bundling: write the next bundle if enough changed, else the delta (only when
        rebundle); failing that, the entries this build made as files of their own.

        The next bundle holds what this build used, and, of the kinds of entry it used none of,
        what the last bundle held: a build that changed nothing reads no rendered piece, and
        must not drop them. An entry that went into a bundle gets no file: a first build writes
        one file, not a thousand (each costs a millisecond or two on some file systems).

        When under REBUNDLE_SHARE of what this build used is new to the bundle, the bundle is
        left as it is and the new entries go into the delta (with the delta's entries of kinds
        this build did not use, as above): after one edit, a build writes a few kilobytes, not
        the whole bundle. Every bundled entry is named by what it holds, so a bundle some edits
        old is still right: it only lacks what its delta or their own files hold."""
        if self._bundle_path is None:
            return
        path, self._bundle_path = self._bundle_path, None
        old, delta, pending, used = self._bundled, self._delta, self._pending, self._used
        self._bundled, self._delta, self._pending, self._used, self._fallback = {}, {}, set(), {}, {}
        kinds = {_kind(name) for name in used}
        kept = {name: packed for name, packed in {**old, **delta}.items() if _kind(name) not in kinds}
        new = sum(1 for name in used if name not in old)
        dropped = sum(1 for name in old if name not in used and name not in kept)
        if rebundle and (new > REBUNDLE_SHARE * len(used) or dropped > REBUNDLE_SHARE * len(old)):
            if self._write(path, self._bundle_bytes({**kept, **used})):
                _delta_file(path).unlink(missing_ok=True)  # its entries are in the bundle now
                return
        elif rebundle:
            added = {name: packed for name, packed in kept.items() if name in delta}
            added.update((name, packed) for name, packed in used.items() if name not in old)
            if added.keys() == delta.keys():  # entries are named by what they hold: the same delta
                return
            if self._write(_delta_file(path), self._bundle_bytes(added)):
                return
        for name in sorted(pending):
            kind, key = name.split("/", 1)
            self._write_entry(kind, key, marshal.loads(used[name]))

    def detach(self) -> None:
        """Forget the bundle without writing anything (a forked worker: its parent writes it)."""
        self._bundle_path, self._bundled, self._used, self._pending = None, {}, {}, set()
        self._delta, self._fallback = {}, {}

    def _write(self, path: Path, data: bytes) -> bool:
        """Write a file atomically; False if it could not be (no cache, not an error)."""
        try:
            if path.parent not in self._folders:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._folders.add(path.parent)
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        except OSError:
            return False
        return True

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
                    ((p.stat().st_mtime, p) for p in kind_dir.glob("*/*") if p.suffix in ENTRY_SUFFIXES),
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


def _kind(name: str) -> str:
    """The kind of a bundled entry, from its name ("kind/key")."""
    return name.split("/", 1)[0]


def _delta_file(bundle: Path) -> Path:
    """Where a bundle's delta goes: beside it (see close_bundle)."""
    return bundle.with_name(bundle.stem + ".delta.bin")


def digest_name(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


_BYTES_KEY = "\x00bytes"  # {_BYTES_KEY: base64} is bytes in an entry's file (no real key has a NUL)
_BYTES_MARK = json.dumps(_BYTES_KEY).encode()  # as it appears in a file: only such files need the hook


def _bytes_as_json(value: object) -> dict[str, str]:
    if isinstance(value, bytes):
        return {_BYTES_KEY: base64.b64encode(value).decode("ascii")}
    raise TypeError(f"not JSON data: {type(value).__name__}")


def _bytes_from_json(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and isinstance(obj.get(_BYTES_KEY), str):
        return base64.b64decode(obj[_BYTES_KEY])
    return obj


def _as_json_reads(data: Any) -> Any:
    """data as json.loads(json.dumps(data)) gives it back (tuples become lists), cheaply;
    bytes stay bytes (an entry's file keeps them, see _bytes_as_json)."""
    kind = type(data)
    if kind is dict:
        if all(type(k) is str for k in data):
            return {k: _as_json_reads(v) for k, v in data.items()}
        return json.loads(json.dumps(data))
    if kind is list or kind is tuple:
        return [_as_json_reads(v) for v in data]
    if kind in (str, int, float, bool, bytes) or data is None:
        return data
    return json.loads(json.dumps(data))


NO_CACHE = Cache(None)
