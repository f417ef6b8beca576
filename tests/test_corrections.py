"""Corrections reach what learners remember: revised cards are tagged and show their previous
text, retired cards keep shipping marked 退役 (suspended for new learners), and every change is in
the changelog. Each promise is checked by importing the built decks into real Anki collections."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from conftest import Builder, Learner, question_md, write_bank

from ainfra_cards.build import BuildRequest, run_build
from ainfra_cards.cli import main
from ainfra_cards.history import RETIRED_SHIPS_FOR, version_of

DAY = 86400
POINTS = [
    "1. **桶大小默认值**：25 MB",
    "2. **首桶大小**：约 1 MB",
    "3. **何时发起 all-reduce**：桶内梯度全部就绪",
]
OTHER = ["1. **每卡发送量**：2(N-1)/N·S", "2. **环的步数**：2(N-1) 步"]


def _bank(root: Path) -> Path:
    return write_bank(
        root / "questions",
        {
            "05-数据并行/046-a.md": question_md(46, "DDP 分桶", POINTS),
            "08-通信/087-b.md": question_md(87, "all-reduce 通信量", OTHER),
        },
    )


def _edit(bank: Path, rel: str, old: str, new: str) -> None:
    path = bank / rel
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new), "utf-8")


def _schedule(learner: Learner, guid: str) -> tuple[int, int, int, int, int, int]:
    card = learner.card_of(guid)
    return (card.id, card.ivl, card.due, card.queue, card.type, learner.reviews(card.id))


def _guid(plan, cue: str) -> str:
    return next(n.guid for n in plan.notes if n.point.cue == cue)


def test_revised_and_retired_cards_reach_the_learner(tmp_path):
    builder = Builder(tmp_path)
    bank = _bank(tmp_path)
    v1 = builder.build()
    bucket, first, when = (_guid(v1, c) for c in ("桶大小默认值", "首桶大小", "何时发起 all-reduce"))
    steps = _guid(v1, "环的步数")
    (tmp_path / "learner").mkdir()
    learner = Learner(tmp_path / "learner" / "collection.anki2")
    try:
        learner.import_deck(builder.paths.deck)
        learner.study_all()
        learner.study_all()

        # v2, a day later: one answer changes meaning
        _edit(bank, "08-通信/087-b.md", "2(N-1) 步", "N-1 步（reduce-scatter）+ N-1 步（all-gather）")
        v2 = builder.build(advance=DAY)
        # v3, a day later: another answer changes meaning, a spacing-only edit, a point deleted
        _edit(bank, "05-数据并行/046-a.md", "25 MB", "25 MiB")
        _edit(bank, "05-数据并行/046-a.md", "桶内梯度全部就绪", "桶内梯度 全部就绪")
        _edit(bank, "05-数据并行/046-a.md", "2. **首桶大小**：约 1 MB\n", "")
        before = {g: _schedule(learner, g) for g in (bucket, first, when, steps)}
        v3 = builder.build(advance=DAY)
        version2, version3 = version_of(builder.now - DAY), version_of(builder.now)
        assert v2.version == version2 and v3.version == version3
        assert [e.guid for e in v3.retired] == [first]

        learner.import_deck(builder.paths.deck)  # the learner skipped v2: imports v3 directly
        notes = learner.notes(raw=True)
        # the revised card: same card, same history, the 修订 note with the old text under the answer
        assert _schedule(learner, bucket) == before[bucket]
        back = notes[bucket]["Back"]
        assert back.startswith("25 MiB") and "修订" in back and version3 in back and ">25 MB<" in back
        # one search finds exactly this release's revisions; the other release's has its own tag
        col = learner.col
        assert col.find_notes(f"tag:AI-Infra::revised::{version3}") == [notes[bucket].id]
        assert col.find_notes(f"tag:AI-Infra::revised::{version2}") == [notes[steps].id]
        assert "修订" not in notes[when]["Back"]  # a space added is not a revision
        # the retired card: its schedule untouched, marked 退役 on both sides, found with one search
        assert _schedule(learner, first) == before[first]
        assert "已退役" in notes[first]["Front"] and "已退役" in notes[first]["Back"]
        assert col.find_notes("tag:AI-Infra::retired") == [notes[first].id]

        # a learner who deleted the retired card gets it back, as a new learner does (below)
        col.remove_notes([notes[first].id])
        learner.import_deck(builder.paths.deck)
        assert _arrives_last_and_marked(learner, first)
    finally:
        learner.close()

    # The package holds the retired card suspended. Anki's default import ("import any learning
    # progress" off) resets every new card, suspension included; so a new learner's copy goes to
    # the last subdeck, after every other card, marked 退役 on its front. With learning progress
    # imported, it arrives suspended.
    for with_progress in (False, True):
        (tmp_path / f"fresh-{with_progress}").mkdir()
        fresh = Learner(tmp_path / f"fresh-{with_progress}" / "collection.anki2")
        try:
            fresh.import_deck(builder.paths.deck, with_scheduling=with_progress)
            queues = {g: fresh.card_of(g).queue for g in fresh.notes()}
            assert queues.pop(first) == (-1 if with_progress else 0) and set(queues.values()) == {0}
            assert _arrives_last_and_marked(fresh, first)
        finally:
            fresh.close()


def _arrives_last_and_marked(learner: Learner, guid: str) -> bool:
    card = learner.card_of(guid)
    others = [learner.card_of(g) for g in learner.notes() if g != guid]
    deck = learner.col.decks.name(card.did)
    front = learner.notes(raw=True)[guid]["Front"]
    return (
        deck == "AI Infra 面经::99 已退役（不必学习）"
        and card.due > max(c.due for c in others)
        and "已退役" in front
    )


def test_the_changelog_lists_added_revised_and_retired_newest_first(tmp_path):
    builder = Builder(tmp_path)
    bank = _bank(tmp_path)
    builder.build()
    _edit(bank, "05-数据并行/046-a.md", "25 MB", "25 MiB")
    _edit(bank, "05-数据并行/046-a.md", "2. **首桶大小**：约 1 MB\n", "")
    _edit(bank, "08-通信/087-b.md", OTHER[1], OTHER[1] + "\n3. **带宽最优的算法**：ring")
    builder.build(advance=DAY)
    version1, version2 = version_of(builder.now - DAY), version_of(builder.now)
    text = (tmp_path / "decks" / "CHANGES.md").read_text("utf-8")
    assert text.index(f"## {version2}") < text.index(f"## {version1}")
    newest = text[text.index(f"## {version2}") : text.index(f"## {version1}")]
    assert "### 新增 / added (1)" in newest and "**带宽最优的算法**：ring" in newest
    assert "### 修订 / revised (1)" in newest and "answer: 25 MB → 25 MiB" in newest
    assert "`05-数据并行/046-a.md:" in newest  # path:line of the revised card
    assert "### 退役 / retired (1)" in newest and "**首桶大小**：约 1 MB" in newest
    assert "首个版本：5 张卡片" in text[text.index(f"## {version1}") :]

    env = {"SOURCE_DATE_EPOCH": str(builder.now)}
    printed = CliRunner(env=env).invoke(main, ["changes", "--questions", str(bank)])
    assert printed.exit_code == 0 and printed.output == text
    since = CliRunner(env=env).invoke(main, ["changes", "--questions", str(bank), "--since", version2])
    assert since.exit_code == 0 and f"## {version2}" not in since.output and "## " not in since.output
    bad = CliRunner(env=env).invoke(main, ["changes", "--questions", str(bank), "--since", "yesterday"])
    assert bad.exit_code == 2 and "YYYY.MM.DD" in bad.output


def test_a_retired_card_ships_for_a_few_versions_then_only_the_lock_keeps_it(tmp_path):
    builder = Builder(tmp_path)
    bank = _bank(tmp_path)
    v1 = builder.build()
    first = _guid(v1, "首桶大小")
    _edit(bank, "05-数据并行/046-a.md", "2. **首桶大小**：约 1 MB\n", "")
    builder.build(advance=DAY)
    _edit(bank, "08-通信/087-b.md", "2. **环的步数**：2(N-1) 步\n", "")  # a second one, a build later
    plan = builder.build(advance=DAY)
    steps = next(e.guid for e in plan.retired if e.guid != first)
    assert [c.guid for c in plan.retired_cards] == [first, steps] and plan.retired_cards[0].suspended
    # the deck the next build reads back from its own lock is the same, card for card and in order
    check = run_build(BuildRequest(bank, now=builder.now + 60, mode="check", use_cache=False))
    assert check.stale == []
    _edit(bank, "08-通信/087-b.md", OTHER[0], OTHER[0] + "\n" + OTHER[1])  # back: a revived card
    for i in range(RETIRED_SHIPS_FOR):  # each day a new version (a card reworded)
        _edit(bank, "08-通信/087-b.md", f"2(N-1) 步{'又' * i}", f"2(N-1) 步{'又' * (i + 1)}")
        plan = builder.build(advance=DAY)
    assert plan.retired_cards == []
    lock = (tmp_path / "decks" / "ainfra-cards.lock.yaml").read_text("utf-8")
    assert f"guid: {first}" in lock and "status: retired" in lock


def test_a_version_is_in_the_deck_description_and_in_study_html(tmp_path):
    builder = Builder(tmp_path)
    _bank(tmp_path)
    plan = builder.build()
    version = version_of(builder.now)
    page = (tmp_path / "decks" / "study.html").read_text("utf-8")
    assert f"版本 {version}" in page
    (tmp_path / "learner").mkdir()
    learner = Learner(tmp_path / "learner" / "collection.anki2")
    try:
        learner.import_deck(builder.paths.deck)
        desc = learner.col.decks.by_name("AI Infra 面经")["desc"]
        assert version in desc and f"tag:AI-Infra::revised::{version}" in desc
    finally:
        learner.close()
    assert plan.version == version
