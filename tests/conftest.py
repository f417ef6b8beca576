"""Shared helpers: tiny banks written into tmp_path, builds, and a real Anki collection."""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest
from anki.scheduler.v3 import CardAnswer

from ainfra_cards.build import BuildRequest, Paths, run_build

NAV = "[返回模块](./README.md) | [返回总览](../README.md)"
NOTICE = '<div class="notice'  # where a card's 修订/退役 note starts (after the answer)


def plain(field: str) -> str:
    """A card field without the notes the tool adds about its history (修订, 退役)."""
    return re.sub(r'<div class="notice[^"]*">.*?</div>', "", field)


def question_md(number: int, title: str, points: list[str], talking: str = "- 先讲机制\n- 再讲取舍") -> str:
    """A question file in the bank's format, with the given 记忆要点 lines."""
    items = "\n".join(points)
    return (
        textwrap.dedent(
            f"""\
        # 第 {number} 题：{title}

        ## 题目

        {title}？

        ---

        ## 完整讲解

        讲解正文。

        ---

        ## 面试要点

        """
        )
        + talking
        + "\n\n---\n\n## 记忆要点\n\n"
        + items
        + f"\n\n{NAV}\n"
    )


def write_bank(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


@dataclass
class Builder:
    """Builds a bank under tmp_path at a controlled clock."""

    root: Path
    now: int = 1_800_000_000

    @property
    def paths(self) -> Paths:
        return Paths.default(self.root / "questions")

    def build(self, advance: int = 100):
        self.now += advance
        return run_build(BuildRequest(self.root / "questions", now=self.now, use_cache=False)).built


@pytest.fixture(autouse=True, scope="session")
def private_cache(tmp_path_factory):
    """Builds in tests (and the processes they start) use a cache folder of their own."""
    folder = tmp_path_factory.mktemp("xdg-cache")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture
def builder(tmp_path: Path) -> Builder:
    return Builder(tmp_path)


class Plain:
    """A note whose fields read as the learner's text alone (see plain()); the rest as the note."""

    def __init__(self, note: Any):
        self._note = note

    def __getitem__(self, name: str) -> str:
        return plain(self._note[name])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._note, name)


class Learner:
    """A learner's Anki collection, driven through Anki's own importer and scheduler."""

    def __init__(self, path: Path):
        self.col = Collection(str(path))

    def import_deck(self, apkg: Path, with_scheduling: bool = False):
        """Import as Anki does with its default options (or with learning progress imported)."""
        options = ImportAnkiPackageOptions(with_scheduling=with_scheduling)
        request = ImportAnkiPackageRequest(package_path=str(apkg), options=options)
        return self.col.import_anki_package(request).log

    def notes(self, raw: bool = False) -> dict[str, Any]:
        """guid -> note; unless raw, its fields read without the 修订/退役 notes the tool adds."""
        notes = (self.col.get_note(i) for i in self.col.find_notes(""))
        return {n.guid: n if raw else Plain(n) for n in notes}

    def card_of(self, guid: str):
        (nid,) = self.col.db.list("select id from notes where guid = ?", guid)
        (cid,) = self.col.db.list("select id from cards where nid = ?", nid)
        return self.col.get_card(cid)

    def study_all(self, rating=CardAnswer.GOOD) -> None:
        for cid in self.col.find_cards(""):
            card = self.col.get_card(cid)
            card.start_timer()
            states = self.col._backend.get_scheduling_states(cid)
            answer = self.col.sched.build_answer(card=card, states=states, rating=rating)
            self.col.sched.answer_card(answer)

    def reviews(self, cid: int) -> int:
        return self.col.db.scalar("select count() from revlog where cid = ?", cid)

    def close(self) -> None:
        self.col.close()


@pytest.fixture
def learner(tmp_path: Path):
    (tmp_path / "learner").mkdir()
    lr = Learner(tmp_path / "learner" / "collection.anki2")
    yield lr
    lr.close()
