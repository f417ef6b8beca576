"""Property tests: the parser never crashes, and edits never cost a learner a review."""

from __future__ import annotations

import random
from pathlib import Path

from conftest import Builder, Learner, question_md, write_bank
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ainfra_cards.errors import Collector
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
    question = parse_question(src, problems)
    for p in problems.problems:
        assert p.path == "01-x/001.md" and p.line >= 0
    if question is not None:
        assert all(pt.cue.strip() and pt.answer.strip() for pt in question.points)


# ---------------------------------------------------------------------------------------------
# Random maintainer edits across several rebuild-and-reimport rounds, in the real Anki engine.
# The generator makes near-misses on purpose: look-alike cues that differ in their key term
# (A100 vs B200), swapped answers, facts replaced by look-alikes, renumbered and moved questions.
# After every round each fact the learner studied must still own its note, card and reviews,
# and each fact that is new must arrive as a new card with no reviews.

WORDS = [
    "梯度", "显存", "通信", "带宽", "延迟", "分桶", "切分", "重算", "流水线", "算子",
    "融合", "调度", "缓存", "量化", "精度", "拓扑", "吞吐", "队列", "副本", "分片",
    "校验", "回滚", "预取", "压缩", "索引", "哈希", "快照", "心跳", "租约", "配额",
]  # fmt: skip


class Fact:
    """A memory point whose identity the test knows, whatever its text becomes.

    The cue starts with a key term (a Latin name with the fact's serial, like A100 or ZeRO-2);
    a look-alike of another fact copies its words and answer but names another term.
    """

    def __init__(self, rng: random.Random, serial: int, like: Fact | None = None):
        self.serial = serial
        self.words = like.words if like else rng.sample(WORDS, 3)
        self.answer = _tweak(like.answer, rng) if like else " ".join(rng.sample(WORDS, 5)) + f" {serial}"
        self.cue = self.make_cue()

    def make_cue(self) -> str:
        return f"GPU{self.serial} " + " ".join(self.words)

    def line(self, i: int) -> str:
        return f"{i}. **{self.cue}**：{self.answer}"


def _tweak(text: str, rng: random.Random) -> str:
    """Change one word that is not the first (the key term stays)."""
    words = text.split(" ")
    i = rng.randrange(1, len(words))
    words[i] = rng.choice([w for w in WORDS if w != words[i]])
    return " ".join(words)


EDITS = [
    "fix_answer",  # cue unchanged, answer rewritten: the same fact
    "tweak_answer",
    "reword_cue",  # answer unchanged, cue rewritten: the same fact
    "touch_both",  # both a little: the same fact
    "swap_answers",  # two items' answers swapped: each card follows its cue
    "replace",  # a different fact where one was: new card, old one retired
    "replace_lookalike",  # the same words under another key term: new card
    "replace_with_sibling",  # a deleted fact and a look-alike of its neighbour added
    "insert_lookalike",
    "insert",
    "delete",
    "reorder",
    "swap_numbers",  # two questions trade numbers
    "move_fact",  # an unchanged item moves to another question
    "rename",
    "move",
]


class World:
    """The bank as the test knows it: questions of facts, and what changed this round."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.serials = iter(range(100, 100_000))
        # question number -> [folder, slug, facts]
        self.bank = {
            n: [f"0{1 + n % 2}-模块{1 + n % 2}", f"q{n}", [self.fact() for _ in range(3)]] for n in (1, 2, 3)
        }
        self.touched: set[int] = set()  # serials edited this round (one edit per fact a round)
        self.gone: list[Fact] = []  # facts deleted or replaced this round

    def fact(self, like: Fact | None = None) -> Fact:
        return Fact(self.rng, next(self.serials), like)

    def facts(self) -> list[Fact]:
        return [f for n in sorted(self.bank) for f in self.bank[n][2]]

    def untouched(self, n: int) -> list[Fact]:
        return [f for f in self.bank[n][2] if f.serial not in self.touched]

    def write(self, qdir: Path) -> None:
        for p in qdir.rglob("*.md") if qdir.exists() else []:
            p.unlink()
        write_bank(
            qdir,
            {
                f"{folder}/{n:03d}-{slug}.md": question_md(
                    n, f"题{n}", [f.line(i) for i, f in enumerate(facts, 1)]
                )
                for n, (folder, slug, facts) in self.bank.items()
                if facts
            },
        )

    def apply(self, edit: str) -> None:
        rng = self.rng
        n = rng.choice(sorted(self.bank))
        folder, slug, facts = self.bank[n]
        free = self.untouched(n)
        if edit in ("rename", "move", "reorder", "swap_numbers", "insert", "insert_lookalike"):
            self._structural(edit, n)
            return
        if not free or (edit == "delete" and len(facts) < 2):
            return
        f = rng.choice(free)
        self.touched.add(f.serial)
        i = facts.index(f)
        if edit == "fix_answer":
            f.answer = " ".join(rng.sample(WORDS, 4)) + f" {f.serial + 1}"
        elif edit == "tweak_answer":
            f.answer = _tweak(f.answer, rng)
        elif edit == "reword_cue":
            f.words = rng.sample(WORDS, 4)
            f.cue = f"问{f.serial} " + " ".join(f.words)
        elif edit == "touch_both":
            f.cue, f.answer = _tweak(f.cue, rng), _tweak(f.answer, rng)
        elif edit == "swap_answers":
            others = [g for g in free if g is not f]
            if others:
                g = rng.choice(others)
                self.touched.add(g.serial)
                f.answer, g.answer = g.answer, f.answer
        elif edit in ("replace", "replace_lookalike", "replace_with_sibling", "delete"):
            self.gone.append(facts.pop(i))
            if edit != "delete":
                model = {"replace": None, "replace_lookalike": f}.get(edit, rng.choice(facts) if facts else f)
                new = self.fact(model)
                self.touched.add(new.serial)
                facts.insert(i, new)
        elif edit == "move_fact":
            target = rng.choice([m for m in self.bank if m != n])
            facts.remove(f)
            self.bank[target][2].append(f)

    def _structural(self, edit: str, n: int) -> None:
        rng = self.rng
        folder, slug, facts = self.bank[n]
        if edit == "rename":
            self.bank[n][1] = f"{slug}-r"
        elif edit == "move":
            self.bank[n][0] = "03-模块3" if folder != "03-模块3" else "01-模块1"
        elif edit == "reorder":
            rng.shuffle(facts)
        elif edit in ("insert", "insert_lookalike"):
            like = rng.choice(facts) if facts and edit == "insert_lookalike" else None
            new = self.fact(like)
            self.touched.add(new.serial)
            facts.insert(rng.randrange(len(facts) + 1), new)
        elif edit == "swap_numbers":
            # A question is known by its unchanged items: each keeps one this round.
            m = rng.choice([k for k in self.bank if k != n])
            keep = [self.untouched(k) for k in (n, m)]
            if all(keep):
                self.touched.update(rng.choice(k).serial for k in keep)
                self.bank[n][2], self.bank[m][2] = self.bank[m][2], self.bank[n][2]
                self.bank[n][1], self.bank[m][1] = self.bank[m][1], self.bank[n][1]


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.lists(st.sampled_from(EDITS), min_size=1, max_size=5), min_size=2, max_size=4),
    st.integers(0, 2**16),
)
def test_random_edits_never_lose_or_misattach_history(tmp_path_factory, rounds, seed):
    root = tmp_path_factory.mktemp("bank")
    world = World(random.Random(seed))
    builder = Builder(root)
    learner = Learner(root / "learner.anki2")
    try:
        world.write(root / "questions")
        plan = builder.build()
        learner.import_deck(builder.paths.deck)
        learner.study_all()
        guid_of = {f.serial: c.guid for f, c in zip(world.facts(), plan.cards, strict=True)}
        history = {s: _history(learner, g) for s, g in guid_of.items()}
        last_text = {f.serial: (f.cue, f.answer) for f in world.facts()}
        for edits in rounds:
            world.touched, world.gone = set(), []
            for edit in edits:
                world.apply(edit)
            world.write(root / "questions")
            plan = builder.build()
            learner.import_deck(builder.paths.deck)
            notes = learner.notes()
            for fact in world.facts():
                if fact.serial in guid_of:  # studied before: same note, same card, same history
                    note = notes[guid_of[fact.serial]]
                    assert (note["Front"], note["Back"]) == (fact.cue, fact.answer)
                    assert _history(learner, guid_of[fact.serial]) == history[fact.serial]
                else:  # a new fact: a new note, never an old one's
                    (guid,) = [c.guid for c in plan.cards if c.fields["Front"] == fact.cue]
                    assert guid not in guid_of.values(), f"new fact {fact.cue!r} took over an old note"
                    guid_of[fact.serial] = guid
                    history[fact.serial] = _history(learner, guid)
                    assert history[fact.serial][1] == 0
                last_text[fact.serial] = (fact.cue, fact.answer)
            for fact in world.gone:  # retired: the learner's note is left as it was, reviews and all
                note = notes[guid_of[fact.serial]]
                assert (note["Front"], note["Back"]) == last_text[fact.serial]
                assert _history(learner, guid_of[fact.serial]) == history[fact.serial]
            assert {e.guid for e in plan.retired} == {guid_of[f.serial] for f in world.gone}
    finally:
        learner.close()


def _history(learner: Learner, guid: str) -> tuple[int, int]:
    card = learner.card_of(guid)
    return card.id, learner.reviews(card.id)
