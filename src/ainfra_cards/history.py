"""What changed in which version of the bank: revised and retired cards, and the changelog.

The bank's version is the date (UTC, ``YYYY.MM.DD``) of a build that added, reworded or
retired a card; nobody bumps it. The lock records, per note, the version it was added in
(added_in), the version its text last changed in (changed_in), its earlier texts with the
version that replaced each (history), and for a retired note the version it was retired in
and the card that took its place, where the matching knows one (retired_in, replaced_by).
Everything here is a pure function of lock entries.
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass, field, replace

from .lockfile import Lock, LockEntry, Revision
from .model import MemoryPoint, Question

# A retired card keeps shipping (suspended for new learners, marked 退役 for the others) until
# this many newer versions of the bank exist; its GUID stays in the lock for good.
RETIRED_SHIPS_FOR = 5
_MARKUP_RE = re.compile(r"[\s`*_~\\]+")


def version_of(ts: int) -> str:
    """The version a build at ts (Unix seconds) makes: its date in UTC."""
    return time.strftime("%Y.%m.%d", time.gmtime(ts))


def wording(text: str) -> str:
    """A text as compared for revisions: no white space, Markdown markers or punctuation."""
    text = _MARKUP_RE.sub("", unicodedata.normalize("NFKC", text)).lower()
    return "".join(c for c in text if not unicodedata.category(c).startswith("P"))


def reworded(old: LockEntry, cue: str, answer: str) -> bool:
    """Whether a kept note's cue or answer changed in wording (not only spacing, punctuation or markup)."""
    if old.cue == cue and old.answer == answer:
        return False
    return wording(old.cue) != wording(cue) or wording(old.answer) != wording(answer)


@dataclass(frozen=True)
class Carried:
    """What a note's lock entry records of its history after this build."""

    added_in: str
    changed_in: str
    history: list[Revision] = field(default_factory=list)

    @property
    def revision(self) -> Revision | None:
        """The latest revision, shown on the card until the next one replaces it."""
        return self.history[-1] if self.history else None


def carry(before: LockEntry | None, cue: str, answer: str, version: str) -> Carried:
    """A note's history after this build (version), from its entry before it (None: a new note)."""
    if before is None:
        return Carried(version, version)
    since = before.added_in or version_of(before.mod)
    changed = before.changed_in or since
    history = list(before.history)
    if reworded(before, cue, answer):
        history.append(Revision(version, before.cue, before.answer))
        changed = version
    return Carried(since, changed, history)


def versions(lock: Lock | None) -> list[str]:
    """Every version the lock knows of, newest first."""
    seen: set[str] = set()
    for e in lock.entries if lock else []:
        seen.update(v for v in (e.added_in, e.changed_in, e.retired_in) if v)
        seen.update(r.version for r in e.history)
    return sorted(seen, reverse=True)


def shipped_retired(lock: Lock) -> list[LockEntry]:
    """The retired notes that still ship: retired in one of the newest RETIRED_SHIPS_FOR versions."""
    recent = set(versions(lock)[:RETIRED_SHIPS_FOR])
    shipped = [e for e in lock.entries if e.status == "retired" and e.retired_in in recent]
    return sorted(shipped, key=lambda e: (e.number, e.index, e.guid))  # not the lock's history order


# ---------------------------------------------------------------------------------------------
# The next lock


def next_lock(
    lock: Lock | None,
    guids: dict[tuple[str, int], str],
    notes: list[tuple[Question, MemoryPoint, str]],
    notetype_digest: str,
    now: int,
    retired: RetiredNotes | None = None,
) -> Lock:
    """The lock after this build: mod times move only where content changed.

    notes holds (question, point, content digest) for every memory point of the bank; retired
    gives, for notes that leave the bank now, the card that took each one's place, and for
    every retired note that ships, its content digest.
    """
    retired = retired or RetiredNotes()
    version = version_of(now)
    old = lock.by_guid() if lock else {}
    entries: list[LockEntry] = []
    for q, p, content in notes:
        guid = guids[(q.key, p.index)]
        before = old.get(guid)
        c = carry(before, p.cue, p.answer, version)
        entry = LockEntry(
            guid, q.key, q.number, p.index, p.cue, p.answer, content, _mod(before, content, now)
        )
        entry.id = p.explicit_id or (before.id if before else None)
        entry.added_in, entry.changed_in, entry.history = c.added_in, c.changed_in, c.history
        entries.append(entry)
    live = {e.guid for e in entries}
    for e in old.values():
        if e.guid in live:
            continue
        if e.status == "active":  # leaves the bank now
            e = replace(e, status="retired", retired_in=version, replaced_by=retired.replaced_by.get(e.guid))
        content = retired.content.get(e.guid, e.content)
        entries.append(replace(e, content=content, mod=_mod(e, content, now)))
    if lock and lock.notetype_digest == notetype_digest:
        nt_mod = lock.notetype_mod
    else:
        nt_mod = max(now, (lock.notetype_mod + 1) if lock else 0)
    return Lock(notetype_digest, nt_mod, entries, lock.blocks if lock else {})


@dataclass
class RetiredNotes:
    replaced_by: dict[str, str] = field(default_factory=dict)  # newly retired GUID -> its successor's
    content: dict[str, str] = field(default_factory=dict)  # shipped retired GUID -> content digest


def _mod(before: LockEntry | None, content: str, now: int) -> int:
    """A note's modification time: kept while its content is, else now (and always forward)."""
    if before is not None and before.content == content:
        return before.mod
    return max(now, (before.mod + 1) if before else 0)


# ---------------------------------------------------------------------------------------------
# The changelog


@dataclass(frozen=True)
class Revised:
    entry: LockEntry
    old: Revision
    new: tuple[str, str]  # the text that replaced it: (cue, answer)


@dataclass
class Release:
    """What one version changed."""

    version: str
    added: list[LockEntry] = field(default_factory=list)
    revised: list[Revised] = field(default_factory=list)
    retired: list[LockEntry] = field(default_factory=list)


def changelog(lock: Lock, since: str | None = None) -> list[Release]:
    """Per version newer than since, newest first: the cards added, revised and retired."""
    releases = {v: Release(v) for v in versions(lock) if since is None or v > since}
    order = sorted(lock.entries, key=lambda e: (e.number, e.index, e.guid))
    for e in order:
        if e.added_in in releases:
            releases[e.added_in].added.append(e)
        texts = [(r.cue, r.answer) for r in e.history[1:]] + [(e.cue, e.answer)]
        for old, new in zip(e.history, texts[: len(e.history)], strict=True):
            if old.version in releases:
                releases[old.version].revised.append(Revised(e, old, new))
        if e.status == "retired" and e.retired_in in releases:
            releases[e.retired_in].retired.append(e)
    return [releases[v] for v in sorted(releases, reverse=True)]
