"""The lock file as an output: written last, since it vouches for the deck written before it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..ids import remember_forms
from ..lockfile import lock_key, parse_lock_text, remember_lock
from ..util import digest
from . import rendered

if TYPE_CHECKING:
    from ..build import Built


@dataclass
class LockOutput:
    path: Path

    def fingerprint(self, built: Built) -> str:
        lock = built.lock
        entries = [
            (e.guid, e.question, e.number, e.index, e.cue, e.answer, e.content, e.mod, e.status, e.id)
            for e in lock.entries
        ]
        return digest("lock", lock.notetype_digest, lock.notetype_mod, entries)

    def start_render(self, built: Built) -> Callable[[], bytes]:
        return rendered(self.render(built))

    def render(self, built: Built) -> bytes:
        data = self.text(built).encode("utf-8")
        # the next build reads it without parsing, and matches the bank against it faster
        remember_lock(built.cache, data, built.lock)
        remember_forms(built.cache, lock_key(data), built.lock)
        return data

    def text(self, built: Built) -> str:
        return built.lock_text

    def is_current(self, built: Built) -> bool:
        """Compared as data, not text: another YAML emitter may wrap or quote differently."""
        try:
            on_disk = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return _lock_data(on_disk) == _lock_data(self.text(built))


def _lock_data(text: str) -> Any:
    import yaml

    try:
        data = parse_lock_text(text)
    except yaml.YAMLError:  # an unreadable lock is stale
        return None
    if isinstance(data, dict):
        data.pop("generator", None)  # which version wrote it does not make it stale
    return data
