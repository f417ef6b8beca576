"""Input that would corrupt identity or state is refused with path:line, and nothing is written."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import question_md, write_bank

from ainfra_cards.bank import load_bank
from ainfra_cards.cli import main

GOOD = {"01-基础/001-a.md": question_md(1, "甲", ["1. **a 提示**：a 答案", "2. **b 提示**：b 答案"])}


def _build(bank, *args):
    return CliRunner().invoke(main, ["build", "--questions", str(bank), *args])


def _first_build(tmp_path):
    bank = write_bank(tmp_path / "questions", GOOD)
    assert _build(bank).exit_code == 0
    decks = tmp_path / "decks"
    return bank, decks, {p.name: p.read_bytes() for p in decks.iterdir()}


def _refused(bank, decks, before, expected: str) -> None:
    result = _build(bank)
    assert result.exit_code == 1, result.output
    assert expected in result.output
    assert "Traceback" not in result.output and "nothing was written" in result.output
    assert {p.name: p.read_bytes() for p in decks.iterdir()} == before


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "01-基础/002-b.md": "---\nid: shared\n---\n" + question_md(2, "乙", ["1. **c**：d"]),
                "01-基础/003-c.md": "---\ntags: [x]\nid: shared\n---\n"
                + question_md(3, "丙", ["1. **e**：f"]),
            },
            "01-基础/003-c.md:3: front matter id 'shared' is also the id of 01-基础/002-b.md",
        ),
        (
            {"01-基础/002-b.md": "---\nid: '001'\n---\n" + question_md(2, "乙", ["1. **c**：d"])},
            "01-基础/002-b.md:2: front matter 'id' '001' is only digits",
        ),
        (
            {"01-基础/002-b.md": question_md(2, "乙", ["1. **c**：d {#k}", "2. **e**：f {#k}"])},
            "01-基础/002-b.md:25: 记忆要点 item 2 repeats the id {#k} of item 1",
        ),
        (
            {"01-基础/002-b.md": "---\nmodule: 杂项\n---\n" + question_md(2, "乙", ["1. **c**：d"])},
            "01-基础/002-b.md:2: front matter 'module' '杂项' must name a module folder",
        ),
        (
            {"01-基础/002-b.md": question_md(2, "乙", ["1. **c**：d", "2. **参数入桶的顺序**"])},
            "01-基础/002-b.md:25: 记忆要点 item 2 has a cue but no answer",
        ),
    ],
    ids=["same-front-matter-id", "digit-id", "repeated-item-id", "module-without-number", "bold-cue-alone"],
)
def test_identity_breaking_input_is_refused_and_nothing_changes(tmp_path, files, expected):
    bank, decks, before = _first_build(tmp_path)
    write_bank(bank, files)
    _refused(bank, decks, before, expected)


def test_a_heading_that_contains_a_section_name_is_its_own_section(tmp_path):
    text = question_md(1, "甲", ["1. **a**：b"]).replace(
        "## 记忆要点", "## 相关题目\n\n- 第 2 题\n\n## 记忆要点"
    )
    bank = write_bank(tmp_path / "questions", {"01-基础/001-a.md": text})
    bank_data, _ = load_bank(bank)
    (q,) = bank_data.questions
    assert q.prompt == "甲？"
    assert q.extra_sections == [("相关题目", "- 第 2 题")]


def test_an_unwritable_output_folder_is_a_clear_error(tmp_path):
    bank = write_bank(tmp_path / "questions", GOOD)
    (tmp_path / "decks").write_text("not a folder", "utf-8")
    result = _build(bank)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "decks" in result.output and "make sure" in result.output
    assert (tmp_path / "decks").read_text("utf-8") == "not a folder"


def test_temporary_files_of_a_killed_build_are_cleared_by_the_next_build(tmp_path):
    bank, decks, _ = _first_build(tmp_path)
    left = [decks / ".ainfra-cards.apkg.x1y2z3.tmp", decks / ".ainfra-cards.lock.yaml.abcdef.tmp"]
    for p in left:
        p.write_bytes(b"half a file")
    unrelated = decks / "notes.tmp"
    unrelated.write_text("mine", "utf-8")
    assert _build(bank).exit_code == 0
    assert not any(p.exists() for p in left)
    assert unrelated.read_text("utf-8") == "mine"
