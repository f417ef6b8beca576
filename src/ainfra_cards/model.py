"""Plain data passed between the pipeline stages: sources -> parse -> items -> ids -> render -> outputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Literal

PointKind = Literal["pair", "cloze", "title"]


@dataclass(frozen=True)
class Module:
    """A module folder such as ``05-数据并行``."""

    number: int
    name: str
    folder: str

    @property
    def label(self) -> str:
        """Human label, e.g. ``05 数据并行``."""
        return f"{self.number:02d} {self.name}"

    @property
    def slug(self) -> str:
        """Space-free label for tags, e.g. ``05-数据并行``."""
        return f"{self.number:02d}-{self.name}".replace(" ", "_")


@dataclass(frozen=True)
class MemoryPoint:
    """One top-level item of 记忆要点: becomes one note.

    ``kind`` says how the front was made: ``pair`` (cue and answer split at a separator),
    ``cloze`` (a plain sentence with its key term hidden) or ``title`` (a plain sentence with
    no term to hide: the front asks for point k/n of the question).
    """

    cue: str  # Markdown
    answer: str  # Markdown (may contain a nested list)
    kind: PointKind
    line: int  # 1-based line of the item in its file (for messages that point at it)
    index: int  # 1-based position within 记忆要点
    explicit_id: str | None = None
    cloze_term: str | None = None  # for kind == "cloze": the Markdown hidden on the front


@dataclass
class Question:
    """One question file."""

    number: int
    title: str
    path: PurePosixPath  # relative to the bank folder, POSIX separators
    module: Module
    prompt: str = ""  # 题目, Markdown
    explanation: str = ""  # 完整讲解, Markdown
    talking_points: str = ""  # 面试要点, Markdown
    extra_sections: list[tuple[str, str]] = field(default_factory=list)
    points: list[MemoryPoint] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    explicit_id: str | None = None  # front matter ``id``
    points_line: int = 0  # line of the ``## 记忆要点`` heading
    media: dict[str, Path] = field(default_factory=dict)  # image reference as written -> file
    source_key: str = ""  # a hash of the file's path and text: names its cache entries

    @cached_property
    def key(self) -> str:
        """Identity of the question in the lock: its front-matter id, else its number.
        (Cached: identity matching asks for it tens of thousands of times; a question's number
        and id are never changed once it is parsed.)"""
        return self.explicit_id or f"{self.number:03d}"


@dataclass
class Page:
    """A non-question Markdown page (front page, module page, guided tour)."""

    path: PurePosixPath
    title: str
    body: str
    source_key: str = ""


@dataclass
class Bank:
    """A whole parsed bank."""

    title: str
    questions: list[Question]
    pages: list[Page]
    modules: list[Module]

    def module_questions(self, module: Module) -> list[Question]:
        return [q for q in self.questions if q.module == module]


@dataclass(frozen=True)
class Card:
    """A memory point with its identity and rendered fields: what goes into one Anki note."""

    guid: str
    mod: int
    fields: dict[str, str]
    tags: list[str]
    module: Module
    question: int
    suspended: bool = False  # a retired card: new learners never study it
