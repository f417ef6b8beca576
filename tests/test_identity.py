"""Which old note a memory point continues, proven in the real Anki engine.

Each test imports a deck, studies it, makes one maintainer edit that happens in real banks,
rebuilds, re-imports, and checks what the learner sees: reviews stay with the fact they were
made on, and a new fact arrives as a new card with no reviews.
"""

from __future__ import annotations

from click.testing import CliRunner
from conftest import question_md, write_bank

from ainfra_cards.cli import main

NVLINK = [
    "1. **NVLink 与 PCIe 的区别**：GPU 间专用高速互联，不经过 CPU 与 PCIe 交换机",
    "2. **A100 每卡 NVLink 带宽**：600 GB/s（12 条 NVLink 3，双向合计）",
    "3. **NVSwitch 的作用**：让节点内任意两卡都以全带宽直连",
]
ZERO = [
    "1. **ZeRO-1 切分了什么**：优化器状态",
    "2. **ZeRO-2 切分了什么**：优化器状态与梯度",
    "3. **ZeRO 的通信代价**：ZeRO-1/2 与 DDP 相同，ZeRO-3 约为 1.5 倍",
]


def _setup(builder, learner, files: dict[str, str]):
    bank = write_bank(builder.root / "questions", files)
    plan = builder.build()
    learner.import_deck(builder.paths.deck)
    learner.study_all()
    guids = {(c.question, c.fields["Front"]): c.guid for c in plan.cards}
    history = {g: _history(learner, g) for g in guids.values()}
    return bank, guids, history


def _history(learner, guid):
    card = learner.card_of(guid)
    return card.id, learner.reviews(card.id), card.ivl


def _rebuild(builder, learner):
    plan = builder.build()
    learner.import_deck(builder.paths.deck)
    return plan, learner.notes()


def _guid_of(plan, front: str) -> str:
    (guid,) = [c.guid for c in plan.cards if c.fields["Front"] == front]
    return guid


def test_a_replaced_fact_is_a_new_card_and_the_old_one_keeps_its_reviews(builder, learner):
    bank, guids, history = _setup(builder, learner, {"08-通信/088-互联.md": question_md(88, "互联", NVLINK)})
    edited = [*NVLINK]
    edited[1] = "2. **B200 每卡 NVLink 带宽**：1.8 TB/s（18 条 NVLink 5）"
    (bank / "08-通信/088-互联.md").write_text(question_md(88, "互联", edited), "utf-8")
    plan, notes = _rebuild(builder, learner)
    a100, b200 = guids[(88, "A100 每卡 NVLink 带宽")], _guid_of(plan, "B200 每卡 NVLink 带宽")
    assert b200 != a100 and [e.guid for e in plan.retired] == [a100]
    assert learner.reviews(learner.card_of(b200).id) == 0
    assert notes[a100]["Front"] == "A100 每卡 NVLink 带宽" and notes[a100]["Back"].startswith("600 GB/s")
    assert all(_history(learner, g) == h for g, h in history.items())
    changes = plan.changes["08 通信"]
    assert (changes.added, changes.updated, changes.retired) == (1, 0, 1)


def test_a_deleted_look_alike_replaced_by_another_is_a_new_card(builder, learner):
    bank, guids, history = _setup(
        builder, learner, {"05-数据并行/050-zero.md": question_md(50, "ZeRO", ZERO)}
    )
    edited = [ZERO[0], "2. **ZeRO-3 切分了什么**：优化器状态、梯度与参数", ZERO[2]]
    (bank / "05-数据并行/050-zero.md").write_text(question_md(50, "ZeRO", edited), "utf-8")
    plan, notes = _rebuild(builder, learner)
    zero3 = _guid_of(plan, "ZeRO-3 切分了什么")
    assert zero3 not in guids.values() and learner.reviews(learner.card_of(zero3).id) == 0
    assert notes[guids[(50, "ZeRO-2 切分了什么")]]["Back"] == "优化器状态与梯度"
    assert all(_history(learner, g) == h for g, h in history.items())


def test_a_corrected_answer_or_a_reworded_cue_keeps_the_note(builder, learner):
    bank, guids, history = _setup(builder, learner, {"08-通信/088-互联.md": question_md(88, "互联", NVLINK)})
    edited = [
        "1. **NVLink 与 PCIe 的区别**：点对点直连的 GPU 专用链路，带宽约为 PCIe 5.0 x16 的 7 倍",
        "2. **每张 A100 的 NVLink 总带宽是多少**：600 GB/s（12 条 NVLink 3，双向合计）",
        NVLINK[2],
    ]
    (bank / "08-通信/088-互联.md").write_text(question_md(88, "互联", edited), "utf-8")
    plan, notes = _rebuild(builder, learner)
    assert not plan.retired and sum(c.added for c in plan.changes.values()) == 0
    assert notes[guids[(88, "NVLink 与 PCIe 的区别")]]["Back"].startswith("点对点直连")
    assert notes[guids[(88, "A100 每卡 NVLink 带宽")]]["Front"] == "每张 A100 的 NVLink 总带宽是多少"
    assert all(_history(learner, g) == h for g, h in history.items())
    # the corrected answer changed a lot: the build shows it for review, old above new
    (judged,) = plan.judgements
    assert judged.guid == guids[(88, "NVLink 与 PCIe 的区别")] and judged.cue_similarity == 1.0
    assert judged.answer_similarity < 0.7 and judged.old[1].startswith("GPU 间专用高速互联")


def test_swapped_answers_stay_with_their_cues(builder, learner):
    bank, guids, history = _setup(
        builder, learner, {"05-数据并行/050-zero.md": question_md(50, "ZeRO", ZERO)}
    )
    swapped = ["1. **ZeRO-1 切分了什么**：优化器状态与梯度", "2. **ZeRO-2 切分了什么**：优化器状态", ZERO[2]]
    (bank / "05-数据并行/050-zero.md").write_text(question_md(50, "ZeRO", swapped), "utf-8")
    _, notes = _rebuild(builder, learner)
    assert notes[guids[(50, "ZeRO-1 切分了什么")]]["Back"] == "优化器状态与梯度"
    assert notes[guids[(50, "ZeRO-2 切分了什么")]]["Back"] == "优化器状态"
    assert all(_history(learner, g) == h for g, h in history.items())


def test_swapping_two_questions_numbers_keeps_each_ones_look_alike_cards(builder, learner):
    q1 = ["1. **一句话总结**：分桶让通信与反向重叠", "2. **默认桶大小**：25 MB"]
    q2 = ["1. **一句话总结**：切分让显存随卡数下降", "2. **ZeRO-3 的通信量**：约为 DDP 的 1.5 倍"]
    bank, guids, history = _setup(
        builder,
        learner,
        {
            "05-数据并行/046-分桶.md": question_md(46, "分桶", q1),
            "05-数据并行/050-切分.md": question_md(50, "切分", q2),
        },
    )
    (bank / "05-数据并行/046-分桶.md").unlink()
    (bank / "05-数据并行/050-切分.md").unlink()
    write_bank(
        bank,
        {
            "05-数据并行/050-分桶.md": question_md(50, "分桶", q1),
            "05-数据并行/046-切分.md": question_md(46, "切分", q2),
        },
    )
    plan, notes = _rebuild(builder, learner)
    assert not plan.retired and sum(c.added for c in plan.changes.values()) == 0
    assert notes[guids[(46, "一句话总结")]]["Back"] == "分桶让通信与反向重叠"
    assert notes[guids[(50, "一句话总结")]]["Back"] == "切分让显存随卡数下降"
    assert all(_history(learner, g) == h for g, h in history.items())


def test_renumbering_together_with_a_small_fix_keeps_every_review(builder, learner):
    bank, guids, history = _setup(
        builder, learner, {"05-数据并行/050-zero.md": question_md(50, "ZeRO", ZERO)}
    )
    (bank / "05-数据并行/050-zero.md").unlink()
    fixed = [ZERO[0], "2. **ZeRO-2 切分了哪些状态**：优化器状态与梯度", ZERO[2].replace("约为", "约是")]
    write_bank(bank, {"05-数据并行/052-zero.md": question_md(52, "ZeRO", fixed)})
    plan, notes = _rebuild(builder, learner)
    assert not plan.retired and sum(c.added for c in plan.changes.values()) == 0
    assert notes[guids[(50, "ZeRO-2 切分了什么")]]["Front"] == "ZeRO-2 切分了哪些状态"
    assert "AI-Infra::Q052" in notes[guids[(50, "ZeRO-1 切分了什么")]].tags
    assert all(_history(learner, g) == h for g, h in history.items())


def test_an_explicit_id_overrules_the_judgement_either_way(builder, learner):
    bank, guids, history = _setup(builder, learner, {"08-通信/088-互联.md": question_md(88, "互联", NVLINK)})
    # A fresh id forces a new card even for a small edit the rule would call the same fact.
    edited = [*NVLINK]
    edited[2] = "3. **NVSwitch 的作用**：让节点内任意两卡都以全带宽互联 {#nvswitch-v2}"
    # The old note's GUID as id keeps a rewrite the rule would call a new fact.
    a100 = guids[(88, "A100 每卡 NVLink 带宽")]
    edited[1] = f"2. **H100 SXM 每卡 NVLink 带宽**：900 GB/s（18 条 NVLink 4） {{#{a100}}}"
    (bank / "08-通信/088-互联.md").write_text(question_md(88, "互联", edited), "utf-8")
    plan, notes = _rebuild(builder, learner)
    old_switch = guids[(88, "NVSwitch 的作用")]
    new_switch = _guid_of(plan, "NVSwitch 的作用")
    assert new_switch != old_switch and [e.guid for e in plan.retired] == [old_switch]
    assert learner.reviews(learner.card_of(new_switch).id) == 0
    assert _guid_of(plan, "H100 SXM 每卡 NVLink 带宽") == a100
    assert notes[a100]["Back"].startswith("900 GB/s") and _history(learner, a100) == history[a100]
    assert any(j.guid == a100 and j.by_id for j in plan.judgements)
    # both ids are now pinned in the lock: a rebuild is a fixed point
    again, _ = _rebuild(builder, learner)
    assert sum(c.added + c.updated + c.retired for c in again.changes.values()) == 0


def test_dry_run_lists_each_kept_note_whose_text_changed_a_lot(builder):
    bank = write_bank(builder.root / "questions", {"08-通信/088-互联.md": question_md(88, "互联", NVLINK)})
    builder.build()
    edited = [*NVLINK]
    edited[0] = "1. **NVLink 与 PCIe 的区别**：点对点直连的 GPU 专用链路，带宽约为 PCIe 5.0 x16 的 7 倍"
    (bank / "08-通信/088-互联.md").write_text(question_md(88, "互联", edited), "utf-8")
    lock_before = builder.paths.lock.read_bytes()
    result = CliRunner().invoke(main, ["build", "--questions", str(bank), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "kept 1 note(s) whose text changed a lot" in result.output
    assert "question 88 item 1 at 08-通信/088-互联.md:24 (" in result.output
    assert "cue 1.00, answer 0." in result.output
    assert "    - NVLink 与 PCIe 的区别：GPU 间专用高速互联" in result.output
    assert "    + NVLink 与 PCIe 的区别：点对点直连" in result.output
    assert builder.paths.lock.read_bytes() == lock_before
