"""Property tests: the parser never crashes, and edits never cost a learner a review."""

from __future__ import annotations

import random
from pathlib import Path

from conftest import Builder, Learner, question_md, write_bank
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ainfra_cards.errors import CardsError, Collector
from ainfra_cards.parse import parse_question
from ainfra_cards.sources import SourceFile, split_front_matter

MARKDOWN_BITS = st.sampled_from(
    [
        "# 第 1 题：题",
        "## 题目",
        "## 完整讲解",
        "## 面试要点",
        "## 记忆要点",
        "---",
        "```",
        "```python",
        "1. ",
        "- ",
        "  - ",
        "**",
        "：",
        "=",
        " = ",
        "≈",
        "——",
        "`",
        "\\(",
        "\\)",
        "\\[",
        "\\]",
        "{#x}",
        "<script>",
        "[a](b)",
        "![i](x.png)",
        "\n",
        "\n\n",
        "\t",
        "\r\n",
        "\ufeff",
        "题",
        "a",
        "1",
        " ",
    ]
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.one_of(MARKDOWN_BITS, st.text(max_size=8)), max_size=60))
def test_random_markdown_never_crashes_the_parser(parts):
    text = "".join(parts)
    problems = Collector()
    front, body, first = split_front_matter(text, "01-x/001.md", problems)
    src = SourceFile(Path("01-x/001.md"), Path("/nonexistent/01-x/001.md"), body, first, front, 1, "01-x")  # type: ignore[arg-type]
    try:
        question = parse_question(src, problems)
    except CardsError:
        return
    for p in problems.problems:
        assert p.path == "01-x/001.md" and p.line >= 0
    if question is not None:
        assert all(pt.cue.strip() and pt.answer.strip() for pt in question.points)


# ---------------------------------------------------------------------------------------------
# Random maintainer edits across several rebuild-and-reimport rounds, in the real Anki engine.

WORDS = [
    "梯度",
    "显存",
    "通信",
    "带宽",
    "延迟",
    "分桶",
    "切分",
    "重算",
    "流水线",
    "算子",
    "融合",
    "调度",
    "缓存",
    "量化",
    "精度",
    "拓扑",
    "吞吐",
    "队列",
    "副本",
    "分片",
    "校验",
    "回滚",
    "预取",
    "压缩",
    "索引",
    "哈希",
    "快照",
    "心跳",
    "租约",
    "配额",
]


class Fact:
    """A memory point the test knows the identity of, whatever its text becomes."""

    def __init__(self, rng: random.Random, serial: int):
        self.serial = serial
        self.cue = f"{serial}号 " + " ".join(rng.sample(WORDS, 4))
        self.answer = " ".join(rng.sample(WORDS, 6)) + f" {serial * 7919}"

    def line(self, i: int) -> str:
        return f"{i}. **{self.cue}**：{self.answer}"


EDITS = [
    "fix_answer",
    "rewrite_cue",
    "touch_both",
    "reorder",
    "insert",
    "delete",
    "replace",
    "rename",
    "move",
]


def _tweak(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    i = rng.randrange(len(words) - 1) + 1 if len(words) > 1 else 0
    words[i] = rng.choice(WORDS)
    return " ".join(words)


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.lists(st.sampled_from(EDITS), min_size=1, max_size=4), min_size=2, max_size=4),
    st.integers(0, 2**16),
)
def test_random_edits_never_lose_or_misattach_history(tmp_path_factory, rounds, seed):
    rng = random.Random(seed)
    root = tmp_path_factory.mktemp("bank")
    serial = iter(range(1, 10_000))
    # question number -> [folder, slug, facts]
    bank = {
        n: [f"0{1 + n % 2}-模块{1 + n % 2}", f"q{n}", [Fact(rng, next(serial)) for _ in range(3)]]
        for n in (1, 2, 3)
    }

    def write():
        qdir = root / "questions"
        for p in qdir.rglob("*.md") if qdir.exists() else []:
            p.unlink()
        write_bank(
            qdir,
            {
                f"{folder}/{n:03d}-{slug}.md": question_md(
                    n, f"题{n}", [f.line(i) for i, f in enumerate(facts, 1)]
                )
                for n, (folder, slug, facts) in bank.items()
                if facts
            },
        )

    builder = Builder(root)
    learner = Learner(root / "learner.anki2")
    try:
        write()
        plan = builder.build()
        learner.import_deck(builder.paths.output)
        learner.study_all()
        guid_of = {}  # fact serial -> guid
        order = [f for n in sorted(bank) for f in bank[n][2]]
        for fact, card in zip(order, plan.cards, strict=True):
            guid_of[fact.serial] = card.guid
        history = {
            s: (learner.card_of(g).id, learner.reviews(learner.card_of(g).id)) for s, g in guid_of.items()
        }
        for edits in rounds:
            for edit in edits:
                _apply(edit, bank, rng, serial)
            write()
            plan = builder.build()
            learner.import_deck(builder.paths.output)
            notes = learner.notes()
            fronts = [n["Front"] for n in notes.values()]
            assert len(fronts) == len(set(fronts)), "duplicated note"
            live = {f.serial: f for n in bank for f in bank[n][2]}
            for s, fact in live.items():
                if s in guid_of:  # a fact the learner has studied: same note, same card, same history
                    note = notes[guid_of[s]]
                    assert note["Front"] == fact.cue and note["Back"] == fact.answer
                    card = learner.card_of(guid_of[s])
                    assert (card.id, learner.reviews(card.id)) == history[s]
                else:  # a new fact: its own new note
                    (guid,) = [c.guid for c in plan.cards if c.fields["Front"] == fact.cue]
                    assert guid not in guid_of.values()
                    guid_of[s] = guid
                    history[s] = (learner.card_of(guid).id, 0)
    finally:
        learner.close()


def _apply(edit: str, bank: dict, rng: random.Random, serial) -> None:
    n = rng.choice(sorted(bank))
    folder, slug, facts = bank[n]
    if edit == "insert" or not facts:
        facts.insert(rng.randrange(len(facts) + 1), Fact(rng, next(serial)))
    elif edit == "fix_answer":
        f = rng.choice(facts)
        f.answer = _tweak(f.answer, rng)
    elif edit == "rewrite_cue":
        f = rng.choice(facts)
        f.cue = f"{f.serial}问 " + " ".join(rng.sample(WORDS, 5))
    elif edit == "touch_both":
        f = rng.choice(facts)
        f.cue, f.answer = _tweak(f.cue, rng), _tweak(f.answer, rng)
    elif edit == "reorder":
        rng.shuffle(facts)
    elif edit == "delete" and len(facts) > 1:
        facts.pop(rng.randrange(len(facts)))
    elif edit == "replace":  # an item rewritten into a different fact: a new card, not the old one's
        facts[rng.randrange(len(facts))] = Fact(rng, next(serial))
    elif edit == "rename":
        bank[n][1] = f"{slug}-r"
    elif edit == "move":
        bank[n][0] = "03-模块3" if folder != "03-模块3" else "01-模块1"
