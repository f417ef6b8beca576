"""What a build would write, as one plain value: the Plan, and the notes it is made of.

build.py computes a Plan (it parses, matches, digests and computes the next lock) and hands it
to each output; outputs read it and import nothing of the build. The rendered questions are
filled in only when an output is actually rendered: a build whose outputs are all current needs
only the notes' content digests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import notetype as nt
from .errors import Problem
from .ids import Assignment, Judgement
from .lockfile import GENERATOR, Lock, LockEntry, dump_lock
from .media import anki_name
from .model import Bank, Card, MemoryPoint, Question
from .render import Fragment, RenderedQuestion, card_fields, question_fields
from .util import digest


@dataclass(frozen=True)
class NoteRef:
    """A memory point and the note it is: its GUID and the time its content last changed."""

    question: Question
    point: MemoryPoint
    guid: str
    mod: int


@dataclass
class ModuleChanges:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    retired: int = 0


@dataclass
class Plan:
    """Everything a build would write, computed without writing anything."""

    bank: Bank
    notes: list[NoteRef]  # every memory point of the bank, in bank order
    content: dict[str, str]  # guid -> digest of the note's content
    lock: Lock  # the lock after this build
    assignment: Assignment
    changes: dict[str, ModuleChanges]  # by module label
    media: dict[str, Path]  # Anki media name -> file
    warnings: list[Problem] = field(default_factory=list)
    rendered: dict[str, RenderedQuestion] = field(default_factory=dict)  # by question path
    page_bodies: dict[PurePosixPath, Fragment] = field(default_factory=dict)  # by page path

    def guid(self, q: Question, p: MemoryPoint) -> str | None:
        return self.assignment.guids.get((q.key, p.index))

    def question(self, q: Question) -> RenderedQuestion:
        return self.rendered[str(q.path)]

    def page_body(self, page: object) -> Fragment | None:
        return self.page_bodies.get(getattr(page, "path", None))  # type: ignore[arg-type]

    def media_names(self, q: Question) -> list[str]:
        return [anki_name(path) for path in q.media.values()]

    @property
    def cards(self) -> list[Card]:
        """Every note with its rendered fields, in bank order (every question must be rendered)."""
        by_guid = {n.guid: n for n in self.notes}
        cards = []
        for q in self.bank.questions:
            r = self.question(q)
            shared, tags = question_fields(q, r), tags_of(q)
            for p, (cue, answer) in zip(q.points, r.points, strict=True):
                guid = self.assignment.guids[(q.key, p.index)]
                fields = card_fields(shared, cue, answer)
                cards.append(Card(guid, by_guid[guid].mod, fields, tags, q.module, q.number))
        return cards

    @property
    def lock_text(self) -> str:
        return dump_lock(self.lock, GENERATOR)

    @property
    def retired(self) -> list[LockEntry]:
        return self.assignment.retired

    @property
    def judgements(self) -> list[Judgement]:
        return self.assignment.judgements


def tags_of(q: Question) -> list[str]:
    """A question's notes' tags: its module, its number, then its own (front matter)."""
    tags = [f"{nt.TAG_ROOT}::{q.module.slug}", f"{nt.TAG_ROOT}::Q{q.number:03d}", *q.tags]
    return sorted(set(tags), key=tags.index)


def note_digests(q: Question, r: RenderedQuestion) -> list[str]:
    """Each note's content digest for one question: what its fields, tags and deck hash to."""
    shared, tags, deck = question_fields(q, r), tags_of(q), nt.deck_id(q.module.number)
    return [digest(card_fields(shared, cue, answer), tags, deck) for cue, answer in r.points]
