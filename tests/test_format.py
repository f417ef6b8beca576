"""`ainfra-cards check --format`: the bank's own format, every departure with path:line."""

from __future__ import annotations

from click.testing import CliRunner
from conftest import NAV, write_bank

from ainfra_cards.cli import main

EXPLANATION = "梯度分桶把许多小张量拼成大块再做一次通信。" * 40


def _question(n: int, points: list[str], sources: list[str] | None = None, tail: str = NAV) -> str:
    sources = sources or [
        "- [PyTorch DDP 文档](https://docs.pytorch.org/docs/stable/notes/ddp.html) — 分桶与重叠",
        "- [DDP 论文](https://arxiv.org/abs/2006.15704) — 桶大小的取舍",
    ]
    return "\n".join(
        [
            f"# 第 {n} 题：分桶", "", "## 题目", "", "分桶是什么？", "", "---", "",
            "## 完整讲解", "", EXPLANATION, "", "---", "",
            "## 面试要点", "", "- 一", "- 二", "- 三", "", "---", "",
            "## 参考资料", "", *sources, "", "---", "",
            "## 记忆要点", "", *points, "", tail, "",
        ]
    )  # fmt: skip


GOOD = ["1. **桶大小默认值**：25 MB", "2. **首桶**：约 1 MB", "3. **何时通信**：桶内梯度就绪"]


def _bank(tmp_path, files):
    tour = "# 漫游\n\n" + "".join(f"- [第 {n} 题](./01-基础/{n:03d}-q.md)\n" for n in (1, 2))
    return write_bank(
        tmp_path / "questions",
        {
            "README.md": "# 题库\n\n| 模块 | 题号 |\n|---|---|\n| [01 基础](./01-基础/README.md) | 1–9 |\n",
            "305题漫游指南.md": tour,
            "01-基础/README.md": "# 01 基础\n\n- [第 1 题](./001-q.md)\n",
            **files,
        },
    )


def test_a_bank_in_its_format_passes(tmp_path):
    bank = _bank(tmp_path, {"01-基础/001-q.md": _question(1, GOOD), "01-基础/002-q.md": _question(2, GOOD)})
    result = CliRunner().invoke(main, ["check", "--format", "--questions", str(bank)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "0 error(s), 0 warning(s)"


def test_every_departure_is_named_with_its_line(tmp_path):
    long_answer = "很长" * 60
    bad = _question(
        2,
        ["1. **桶大小默认值**：25 MB", f"3. **桶大小默认值**：{long_answer}"],
        sources=["- [只有一条](https://example.org/a)", "- 没有链接的一条"],
        tail="",
    )
    bank = _bank(tmp_path, {"01-基础/001-q.md": _question(1, GOOD), "01-基础/002-q.md": bad})
    result = CliRunner().invoke(main, ["check", "--format", "--questions", str(bank)])
    assert result.exit_code == 1
    out = result.output
    for expected in (
        "01-基础/002-q.md:23: 参考资料 has 0 sources; list 2–6",
        "01-基础/002-q.md:23: each 参考资料 item reads '- [标题](https://…) — 它支撑了哪些说法'",
        "01-基础/002-q.md:33: item numbered 3; number the items 1, 2, 3 … (2 here)",
        "01-基础/002-q.md:33: the answer has 120 characters; keep it to 110 (one fact)",
        "01-基础/002-q.md:33: the cue '桶大小默认值' is used twice in this file",
        "01-基础/002-q.md:30: 2 记忆要点 items; write 3–6",
        "01-基础/002-q.md:36: the file must end with the line",
    ):
        assert expected in out, (expected, out)
    # without --format the exporter's own checks only: this file still makes cards
    plain = CliRunner().invoke(main, ["check", "--questions", str(bank)])
    assert plain.exit_code == 0, plain.output


def test_the_tour_must_link_every_question_and_links_must_resolve(tmp_path):
    q3 = _question(3, GOOD).replace("分桶是什么？", "分桶是什么？见 [第 9 题](./009-none.md)")
    bank = _bank(tmp_path, {"01-基础/001-q.md": _question(1, GOOD), "01-基础/003-q.md": q3})
    result = CliRunner().invoke(main, ["check", "--format", "--questions", str(bank)])
    assert result.exit_code == 1
    assert "305题漫游指南.md:1: the guided tour does not link 01-基础/003-q.md" in result.output
    assert "01-基础/003-q.md:5: broken link to ./009-none.md" in result.output
    assert "305题漫游指南.md:4: broken link to ./01-基础/002-q.md" in result.output
