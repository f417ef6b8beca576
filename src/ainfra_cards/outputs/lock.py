"""The lock file as an output: written last, since it vouches for the deck written before it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lockfile import parse_lock_text
from ..util import digest

if TYPE_CHECKING:
    from ..plan import Plan


@dataclass
class LockOutput:
    path: Path

    def fingerprint(self, plan: Plan) -> str:
        lock = plan.lock
        entries = [
            (e.guid, e.question, e.number, e.index, e.cue, e.answer, e.content, e.mod, e.status, e.id)
            for e in lock.entries
        ]
        return digest("lock", lock.notetype_digest, lock.notetype_mod, entries)

    def render(self, plan: Plan) -> bytes:
        return plan.lock_text.encode("utf-8")

    def is_current(self, plan: Plan) -> bool:
        """Compared as data, not text: another YAML emitter may wrap or quote differently."""
        try:
            on_disk = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return _lock_data(on_disk) == _lock_data(plan.lock_text)


def _lock_data(text: str) -> Any:
    import yaml

    try:
        data = parse_lock_text(text)
    except yaml.YAMLError:  # an unreadable lock is stale
        return None
    if isinstance(data, dict):
        data.pop("generator", None)  # which version wrote it does not make it stale
    return data
