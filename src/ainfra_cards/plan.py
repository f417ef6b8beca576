"""What a build would write, as one plain value: the Plan, and the notes it is made of.

build.py computes a Plan (it parses, matches, digests and computes the next lock) and hands it
to each output; outputs read it and import nothing of the build. The rendered questions are
filled in only when an output is actually rendered: a build whose outputs are all current needs
only the notes' content digests.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import notetype as nt
from .errors import Problem
from .ids import Assignment, Judgement
from .lockfile import GENERATOR, Lock, LockEntry, Revision, dump_lock
from .media import anki_name
from .model import Bank, Card, MemoryPoint, Module, Question
from .render import Fragment, RenderedQuestion, card_fields, question_fields
from .util import digest

REVISED_TAG = f"{nt.TAG_ROOT}::revised"  # + "::<version>": the release in which the card changed
RETIRED_TAG = f"{nt.TAG_ROOT}::retired"
# The subdeck a new learner's copy of a retired card goes to: after every module, so that its
# cards come after all others. (Anki's default import resets a card's suspension: see README.)
RETIRED_DECK = Module(99, "已退役（不必学习）", "99-retired")


@dataclass(frozen=True)
class Notice:
    """What a card says of its own history: HTML under its answer, and its tags for it."""

    back: str = ""
    tags: tuple[str, ...] = ()
    revision: Revision | None = None  # the text this card replaced
    page: str = ""  # the previous text as study.html shows it (MathML, no Anki media)


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
    notices: dict[str, Notice] = field(default_factory=dict)  # by GUID: revised notes
    retired_cards: list[Card] = field(default_factory=list)  # retired notes that still ship
    version: str | None = None  # the bank's version (history.py)
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
        """Every note with its rendered fields, in bank order (every question must be rendered),
        then the retired notes that still ship."""
        by_guid = {n.guid: n for n in self.notes}
        cards = []
        for q in self.bank.questions:
            r = self.question(q)
            shared, tags = question_fields(q, r), tags_of(q)
            for p, (cue, answer) in zip(q.points, r.points, strict=True):
                guid = self.assignment.guids[(q.key, p.index)]
                notice = self.notices.get(guid, NO_NOTICE)
                fields, note_tags = note_fields(shared, cue, answer, notice), [*tags, *notice.tags]
                cards.append(Card(guid, by_guid[guid].mod, fields, note_tags, q.module, q.number))
        return cards + self.retired_cards

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


NO_NOTICE = Notice()


def note_fields(shared: dict[str, str], cue: Fragment, answer: Fragment, notice: Notice) -> dict[str, str]:
    fields = card_fields(shared, cue, answer)
    fields["Back"] += notice.back
    return fields


def note_digests(q: Question, r: RenderedQuestion, notices: list[Notice]) -> list[str]:
    """Each note's content digest for one question: what its fields, tags and deck hash to."""
    shared, tags, deck = question_fields(q, r), tags_of(q), nt.deck_id(q.module.number)
    return [
        digest(note_fields(shared, cue, answer, n), [*tags, *n.tags], deck)
        for (cue, answer), n in zip(r.points, notices, strict=True)
    ]


def card_digest(card: Card) -> str:
    """A whole card's content digest (the retired notes': they are made from the lock alone)."""
    return digest(card.fields, card.tags, nt.deck_id(card.module.number), card.suspended)


# ---------------------------------------------------------------------------------------------
# What a card says of its history (cue and answer HTML are rendered Markdown)


def revision_notice(rev: Revision, old_cue: Fragment | None, old_answer: Fragment | None) -> Notice:
    """A revised card's 修订 note: the date and the previous text of what changed."""

    def was(form: str) -> str:
        parts = []
        if old_cue is not None:
            parts.append(f'原提示：<span class="was">{getattr(old_cue, form)}</span>')
        if old_answer is not None:
            parts.append(f'原答案：<span class="was">{getattr(old_answer, form)}</span>')
        return "；".join(parts)

    note = f"<b>修订</b>（{rev.version}）：这张卡的内容在此版更正过。"
    back = f'<div class="notice revised">{note}{was("anki")}</div>'
    return Notice(back, (f"{REVISED_TAG}::{rev.version}",), rev, was("page"))


def retired_card(e: LockEntry, cue: str, answer: str, successor: str | None, bank: Bank, mod: int) -> Card:
    """A retired note as it keeps shipping: marked 退役 on both sides, suspended for new learners."""
    q = next((q for q in bank.questions if q.number == e.number), None)
    module = q.module if q else _nearest_module(bank, e.number)  # for its tag and the card's context
    banner = '<div class="notice retired"><b>已退役</b></div>'
    after = f'已由这张卡取代：<span class="was">{successor}</span>' if successor else "不必再记"
    back = (
        f'<div class="notice retired"><b>已退役</b>（{e.retired_in}）：这条记忆要点已从题库删除，{after}。'
        "</div>"
    )
    fields = {
        "Front": banner + cue,
        "Back": answer + back,
        "Number": str(e.number),
        "Title": q and html_title(q) or f"第 {e.number} 题",
        "Module": module.label,
        "Source": "",
        "Context": "",
        "Prompt": "",
        "Extra": "",
    }
    tags = [RETIRED_TAG, f"{nt.TAG_ROOT}::{module.slug}", f"{nt.TAG_ROOT}::Q{e.number:03d}"]
    return Card(e.guid, mod, fields, tags, RETIRED_DECK, e.number, suspended=True)


def html_title(q: Question) -> str:
    return html.escape(q.title)


def _nearest_module(bank: Bank, number: int) -> Module:
    """The module a question number that left the bank belonged to, as near as the bank tells."""
    q = min(bank.questions, key=lambda q: (abs(q.number - number), q.number))
    return q.module
