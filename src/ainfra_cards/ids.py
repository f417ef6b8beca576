"""Stable identity: match each memory point of the bank to the note it continues.

A learner's review history hangs on the note GUID, so a memory point must keep its GUID through
every edit that keeps it the same fact: a corrected answer, a reworded cue, a small change to
both, items moved around it, its question renumbered, renamed or moved. A different fact, even a
look-alike one, must get a new GUID and leave the old note (and its reviews) alone. The rule is
same_fact(); assign() applies it question by question.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from .lockfile import Lock, LockEntry
from .model import MemoryPoint, Question

# Namespace of every GUID this tool makes: no other deck's GUIDs start with it, and it must
# never change, or every learner's notes would be orphaned.
GUID_PREFIX = "aic:"
GUID_SALT = "ainfra-cards"
MAX_GUID_SALTS = 1000  # tries to find a GUID not taken yet; more is impossible in practice
GUID_HEX_CHARS = 16  # 64 bits of SHA-256 after the prefix

# How alike two texts must be (difflib ratio on their plain form); see same_fact().
ALIKE = 0.6  # both sides edited: each must still be at least this alike to be the same fact
ACROSS = 0.8  # across questions: one side identical, the other at least this alike
CHANGED_A_LOT = 0.7  # a kept GUID whose cue or answer is less alike than this is shown for review


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
    where: str = ""  # path:line of the item in the bank


@dataclass(frozen=True)
class Assignment:
    """The result of matching: a GUID per memory point, and what happened to the old notes."""

    guids: dict[tuple[str, int], str]  # (question key, item index) -> guid
    new: set[str]
    retired: list[LockEntry]  # newly retired (gone since the lock was written)
    judgements: list[Judgement] = field(default_factory=list)


_NOT_COMPARED_RE = re.compile(r"[\s`*_]+")
_FORMS: dict[str, str] = {}  # text -> its comparison form, made once per process


def comparison_form(text: str) -> str:
    """Comparison form of a cue or answer: no Markdown markers, no spaces, lower case."""
    form = _FORMS.get(text)
    if form is None:
        form = _FORMS[text] = _NOT_COMPARED_RE.sub("", text).lower()
    return form


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, comparison_form(a), comparison_form(b), autojunk=False).ratio()


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
    for salt in range(MAX_GUID_SALTS):
        digest = hashlib.sha256(f"{GUID_SALT}\x1f{question_key}\x1f{basis}\x1f{salt}".encode()).hexdigest()
        guid = GUID_PREFIX + digest[:GUID_HEX_CHARS]
        if guid not in taken:
            return guid
    raise AssertionError(f"unreachable: {MAX_GUID_SALTS} GUID collisions")


def _text_key(cue: str, answer: str) -> tuple[str, str]:
    return comparison_form(cue), comparison_form(answer)


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
                index.setdefault(("cue", comparison_form(e.cue)), []).append(e)
                index.setdefault(("answer", comparison_form(e.answer)), []).append(e)
        return {
            i: index.get(("cue", comparison_form(p.cue)), [])
            + index.get(("answer", comparison_form(p.answer)), [])
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
            basis = f"#{p.explicit_id}" if p.explicit_id else comparison_form(p.cue)
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
        if (p.cue, p.answer) == (e.cue, e.answer):
            continue  # unchanged: nothing to show (and no need to compare)
        c, a = similarity(p.cue, e.cue), similarity(p.answer, e.answer)
        overruled = e.guid in m.by_id and same_fact(p, e) is None  # kept only because of its id
        if min(c, a) < CHANGED_A_LOT or overruled:
            out.append(
                Judgement(
                    e.guid,
                    q.number,
                    p.index,
                    (e.cue, e.answer),
                    (p.cue, p.answer),
                    c,
                    a,
                    e.guid in m.by_id,
                    f"{q.path}:{p.line}",
                )
            )
    return out
