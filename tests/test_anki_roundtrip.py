"""A learner's life with the deck, in the real Anki engine: import, study, edits, re-import."""

from __future__ import annotations

import shutil

from conftest import question_md, write_bank

from ainfra_cards import notetype as nt

Q1 = ("01-基础/001-第一题.md", 1, "DDP 的分桶")
Q2 = ("01-基础/002-第二题.md", 2, "ZeRO 的切分")
Q3 = ("02-进阶/011-第三题.md", 11, "NCCL 的算法")

P1 = [
    "1. **bucket_cap_mb 默认值**：25 MB，首桶约 1 MB",
    "2. **参数入桶顺序**：大致为 model.parameters() 的逆序",
    "3. **何时发起 all-reduce**：桶内梯度全部就绪即异步发起",
]
P2 = [
    "1. **ZeRO-1 切分什么**：优化器状态",
    "2. **ZeRO-2 切分什么**：优化器状态与梯度",
    "3. **ZeRO-3 切分什么**：优化器状态、梯度与参数",
]
P3 = [
    "1. **大消息用哪种算法**：ring，带宽最优",
    "2. **小消息用哪种算法**：tree，延迟更低",
    "3. **选择算法的环境变量**：`NCCL_ALGO`",
]


def initial_bank(root):
    return write_bank(
        root / "questions",
        {
            Q1[0]: question_md(Q1[1], Q1[2], P1),
            Q2[0]: question_md(Q2[1], Q2[2], P2),
            Q3[0]: question_md(Q3[1], Q3[2], P3),
        },
    )


def test_first_import_gives_one_note_per_memory_point(builder, learner):
    initial_bank(builder.root)
    plan = builder.build()
    log = learner.import_deck(builder.paths.deck)
    assert len(log.new) == 9
    notes = learner.notes()
    assert len(notes) == 9 and set(notes) == {c.guid for c in plan.cards}
    note = next(n for n in notes.values() if n["Front"] == "bucket_cap_mb 默认值")
    assert note["Back"] == "25 MB，首桶约 1 MB"
    assert note["Number"] == "1" and note["Title"] == "DDP 的分桶"
    assert note["Module"] == "01 基础" and note["Source"] == "01-基础/001-第一题.md"
    assert "先讲机制" in note["Context"]
    assert set(note.tags) == {"AI-Infra::01-基础", "AI-Infra::Q001"}
    names = {d.name for d in learner.col.decks.all_names_and_ids()}
    assert {"AI Infra 面经::01 基础", "AI Infra 面经::02 进阶"} <= names
    card = learner.card_of(note.guid)
    assert learner.col.decks.name(card.did) == "AI Infra 面经::01 基础"
    assert len(learner.col.find_notes("tag:AI-Infra::02*")) == 3
    # the code span renders as code, on the card the learner sees
    ncall = next(n for n in notes.values() if "NCCL_ALGO" in n["Back"])
    assert ncall["Back"] == "<code>NCCL_ALGO</code>"
    assert "bucket_cap_mb 默认值" in learner.card_of(note.guid).question()


def test_reimporting_an_unchanged_deck_changes_nothing(builder, learner):
    initial_bank(builder.root)
    builder.build()
    learner.import_deck(builder.paths.deck)
    learner.study_all()
    before = {g: (n.mod, n.fields) for g, n in learner.notes().items()}
    lock_before = builder.paths.lock.read_text(encoding="utf-8")
    plan = builder.build(advance=5000)  # a later rebuild of the same bank
    assert builder.paths.lock.read_text(encoding="utf-8") == lock_before
    assert all(c.unchanged == c.added + c.unchanged for c in plan.changes.values())
    log = learner.import_deck(builder.paths.deck)
    assert len(log.new) == 0 and len(log.updated) == 0
    assert {g: (n.mod, n.fields) for g, n in learner.notes().items()} == before


def test_edits_keep_every_review_and_reach_the_same_note(builder, learner):
    bank = initial_bank(builder.root)
    first = builder.build()
    learner.import_deck(builder.paths.deck)
    learner.study_all()
    guid_of = {(c.question, c.fields["Front"]): c.guid for c in first.cards}
    history = {}
    for guid in guid_of.values():
        card = learner.card_of(guid)
        history[guid] = (card.id, learner.reviews(card.id), card.ivl, card.type)
        assert learner.reviews(card.id) == 1
    mods_before = {g: n.mod for g, n in learner.notes().items()}

    # Every kind of maintainer edit at once.
    p1 = [
        "1. **bucket_cap_mb 默认值**：25 MB；第一个桶约 1 MB",  # answer fixed
        "2. **参数按什么顺序装进桶**：大致为 model.parameters() 的逆序",  # cue rewritten
        "3. **什么时候发起 all-reduce**：桶内所有梯度就绪后立即异步发起",  # both changed a little
    ]
    p2 = [
        "1. **ZeRO++ 的量化通信**：权重 all-gather 用 INT8",  # inserted
        "2. **ZeRO-3 切分什么**：优化器状态、梯度与参数",  # reordered
        "3. **ZeRO-1 切分什么**：优化器状态",
        "4. **ZeRO-2 切分什么**：优化器状态与梯度",
    ]
    p3 = [P3[0], P3[2]]  # item 2 deleted
    (bank / Q1[0]).write_text(question_md(1, Q1[2], p1), encoding="utf-8")
    (bank / Q2[0]).unlink()  # moved to the other module folder
    (bank / "02-进阶/002-第二题-改名.md").write_text(question_md(2, Q2[2], p2), encoding="utf-8")
    (bank / Q3[0]).rename(bank / "02-进阶/011-NCCL算法选择.md")  # renamed
    (bank / "02-进阶/011-NCCL算法选择.md").write_text(question_md(11, Q3[2], p3), encoding="utf-8")

    second = builder.build()
    deleted = guid_of[(11, "小消息用哪种算法")]
    assert [e.guid for e in second.retired] == [deleted]
    log = learner.import_deck(builder.paths.deck)
    assert len(log.new) == 1

    notes = learner.notes()
    assert len(notes) == 10  # nine old (Anki never deletes) + one inserted
    fronts = [n["Front"] for n in notes.values()]
    assert len(fronts) == len(set(fronts)), "a note was duplicated"
    expect = {
        guid_of[(1, "bucket_cap_mb 默认值")]: ("bucket_cap_mb 默认值", "25 MB；第一个桶约 1 MB"),
        guid_of[(1, "参数入桶顺序")]: ("参数按什么顺序装进桶", None),
        guid_of[(1, "何时发起 all-reduce")]: ("什么时候发起 all-reduce", "桶内所有梯度就绪后立即异步发起"),
        guid_of[(2, "ZeRO-3 切分什么")]: ("ZeRO-3 切分什么", "优化器状态、梯度与参数"),
        guid_of[(11, "选择算法的环境变量")]: ("选择算法的环境变量", "<code>NCCL_ALGO</code>"),
    }
    for guid, (front, back) in expect.items():
        assert notes[guid]["Front"] == front
        if back is not None:
            assert notes[guid]["Back"] == back
    for guid, (cid, reviews, ivl, ctype) in history.items():
        card = learner.card_of(guid)
        assert (card.id, learner.reviews(card.id), card.ivl, card.type) == (cid, reviews, ivl, ctype)
    new_guid = next(g for g in notes if g not in history)
    assert notes[new_guid]["Front"] == "ZeRO++ 的量化通信"
    assert learner.reviews(learner.card_of(new_guid).id) == 0
    moved = notes[guid_of[(2, "ZeRO-1 切分什么")]]
    assert "AI-Infra::02-进阶" in moved.tags and moved["Source"] == "02-进阶/002-第二题-改名.md"
    # Anki's importer leaves an existing card in its deck (README says so): only tags and fields move
    assert learner.col.decks.name(learner.card_of(moved.guid).did) == "AI Infra 面经::01 基础"
    # the retired note is marked 退役 in place (its schedule was checked with the others above)
    retired = learner.notes(raw=True)[deleted]
    assert retired.mod > mods_before[deleted] and "AI-Infra::retired" in retired.tags
    assert "已退役" in retired["Front"] and retired["Front"].endswith("小消息用哪种算法")
    assert learner.card_of(deleted).queue != -1  # the import does not suspend the learner's own card
    # a rebuild with the new lock is a fixed point
    third = builder.build()
    assert sum(c.updated + c.added for c in third.changes.values()) == 0


def test_untouched_notes_are_not_rewritten(builder, learner):
    bank = initial_bank(builder.root)
    builder.build()
    learner.import_deck(builder.paths.deck)
    before = {g: n.mod for g, n in learner.notes().items()}
    fixed = [P1[0].replace("25 MB", "25 MiB"), P1[1], P1[2]]
    (bank / Q1[0]).write_text(question_md(1, Q1[2], fixed), encoding="utf-8")
    plan = builder.build()
    log = learner.import_deck(builder.paths.deck)
    assert len(log.updated) == 1 and len(log.new) == 0
    after = {g: n.mod for g, n in learner.notes().items()}
    changed = {g for g in before if before[g] != after[g]}
    assert len(changed) == 1
    assert learner.notes()[changed.pop()]["Back"].startswith("25 MiB")
    assert sum(c.updated for c in plan.changes.values()) == 1


def test_template_and_css_change_reaches_the_collection(builder, learner, monkeypatch):
    initial_bank(builder.root)
    builder.build()
    learner.import_deck(builder.paths.deck)
    learner.study_all()
    reviews = learner.col.db.scalar("select count() from revlog")
    original = nt.css()
    monkeypatch.setattr(nt, "css", lambda: original + "\n.aic-cue { color: #c00; }\n")
    builder.build()
    learner.import_deck(builder.paths.deck)
    model = learner.col.models.get(learner.col.models.id_for_name(nt.NOTETYPE_NAME))
    assert ".aic-cue { color: #c00; }" in model["css"]
    assert learner.col.db.scalar("select count() from revlog") == reviews
    assert len(learner.notes()) == 9
    assert all(learner.card_of(g).type != 0 for g in learner.notes())


def test_lost_lock_gives_the_same_guids(builder, tmp_path):
    initial_bank(builder.root)
    first = builder.build()
    builder.paths.lock.unlink()
    second = builder.build()
    assert [c.guid for c in first.cards] == [c.guid for c in second.cards]
    other = tmp_path / "elsewhere"
    shutil.copytree(builder.root / "questions", other / "questions")
    from conftest import Builder

    assert [c.guid for c in Builder(other).build().cards] == [c.guid for c in first.cards]
    assert all(c.guid.startswith("aic:") for c in first.cards)


def test_sources_reach_the_cards_a_learner_already_has(builder, learner):
    from test_outputs import with_sources

    bank = initial_bank(builder.root)
    first = builder.build()
    learner.import_deck(builder.paths.deck)
    learner.study_all()
    history = {
        c.guid: (learner.card_of(c.guid).id, learner.reviews(learner.card_of(c.guid).id)) for c in first.cards
    }
    (bank / Q1[0]).write_text(with_sources(question_md(Q1[1], Q1[2], P1)), encoding="utf-8")
    second = builder.build()
    log = learner.import_deck(builder.paths.deck)
    assert len(log.new) == 0 and len(log.updated) == 3  # the three notes of question 1, nothing else
    notes = learner.notes()
    for c in second.cards:
        card = learner.card_of(c.guid)
        assert (card.id, learner.reviews(card.id)) == history[c.guid]
        extra = notes[c.guid]["Extra"]
        assert ('href="https://docs.pytorch.org/docs/stable/notes/ddp.html"' in extra) == (c.question == 1)
    note = next(n for n in notes.values() if n["Front"] == "bucket_cap_mb 默认值")
    answer = learner.card_of(note.guid).answer()
    assert "<summary>参考资料</summary>" in answer and "PyTorch DDP notes" in answer
    assert list(notes) == list(learner.notes())  # same notes, no duplicates
