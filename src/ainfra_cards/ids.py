"""Stable identity: the lock file, and matching each memory point to its earlier note.

A learner's review history hangs on the note GUID, so a memory point must keep its GUID through
every edit a maintainer makes: a fixed answer, a rewritten cue, a small change to both, items
moved around it, its file renamed or moved. The lock file records, per GUID, the cue and answer
it was last built from; each build matches the bank's items to those records by question and
by text similarity, and only a genuinely new item gets a new GUID.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from .errors import CardsError, Problem
from .model import MemoryPoint, Question

# libyaml's C loader and dumper when PyYAML has them (its wheels do): 20x faster on big locks.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

LOCK_FORMAT = 1
# Namespace of every GUID this tool makes: no other deck's GUIDs start with it, and it must
# never change, or every learner's notes would be orphaned.
GUID_PREFIX = "aic:"
GUID_SALT = "ainfra-cards"

# How alike two texts must be (difflib ratio on their plain form) to be the same memory point.
BOTH_ALIKE = 0.6  # cue and answer both changed a little
ONE_ALIKE = 0.4  # ... while the other one is at least this alike
ONE_CLOSE = 0.85  # one side barely changed (only for texts long enough to judge)
LONG_ENOUGH = 12  # characters; short texts ("25 MB") are alike by chance


@dataclass
class LockEntry:
    """The lock's record of one note."""

    guid: str
    question: str  # the question's key: front-matter id, else its zero-padded number
    number: int
    index: int
    cue: str
    answer: str
    content: str = ""  # digest of everything the note holds; a change moves mod
    mod: int = 0  # when the note's content last changed (Unix seconds)
    status: str = "active"  # or "retired": gone from the bank, kept to restore its GUID
    id: str | None = None  # an explicit item id, once one is given


@dataclass
class Lock:
    """The whole lock file."""

    notetype_digest: str = ""
    notetype_mod: int = 0
    entries: list[LockEntry] = field(default_factory=list)

    def by_guid(self) -> dict[str, LockEntry]:
        return {e.guid: e for e in self.entries}


@dataclass(frozen=True)
class Assignment:
    """The result of matching: a GUID per memory point, and what happened to the old notes."""

    guids: dict[tuple[str, int], str]  # (question key, item index) -> guid
    kept: set[str]  # GUIDs that were in the lock and are in the bank again
    new: set[str]
    retired: list[LockEntry]  # newly retired (gone since the lock was written)


# ---------------------------------------------------------------------------------------------
# Lock file I/O


def load_lock(path: Path) -> Lock | None:
    """Read a lock file; None if it does not exist. Raise CardsError if it is unusable."""
    if not path.exists():
        return None
    where = str(path)
    try:
        data = parse_lock_text(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise CardsError(Problem(where, 1, f"cannot read lock file: {e}")) from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise CardsError(
            Problem(
                where,
                (mark.line + 1) if mark else 1,
                f"lock file is not valid YAML ({getattr(e, 'problem', e)}); restore it from git "
                "(`git checkout -- <lock>`) or resolve the merge conflict; it was not changed",
            )
        ) from e
    return _lock_from_data(data, where)


def parse_lock_text(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader


def _lock_from_data(data: Any, where: str) -> Lock:
    def bad(msg: str) -> CardsError:
        return CardsError(Problem(where, 1, f"{msg}; restore the lock from git; it was not changed"))

    if not isinstance(data, dict) or "format" not in data:
        raise bad("not an ainfra-cards lock file (no 'format' key)")
    if not isinstance(data["format"], int) or data["format"] > LOCK_FORMAT:
        raise CardsError(
            Problem(
                where,
                1,
                f"lock format {data['format']!r} is newer than this ainfra-cards understands "
                f"({LOCK_FORMAT}); upgrade ainfra-cards (pip install -U .); the lock was not changed",
            )
        )
    notetype = data.get("notetype") or {}
    lock = Lock(str(notetype.get("digest", "")), int(notetype.get("mod", 0) or 0))
    seen: set[str] = set()
    for i, raw in enumerate(data.get("notes") or [], 1):
        try:
            entry = LockEntry(**raw)
            entry.guid, entry.question = str(entry.guid), str(entry.question)
            entry.number, entry.index, entry.mod = int(entry.number), int(entry.index), int(entry.mod)
            entry.cue, entry.answer = str(entry.cue), str(entry.answer)
        except (TypeError, ValueError) as e:
            raise bad(f"note {i} of the lock is malformed ({e})") from e
        if entry.status not in ("active", "retired") or not entry.guid:
            raise bad(f"note {i} of the lock has a bad guid or status {entry.status!r}")
        if entry.guid in seen:
            raise bad(f"GUID {entry.guid} appears twice in the lock (a bad merge?)")
        seen.add(entry.guid)
        lock.entries.append(entry)
    return lock


def dump_lock(lock: Lock, generator: str) -> str:
    """The lock as YAML text: deterministic, one block per note, readable in a diff."""
    notes = []
    for e in sorted(lock.entries, key=lambda e: (e.status != "active", e.question, e.index, e.guid)):
        d = asdict(e)
        if d["id"] is None:
            del d["id"]
        notes.append(d)
    data = {
        "format": LOCK_FORMAT,
        "generator": generator,
        "notetype": {"digest": lock.notetype_digest, "mod": lock.notetype_mod},
        "notes": notes,
    }
    header = (
        "# ainfra-cards lock file: the Anki identity (GUID) of every memory point, and when each\n"
        "# note last changed. Commit it with the bank. Do not edit by hand; on a merge conflict,\n"
        "# keep both sides' notes (see README, 'what happens when').\n"
    )
    body = yaml.dump(
        data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=4096, default_flow_style=False
    )
    return header + body


# ---------------------------------------------------------------------------------------------
# Matching


def plain(text: str) -> str:
    """Comparison form of a cue or answer: no Markdown markers, no spaces, lower case."""
    return re.sub(r"[\s`*_]+", "", text).lower()


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, plain(a), plain(b), autojunk=False).ratio()


def match_score(point: MemoryPoint, entry: LockEntry, strict: bool = False) -> float:
    """How surely point is the memory point that entry recorded; 0 when it is not."""
    c, a = similarity(point.cue, entry.cue), similarity(point.answer, entry.answer)
    long_cue = min(len(plain(point.cue)), len(plain(entry.cue))) >= LONG_ENOUGH
    long_answer = min(len(plain(point.answer)), len(plain(entry.answer))) >= LONG_ENOUGH
    same = c == 1.0 or a == 1.0
    if strict:  # across questions: one side identical, the other nearly so
        ok = (c == 1.0 and a >= 0.8) or (a == 1.0 and c >= 0.8)
    else:
        ok = (
            same
            or ((c + a) / 2 >= BOTH_ALIKE and min(c, a) >= ONE_ALIKE)
            or (a >= ONE_CLOSE and long_answer)
            or (c >= ONE_CLOSE and long_cue)
        )
    return (c + a) / 2 + (1.0 if same else 0.0) if ok else 0.0


def derive_guid(question_key: str, basis: str, taken: set[str]) -> str:
    """A GUID from the item's identity; deterministic, namespaced, unique against taken."""
    for salt in range(1000):
        digest = hashlib.sha256(f"{GUID_SALT}\x1f{question_key}\x1f{basis}\x1f{salt}".encode()).hexdigest()
        guid = GUID_PREFIX + digest[:16]
        if guid not in taken:
            return guid
    raise AssertionError("unreachable: 1000 GUID collisions")


def assign(questions: list[Question], lock: Lock | None) -> Assignment:
    """Give every memory point of the bank a GUID, keeping the lock's wherever it matches."""
    entries = list(lock.entries) if lock else []
    claimed: dict[str, tuple[str, int]] = {}
    guids: dict[tuple[str, int], str] = {}

    def claim(q: Question, p: MemoryPoint, e: LockEntry) -> None:
        claimed[e.guid] = (q.key, p.index)
        guids[(q.key, p.index)] = e.guid

    pending = [(q, p) for q in questions for p in q.points]
    # 1. An explicit item id wins over any text.
    by_id = {(e.question, e.id): e for e in entries if e.id}
    for q, p in pending:
        hit = by_id.get((q.key, p.explicit_id)) if p.explicit_id else None
        if hit and hit.guid not in claimed:
            claim(q, p, hit)
    # 2. Identical text in the same question: the common case, found by lookup, not by pairs.
    same_text: dict[tuple[str, str, str], LockEntry] = {}
    for e in sorted(entries, key=lambda e: e.status != "active"):
        if e.guid not in claimed:
            same_text.setdefault((e.question, plain(e.cue), plain(e.answer)), e)
    for q, p in pending:
        twin = same_text.get((q.key, plain(p.cue), plain(p.answer)))
        if twin is None or twin.guid in claimed or (q.key, p.index) in guids:
            continue
        if not (p.explicit_id and twin.id and p.explicit_id != twin.id):
            claim(q, p, twin)

    # 3. Within the same question (same key, or same number when an id was added), by similarity.
    _greedy(
        pending, guids, claimed, entries,
        entry_keys=lambda e: [("key", e.question), ("number", e.number)],
        item_keys=lambda q, p: [("key", q.key), ("number", q.number)],
        strict=False, claim=claim,
    )  # fmt: skip
    # 4. Across questions (a renumbered or moved file): items with an identical cue or answer.
    _greedy(
        pending, guids, claimed, entries,
        entry_keys=lambda e: [("cue", plain(e.cue)), ("answer", plain(e.answer))],
        item_keys=lambda q, p: [("cue", plain(p.cue)), ("answer", plain(p.answer))],
        strict=True, claim=claim,
    )  # fmt: skip
    taken = {e.guid for e in entries}
    new: set[str] = set()
    for q, p in pending:
        if (q.key, p.index) not in guids:
            basis = f"#{p.explicit_id}" if p.explicit_id else plain(p.cue)
            guid = derive_guid(q.key, basis, taken)
            taken.add(guid)
            new.add(guid)
            guids[(q.key, p.index)] = guid
    retired = [e for e in entries if e.guid not in claimed and e.status == "active"]
    return Assignment(guids, set(claimed), new, retired)


def _greedy(  # type: ignore[no-untyped-def]
    pending, guids, claimed, entries, entry_keys, item_keys, strict: bool, claim
) -> None:
    """Pair unmatched items with unclaimed entries, best score first.

    Only entries sharing a key with an item (its question, or an identical text) are scored, so
    a large bank never compares every item with every entry. Ties prefer active entries and
    nearby positions.
    """
    items = [(q, p) for q, p in pending if (q.key, p.index) not in guids]
    free = [e for e in entries if e.guid not in claimed]
    index: dict[object, list[int]] = {}
    for j, e in enumerate(free):
        for key in entry_keys(e):
            index.setdefault(key, []).append(j)
    pairs = []
    for i, (q, p) in enumerate(items):
        for j in sorted({j for key in item_keys(q, p) for j in index.get(key, [])}):
            e = free[j]
            if p.explicit_id and e.id and p.explicit_id != e.id:
                continue
            score = match_score(p, e, strict)
            if score > 0:
                pairs.append((-score, e.status != "active", abs(e.index - p.index), i, j))
    used_items: set[int] = set()
    used_entries: set[int] = set()
    for _, _, _, i, j in sorted(pairs):
        if i in used_items or j in used_entries:
            continue
        used_items.add(i)
        used_entries.add(j)
        claim(items[i][0], items[i][1], free[j])


# ---------------------------------------------------------------------------------------------
# Updating the lock after a build


def digest(*parts: object) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\x1f")
    return h.hexdigest()[:16]


def next_lock(
    lock: Lock | None,
    assignment: Assignment,
    notes: list[tuple[Question, MemoryPoint, str]],
    notetype_digest: str,
    now: int,
) -> Lock:
    """The lock after this build: mod times move only where content changed.

    notes holds (question, point, content digest) for every memory point of the bank.
    """
    old = lock.by_guid() if lock else {}
    entries: list[LockEntry] = []
    for q, p, content in notes:
        guid = assignment.guids[(q.key, p.index)]
        before = old.get(guid)
        unchanged = before is not None and before.content == content
        mod = before.mod if unchanged and before is not None else max(now, (before.mod + 1) if before else 0)
        entry = LockEntry(guid, q.key, q.number, p.index, p.cue, p.answer, content, mod, "active")
        entry.id = p.explicit_id or (before.id if before else None)
        entries.append(entry)
    live = {e.guid for e in entries}
    entries += [replace(e, status="retired") for e in old.values() if e.guid not in live]
    if lock and lock.notetype_digest == notetype_digest:
        nt_mod = lock.notetype_mod
    else:
        nt_mod = max(now, (lock.notetype_mod + 1) if lock else 0)
    return Lock(notetype_digest, nt_mod, entries)
