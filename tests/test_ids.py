"""GUID assignment rules that need no Anki: explicit ids, returning items, determinism."""

from __future__ import annotations

from conftest import question_md, write_bank

from ainfra_cards.build import BuildRequest, Paths, plan, run_build


def build(root, now):
    return run_build(BuildRequest(root / "questions", now=now, use_cache=False)).built


def guids(plan):
    return {c.fields["Front"]: c.guid for c in plan.cards}


def test_an_explicit_item_id_wins_over_any_text(tmp_path):
    bank = write_bank(
        tmp_path / "questions",
        {"01-a/001-x.md": question_md(1, "题", ["1. **甲乙丙**：丁戊己 {#k1}", "2. **子**：丑"])},
    )
    first = guids(build(tmp_path, 100))
    (bank / "01-a/001-x.md").write_text(
        question_md(1, "题", ["1. **完全不同的提示**：全新答案 {#k1}", "2. **子**：丑"]), "utf-8"
    )
    second = guids(build(tmp_path, 200))
    assert second["完全不同的提示"] == first["甲乙丙"]


def test_an_id_added_later_keeps_the_guid_and_then_pins_it(tmp_path):
    bank = write_bank(
        tmp_path / "questions", {"01-a/001-x.md": question_md(1, "题", ["1. **甲乙丙**：丁戊己"])}
    )
    first = guids(build(tmp_path, 100))
    (bank / "01-a/001-x.md").write_text(question_md(1, "题", ["1. **甲乙丙**：丁戊己 {#pinned}"]), "utf-8")
    assert guids(build(tmp_path, 200))["甲乙丙"] == first["甲乙丙"]
    (bank / "01-a/001-x.md").write_text(
        question_md(1, "题", ["1. **另一件事**：毫不相干 {#pinned}"]), "utf-8"
    )
    assert guids(build(tmp_path, 300))["另一件事"] == first["甲乙丙"]


def test_a_front_matter_id_survives_renumbering(tmp_path):
    text = "---\nid: ddp-buckets\n---\n"
    bank = write_bank(
        tmp_path / "questions",
        {"01-a/001-x.md": text + question_md(1, "题", ["1. **甲**：乙", "2. **丙**：丁"])},
    )
    first = guids(build(tmp_path, 100))
    (bank / "01-a/001-x.md").unlink()
    (bank / "01-a/007-x.md").write_text(
        text + question_md(7, "题", ["1. **甲**：乙", "2. **丙**：丁"]), "utf-8"
    )
    assert guids(build(tmp_path, 200)) == first


def test_a_deleted_item_that_returns_gets_its_old_guid(tmp_path):
    items = ["1. **甲**：乙", "2. **丙**：丁", "3. **戊**：己"]
    bank = write_bank(tmp_path / "questions", {"01-a/001-x.md": question_md(1, "题", items)})
    first = guids(build(tmp_path, 100))
    (bank / "01-a/001-x.md").write_text(question_md(1, "题", items[:2]), "utf-8")
    gone = build(tmp_path, 200)
    assert [e.cue for e in gone.retired] == ["戊"]
    assert "status: retired" in gone.lock_text
    (bank / "01-a/001-x.md").write_text(question_md(1, "题", items), "utf-8")
    back = build(tmp_path, 300)
    assert guids(back) == first and not back.retired and "retired" not in back.lock_text


def test_same_bank_and_lock_give_the_same_notes_fields_tags_and_times(tmp_path):
    write_bank(
        tmp_path / "questions",
        {"01-a/001-x.md": question_md(1, "题", ["1. **甲**：乙 `x`", "2. 默认 25 MB"])},
    )
    build(tmp_path, 100)
    paths = Paths.default(tmp_path / "questions")
    a, b = plan(paths, 500), plan(paths, 900)
    assert a.cards == b.cards and a.lock_text == b.lock_text
    assert {c.mod for c in a.cards} == {100}


def test_a_changed_note_moves_its_time_forward_even_if_the_clock_is_behind(tmp_path):
    bank = write_bank(tmp_path / "questions", {"01-a/001-x.md": question_md(1, "题", ["1. **甲**：乙"])})
    build(tmp_path, 1000)
    (bank / "01-a/001-x.md").write_text(question_md(1, "题", ["1. **甲**：乙乙"]), "utf-8")
    (card,) = build(tmp_path, 10).cards  # a clock set back must not hide the fix from Anki
    assert card.mod == 1001
