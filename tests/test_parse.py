"""Golden tests for the parser: every item shape, file encodings, front matter, pages."""

from __future__ import annotations

import textwrap

import pytest
from conftest import question_md, write_bank

from ainfra_cards.bank import load_bank, module_ranges
from ainfra_cards.errors import CardsError, Collector
from ainfra_cards.items import CLOZE_MARK, parse_points, split_item
from ainfra_cards.render import to_html

TITLE = "DDP 的 gradient bucketing"


@pytest.mark.parametrize(
    ("item", "cue", "answer"),
    [
        ("**桶的作用**：把小梯度拼成约 25 MB 的桶", "桶的作用", "把小梯度拼成约 25 MB 的桶"),
        ("bucket_cap_mb = 每个桶的容量上限", "bucket_cap_mb", "每个桶的容量上限"),
        ("首桶大小：约 1 MB", "首桶大小", "约 1 MB"),
        ("**桶顺序**: 参数逆序", "桶顺序", "参数逆序"),
        ("**重建桶：** 第一次迭代之后", "重建桶", "第一次迭代之后"),
        ("all-reduce 通信量 —— 每卡 2(N-1)/N·S", "all-reduce 通信量", "每卡 2(N-1)/N·S"),
        ("显存 ≈ 16Φ 字节", "显存", "16Φ 字节"),
        ("总显存=参数+梯度+优化器状态", "总显存", "参数+梯度+优化器状态"),
        # '=' inside code spans or KEY=VALUE text is not a separator
        (
            "`TORCH_DISTRIBUTED_DEBUG=DETAIL` 的作用 = 打印每个 rank 的集合通信检查",
            "`TORCH_DISTRIBUTED_DEBUG=DETAIL` 的作用",
            "打印每个 rank 的集合通信检查",
        ),
        ("NCCL_DEBUG=INFO 的用途 = 打印初始化与拓扑信息", "NCCL_DEBUG=INFO 的用途", "打印初始化与拓扑信息"),
        # two clauses joined with '；' that both contain ' = ' split at the first only
        ("ZeRO-1 = 切优化器状态；ZeRO-2 = 再切梯度", "ZeRO-1", "切优化器状态；ZeRO-2 = 再切梯度"),
        ("公式 \\( a=b \\) 的含义：恒等", "公式 \\( a=b \\) 的含义", "恒等"),
    ],
)
def test_item_shapes_split_into_cue_and_answer(item, cue, answer):
    point = split_item(item, [], TITLE, 1, 1, 10)
    assert (point.kind, point.cue, point.answer) == ("pair", cue, answer)


@pytest.mark.parametrize(
    ("item", "hidden"),
    [
        ("设置 `find_unused_parameters=True` 会在每步遍历计算图", "`find_unused_parameters=True`"),
        ("DDP 的默认桶大小是 25 MB", "25 MB"),
        ("梯度在反向中按 **逆序** 就绪", "**逆序**"),
        ("桶满之后由 all-reduce 异步同步", "all-reduce"),
    ],
)
def test_plain_sentences_become_clozes_that_hide_the_answer(item, hidden):
    point = split_item(item, [], TITLE, 2, 3, 10)
    assert point.kind == "cloze" and point.cloze_term == hidden
    assert hidden not in point.cue and CLOZE_MARK in point.cue
    assert hidden.strip("*") in point.answer


def test_a_term_shown_in_the_title_is_not_the_one_hidden():
    point = split_item("DDP 用 autograd hook 触发通信", [], TITLE, 1, 1, 1)
    assert point.cloze_term == "autograd" and "DDP" in point.cue


def test_a_sentence_with_nothing_to_hide_asks_by_title():
    point = split_item("纯中文的一句话", [], TITLE, 2, 5, 1)
    assert point.kind == "title" and point.cue == f"{TITLE}（要点 2/5）"
    assert point.answer == "纯中文的一句话"


def test_bullets_sub_items_and_markers():
    lines = textwrap.dedent(
        """\

        - **一**：甲
          - 细节 A
          - 细节 B
        * 二 = 乙 {#second}
        + 三：丙
          续行

        [返回模块](./README.md) | [返回总览](../README.md)
        """
    ).split("\n")
    problems = Collector()
    points = parse_points(lines, 20, TITLE, "x.md", problems)
    assert problems.problems == []
    assert [(p.cue, p.line, p.index) for p in points] == [("一", 21, 1), ("二", 24, 2), ("三", 25, 3)]
    assert points[0].answer == "甲\n\n- 细节 A\n- 细节 B"
    assert points[1].explicit_id == "second" and points[1].answer == "乙"
    assert points[2].answer == "丙\n\n续行"
    assert "<li>细节 A</li>" in to_html(points[0].answer, inline=True)


def test_cue_without_answer_is_an_error_with_its_line():
    problems = Collector()
    parse_points(["1. **好**：有答案", "2. **坏**："], 40, TITLE, "q.md", problems)
    assert [str(p) for p in problems.errors] == [
        "q.md:41: 记忆要点 item 2 has a cue but no answer; write 'cue：answer' or drop the separator"
    ]


def test_markdown_and_math_render_for_anki():
    html = to_html("通信量 \\( 2(N-1)/N \\cdot S \\)，见 `bucket_cap_mb` 与 **重点**", inline=True)
    assert html == "通信量 \\( 2(N-1)/N \\cdot S \\)，见 <code>bucket_cap_mb</code> 与 <strong>重点</strong>"


def test_raw_html_is_never_passed_through():
    html = to_html(
        '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>'
        '<iframe src="https://e.com"></iframe><style>body{display:none}</style>'
    )
    for bad in ("<script", "onerror", "javascript:", "<iframe", "<style", "alert(1)"):
        assert bad not in html


def test_crlf_bom_bare_number_and_front_matter(tmp_path):
    text = question_md(7, "编码与格式", ["1. **甲**：乙", "2. 丙 = 丁"])
    front = "---\ntags: [nccl, 排障 工具]\nid: enc-test\n---\n"
    root = write_bank(tmp_path / "q", {"01-基础/README.md": "# 01 基础\n"})
    (root / "01-基础" / "007.md").write_bytes(b"\xef\xbb\xbf" + (front + text).replace("\n", "\r\n").encode())
    bank, problems = load_bank(root)
    assert problems.problems == []
    (q,) = bank.questions
    assert (q.number, q.title, q.key, q.tags) == (7, "编码与格式", "enc-test", ["nccl", "排障_工具"])
    assert [(p.cue, p.answer) for p in q.points] == [("甲", "乙"), ("丙", "丁")]
    assert q.points[0].line == text.split("\n").index("1. **甲**：乙") + 1 + 4  # after 4 front-matter lines


def test_pages_are_not_questions_and_ranges_come_from_the_front_page(tmp_path):
    front = (
        "# 题库\n\n| 模块 | 题号 |\n|---|---|\n| [01 基础](./01-基础/README.md) | 1–5 |\n| 02 进阶 | 6-9 |\n"
    )
    root = write_bank(
        tmp_path / "q",
        {
            "README.md": front,
            "305题漫游指南.md": "# 漫游\n\n[第 1 题](./01-基础/001-a.md)\n",
            "01-基础/README.md": "# 01 基础\n",
            "01-基础/001-a.md": question_md(1, "甲", ["1. **a**：b"]),
            "01-基础/006-b.md": question_md(6, "乙", ["1. **a**：b"]),
        },
    )
    assert module_ranges(front) == {1: (1, 5), 2: (6, 9)}
    with pytest.raises(CardsError) as e:
        load_bank(root)
    assert [str(p) for p in e.value.problems] == [
        "01-基础/006-b.md:1: question 6 is outside module 01's range 1–5 (front page table); "
        "it belongs in module 02; move or renumber it"
    ]
    (root / "01-基础/006-b.md").unlink()
    bank, _ = load_bank(root)
    assert [q.number for q in bank.questions] == [1]
    assert [str(p.path) for p in bank.pages] == ["README.md", "305题漫游指南.md", "01-基础/README.md"]
    assert bank.title == "题库"
