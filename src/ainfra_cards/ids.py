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
from collections import Counter
from collections.abc import Callable
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

# How alike two texts must be (difflib ratio on their plain form); see same_fact().
ALIKE = 0.6  # both sides edited: each must still be at least this alike to be the same fact
ACROSS = 0.8  # across questions: one side identical, the other at least this alike
CHANGED_A_LOT = 0.7  # a kept GUID whose cue or answer is less alike than this is shown for review


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
class Judgement:
    """A GUID kept although its text changed a lot: shown so the maintainer can confirm it."""

    guid: str
    number: int
    index: int
    old: tuple[str, str]  # (cue, answer) as the lock recorded them
    new: tuple[str, str]
    cue_similarity: float
    answer_similarity: float
    by_id: bool  # matched by an explicit item id, not by its text


@dataclass(frozen=True)
class Assignment:
    """The result of matching: a GUID per memory point, and what happened to the old notes."""

    guids: dict[tuple[str, int], str]  # (question key, item index) -> guid
    new: set[str]
    retired: list[LockEntry]  # newly retired (gone since the lock was written)
    judgements: list[Judgement] = field(default_factory=list)


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


_TERM_RE = re.compile(r"[a-z0-9][a-z0-9_.+\-]*")

Rank = tuple[bool, bool, float]


def key_terms(cue: str) -> set[str]:
    """The Latin words and numbers of a cue: what names its subject (A100, ZeRO-2, NCCL_ALGO)."""
    return set(_TERM_RE.findall(re.sub(r"[`*]", "", cue.lower())))


def same_fact(point: MemoryPoint, entry: LockEntry) -> Rank | None:
    """How surely point is the fact that entry recorded; None when it is another fact.

    The rule, on both sides of the card:
    - an unchanged cue over an edited answer is the same fact (a corrected answer);
    - an unchanged answer under an edited cue is the same fact (a reworded question);
    - when both sides changed, it is the same fact only if each is still at least ALIKE to
      what it was and no key term of the cue was swapped for another (A100 -> B200,
      ZeRO-2 -> ZeRO-3): a new subject over a new answer is a new fact.
    Higher ranks win; an unchanged cue beats an unchanged answer, so swapped answers stay with
    their cues.
    """
    c, a = similarity(point.cue, entry.cue), similarity(point.answer, entry.answer)
    if c < 1.0 and a < 1.0:
        old, new = key_terms(entry.cue), key_terms(point.cue)
        if min(c, a) < ALIKE or (old - new and new - old):
            return None
    return (c == 1.0, a == 1.0, c + a)


def across_questions(point: MemoryPoint, entry: LockEntry) -> Rank | None:
    """same_fact for an item that moved to another question: one side identical, one close."""
    c, a = similarity(point.cue, entry.cue), similarity(point.answer, entry.answer)
    if (c == 1.0 and a >= ACROSS) or (a == 1.0 and c >= ACROSS):
        return (c == 1.0, a == 1.0, c + a)
    return None


def derive_guid(question_key: str, basis: str, taken: set[str]) -> str:
    """A GUID from the item's identity; deterministic, namespaced, unique against taken."""
    for salt in range(1000):
        digest = hashlib.sha256(f"{GUID_SALT}\x1f{question_key}\x1f{basis}\x1f{salt}".encode()).hexdigest()
        guid = GUID_PREFIX + digest[:16]
        if guid not in taken:
            return guid
    raise AssertionError("unreachable: 1000 GUID collisions")


def _text_key(cue: str, answer: str) -> tuple[str, str]:
    return plain(cue), plain(answer)


def pair_questions(questions: list[Question], entries: list[LockEntry]) -> dict[str, str]:
    """Map each question's key to the lock's question key that it continues.

    A question is first paired with the old question that shares most of its unchanged items,
    so renumbered and swapped questions find their own history; a question with no unchanged
    item continues its own key (or its number, when a front-matter id was just added).
    """
    holders: dict[tuple[str, str], set[str]] = {}
    for e in entries:
        holders.setdefault(_text_key(e.cue, e.answer), set()).add(e.question)
    candidates = []
    for q in questions:
        shared = Counter(k for p in q.points for k in holders.get(_text_key(p.cue, p.answer), ()))
        candidates += [(-n, old != q.key, q.key, old) for old, n in shared.items()]
    paired: dict[str, str] = {}
    for _, _, key, old in sorted(candidates):
        if key not in paired and old not in paired.values():
            paired[key] = old
    known = {e.question for e in entries}
    for q in questions:
        for old in (q.key, f"{q.number:03d}"):
            if q.key not in paired and old in known and old not in paired.values():
                paired[q.key] = old
    return paired


class _Matcher:
    """One assignment in progress: which lock entries are claimed by which items."""

    def __init__(self, questions: list[Question], entries: list[LockEntry]):
        self.entries = entries
        self.items = [(q, p) for q in questions for p in q.points]
        self.paired = pair_questions(questions, entries)
        self.guids: dict[tuple[str, int], str] = {}
        self.claimed: dict[str, LockEntry] = {}
        self.by_id: set[str] = set()  # GUIDs claimed through an explicit item id
        known_ids = {e.id for e in entries if e.id} | {e.guid for e in entries}
        # An explicit id the lock has never seen names a new fact: text never matches it to an
        # old note, except an unchanged one (adding an id to an item pins it).
        self.fresh = {
            (q.key, p.index) for q, p in self.items if p.explicit_id and p.explicit_id not in known_ids
        }

    def free(self, q: Question, p: MemoryPoint) -> bool:
        return (q.key, p.index) not in self.guids

    def claim(self, q: Question, p: MemoryPoint, e: LockEntry) -> None:
        self.claimed[e.guid] = e
        self.guids[(q.key, p.index)] = e.guid

    def may_take(self, p: MemoryPoint, e: LockEntry) -> bool:
        """Text may pair these two: the entry is free and no explicit id says otherwise."""
        return e.guid not in self.claimed and not (p.explicit_id and e.id and p.explicit_id != e.id)

    def group(self, q: Question) -> str | None:
        return self.paired.get(q.key)

    def explicit_ids(self) -> None:
        """An explicit item id wins over any text: the same id, or a GUID written as the id."""
        for q, p in self.items:
            found = self._by_explicit_id(q, p) if p.explicit_id else None
            if found is not None and found.guid not in self.claimed:
                self.claim(q, p, found)
                self.by_id.add(found.guid)

    def _by_explicit_id(self, q: Question, p: MemoryPoint) -> LockEntry | None:
        """The entry an explicit id names: in the question's own group, as a GUID, or unique anywhere."""
        here = [e for e in self.entries if e.id == p.explicit_id and e.question == (self.group(q) or q.key)]
        anywhere = [e for e in self.entries if e.id == p.explicit_id]
        as_guid = [e for e in self.entries if e.guid == p.explicit_id]
        for found in (here, as_guid, anywhere):
            if len(found) == 1:
                return found[0]
        return None

    def identical_text(self) -> None:
        """Unchanged items in their question's group: the common case, by lookup."""
        same: dict[tuple[str, str, str], LockEntry] = {}
        for e in sorted(self.entries, key=lambda e: e.status != "active"):
            same.setdefault((e.question, *_text_key(e.cue, e.answer)), e)
        for q, p in self.items:
            twin = same.get((self.group(q) or "", *_text_key(p.cue, p.answer)))
            if twin is None or not self.free(q, p) or not self.may_take(p, twin):
                continue
            if (q.key, p.index) in self.fresh and twin.id:
                continue
            self.claim(q, p, twin)

    def best_pairs(self, candidates: dict[int, list[LockEntry]], rank: Callable[..., Rank | None]) -> None:
        """Pair free items (by position in self.items) with candidate entries, best rank first.

        Ties prefer active entries, then the nearest position, then bank order (deterministic).
        """
        pairs = []
        for i, options in candidates.items():
            p = self.items[i][1]
            for e in options:
                r = rank(p, e) if self.may_take(p, e) else None
                if r is not None:
                    pairs.append(((r, e.status == "active", -abs(e.index - p.index), -i), i, e))
        for _, i, e in sorted(pairs, key=lambda t: (t[0], t[2].guid), reverse=True):
            q, p = self.items[i]
            if self.free(q, p) and e.guid not in self.claimed:
                self.claim(q, p, e)

    def candidates_in_group(self) -> dict[int, list[LockEntry]]:
        groups: dict[str, list[LockEntry]] = {}
        for e in self.entries:
            groups.setdefault(e.question, []).append(e)
        return {
            i: groups.get(self.group(q) or "", [])
            for i, (q, p) in enumerate(self.items)
            if self.free(q, p) and (q.key, p.index) not in self.fresh
        }

    def candidates_across(self) -> dict[int, list[LockEntry]]:
        index: dict[tuple[str, str], list[LockEntry]] = {}
        for e in self.entries:
            if e.guid not in self.claimed:
                index.setdefault(("cue", plain(e.cue)), []).append(e)
                index.setdefault(("answer", plain(e.answer)), []).append(e)
        return {
            i: index.get(("cue", plain(p.cue)), []) + index.get(("answer", plain(p.answer)), [])
            for i, (q, p) in enumerate(self.items)
            if self.free(q, p) and (q.key, p.index) not in self.fresh
        }


def assign(questions: list[Question], lock: Lock | None) -> Assignment:
    """Give every memory point of the bank a GUID, keeping the lock's wherever it is the same fact.

    Order: explicit ids; unchanged items in the old question each question continues; edited
    items there by same_fact(); items moved to another question by across_questions(); the
    rest are new facts and get new GUIDs.
    """
    entries = list(lock.entries) if lock else []
    m = _Matcher(questions, entries)
    m.explicit_ids()
    m.identical_text()
    m.best_pairs(m.candidates_in_group(), same_fact)
    m.best_pairs(m.candidates_across(), across_questions)
    taken = {e.guid for e in entries}
    new: set[str] = set()
    for q, p in m.items:
        if m.free(q, p):
            basis = f"#{p.explicit_id}" if p.explicit_id else plain(p.cue)
            guid = derive_guid(q.key, basis, taken)
            taken.add(guid)
            new.add(guid)
            m.guids[(q.key, p.index)] = guid
    retired = [e for e in entries if e.guid not in m.claimed and e.status == "active"]
    return Assignment(m.guids, new, retired, _judgements(m))


def _judgements(m: _Matcher) -> list[Judgement]:
    """Every kept GUID whose cue or answer changed a lot, or that only its id kept; bank order."""
    out = []
    for q, p in m.items:
        e = m.claimed.get(m.guids[(q.key, p.index)])
        if e is None:
            continue
        c, a = similarity(p.cue, e.cue), similarity(p.answer, e.answer)
        overruled = e.guid in m.by_id and same_fact(p, e) is None  # kept only because of its id
        if min(c, a) < CHANGED_A_LOT or overruled:
            out.append(
                Judgement(
                    e.guid, q.number, p.index, (e.cue, e.answer), (p.cue, p.answer), c, a, e.guid in m.by_id
                )
            )
    return out


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
