"""Bad input, hostile content, media, crashes and concurrent builds."""

from __future__ import annotations

import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import question_md, write_bank

from ainfra_cards.bank import load_bank
from ainfra_cards.build import Paths, plan
from ainfra_cards.cli import main
from ainfra_cards.errors import CardsError

# A catalogue of known XSS vectors, in the shapes Markdown lets through as raw HTML.
XSS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    '<a href="jav&#x09;ascript:alert(1)">x</a>',
    '<iframe src="https://example.com"></iframe>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    "<style>body{display:none}</style>",
    '<div style="position:fixed;top:0;left:0;width:100%;height:100%">x</div>',
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<body onload=alert(1)>",
    '<object data="javascript:alert(1)"></object>',
    '<embed src="javascript:alert(1)">',
    '<form action="javascript:alert(1)"><input type=submit></form>',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<details open ontoggle=alert(1)>",
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    '<base href="javascript:alert(1)//">',
    "<link rel=stylesheet href=https://example.com/x.css>",
    '"><script>alert(1)</script>',
    "<scr<script>ipt>alert(1)</scr</script>ipt>",
    "<IMG SRC=`javascript:alert(1)`>",
    "![x](javascript:alert(1))",
]
ACTIVE = (
    "<script",
    "onerror",
    "onload",
    "ontoggle",
    "javascript:",
    "<iframe",
    "<style",
    "<object",
    "<embed",
    "<form",
    "<meta",
    "<base",
    "<link",
    "<svg",
    "srcdoc",
    "style=",
)


def test_hostile_content_never_becomes_active_in_card_fields(tmp_path):
    payload = " ".join(XSS)
    points = [f"{i}. **提示{i} {x}**：答案 {x}" for i, x in enumerate(XSS[:6], 1)]
    text = question_md(1, "危险内容", points, talking=f"- {payload}\n- 正常").replace("讲解正文。", payload)
    text = text.replace("危险内容？", f"危险内容？ {payload}")
    bank = write_bank(tmp_path / "questions", {"01-基础/001-x.md": text})
    result = CliRunner().invoke(main, ["build", "--questions", str(bank)])
    # remote and javascript: images are refused outright; the rest must come out inert
    assert result.exit_code == 1 and "image 'javascript:alert(1' is remote" in result.output
    text = text.replace("![x](javascript:alert(1))", "")
    (bank / "01-基础/001-x.md").write_text(text, "utf-8")
    result = CliRunner().invoke(main, ["build", "--questions", str(bank)])
    assert result.exit_code == 0, result.output
    fields = _fields(tmp_path / "decks" / "ainfra-cards.apkg")
    assert len(fields) == 6
    for value in (v for note in fields for v in note):
        lowered = value.lower()
        for bad in ACTIVE:
            assert bad not in lowered, (bad, value)


def _fields(apkg: Path) -> list[list[str]]:
    with zipfile.ZipFile(apkg) as z:
        db = apkg.with_suffix(".anki2")
        db.write_bytes(z.read("collection.anki2"))
    conn = sqlite3.connect(db)
    try:
        return [row[0].split("\x1f") for row in conn.execute("select flds from notes")]
    finally:
        conn.close()


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def test_images_are_packaged_with_collision_free_names(tmp_path):
    bank = write_bank(
        tmp_path / "questions",
        {
            "01-基础/001-a.md": question_md(1, "图一", ["1. **拓扑图**：![环](img/ring.png) 环形"]),
            "01-基础/002-b.md": question_md(2, "图二", ["1. **另一张**：![环](../01-基础/img/ring.png)"]),
        },
    )
    (bank / "01-基础/img").mkdir()
    (bank / "01-基础/img/ring.png").write_bytes(PNG)
    built = plan(Paths.default(bank), 1_800_000_000)
    (name,) = built.media
    assert name.startswith("ainfra-cards-") and name.endswith(".png")
    assert all(f'src="{name}"' in c.fields["Back"] for c in built.cards)
    CliRunner().invoke(main, ["build", "--questions", str(bank)])
    with zipfile.ZipFile(tmp_path / "decks" / "ainfra-cards.apkg") as z:
        import json

        assert json.loads(z.read("media")) == {"0": name} and z.read("0") == PNG


def test_learner_sees_the_image_in_anki(tmp_path, learner):
    bank = write_bank(
        tmp_path / "questions", {"01-基础/001-a.md": question_md(1, "图", ["1. **图**：![环](ring.png)"])}
    )
    (bank / "01-基础/ring.png").write_bytes(PNG)
    CliRunner().invoke(main, ["build", "--questions", str(bank)])
    learner.import_deck(tmp_path / "decks" / "ainfra-cards.apkg")
    (note,) = learner.notes().values()
    media_dir = Path(learner.col.media.dir())
    name = note["Back"].split('src="')[1].split('"')[0]
    assert (media_dir / name).read_bytes() == PNG


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("https://example.com/x.png", "is remote; images are never fetched"),
        ("/etc/passwd.png", "is an absolute path"),
        ("../../../outside.png", "points outside the bank folder"),
        ("missing.png", "not found"),
        ("link.png", "points outside the bank folder"),
    ],
)
def test_bad_image_references_are_refused(tmp_path, ref, message):
    (tmp_path / "outside.png").write_bytes(PNG)
    bank = write_bank(
        tmp_path / "questions", {"01-基础/001-a.md": question_md(1, "图", [f"1. **图**：![x]({ref})"])}
    )
    (bank / "01-基础/link.png").symlink_to(tmp_path / "outside.png")
    with pytest.raises(CardsError) as e:
        load_bank(bank)
    (problem,) = e.value.problems
    assert problem.path == "01-基础/001-a.md" and problem.line == 24 and message in problem.message


BAD_FILES = {
    "not UTF-8": (
        "01-基础/002-gbk.md",
        question_md(2, "中文", ["1. **甲**：乙"]).encode("gbk"),
        "01-基础/002-gbk.md:1: not UTF-8",
    ),
    "binary": ("01-基础/002-bin.md", b"\x89PNG\x00\x00", "binary file"),
    "empty": ("01-基础/002-empty.md", b"", "01-基础/002-empty.md:1: file is empty"),
    "no memory points": (
        "01-基础/002-none.md",
        question_md(2, "空", []).replace("## 记忆要点", "## 其他").encode(),
        "no '## 记忆要点' section",
    ),
    "empty memory points": ("01-基础/002-e.md", question_md(2, "空", []).encode(), "记忆要点 is empty"),
    "no number": ("01-基础/intro.md", b"# hi\n", "01-基础/intro.md:1: question file name has no number"),
    "H1 disagrees": (
        "01-基础/002-h.md",
        question_md(3, "错号", ["1. **甲**：乙"]).encode(),
        "01-基础/002-h.md:1: H1 says question 3 but the file name says 2",
    ),
    "bad YAML": (
        "01-基础/002-y.md",
        b"---\ntags: [a, b\nid: x\n---\n" + question_md(2, "y", ["1. **a**：b"]).encode(),
        "01-基础/002-y.md:3: front matter is not valid YAML",
    ),
    "two 记忆要点": (
        "01-基础/002-twice.md",
        (question_md(2, "两次", ["1. **a**：b"]) + "\n## 记忆要点\n\n1. **c**：d\n").encode(),
        "section '## 记忆要点' appears twice",
    ),
    "huge": ("01-基础/002-big.md", b"# x\n" + b"a" * (5 * 2**20), "the limit is 4 MiB"),
    "UTF-16": (
        "01-基础/002-u16.md",
        question_md(2, "十六", ["1. **甲**：乙"]).encode("utf-16"),
        "01-基础/002-u16.md:1: the file looks like UTF-16",
    ),
    "UTF-16 without BOM": (
        "01-基础/002-le.md",
        question_md(2, "x", ["1. **a**：b"]).encode("utf-16-le"),
        "01-基础/002-le.md:1: the file looks like UTF-16",
    ),
    "unclosed front matter": (
        "01-基础/002-fm.md",
        b"---\ntags: [a]\n" + question_md(2, "y", ["1. **a**：b"]).encode(),
        "01-基础/002-fm.md:1: front matter is not closed",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_each_kind_of_bad_file_is_reported_and_nothing_written(tmp_path, case):
    bank = write_bank(tmp_path / "questions", {"01-基础/001-a.md": question_md(1, "好", ["1. **甲**：乙"])})
    runner = CliRunner()
    assert runner.invoke(main, ["build", "--questions", str(bank)]).exit_code == 0
    decks = tmp_path / "decks"
    before = {p.name: p.read_bytes() for p in decks.iterdir()}
    rel, data, message = BAD_FILES[case]
    (bank / rel).write_bytes(data)
    result = runner.invoke(main, ["build", "--questions", str(bank)])
    assert result.exit_code == 1 and message in result.output, result.output
    assert result.output.count(f"{rel}:") == 1, result.output  # one clear error, not several unrelated ones
    assert {p.name: p.read_bytes() for p in decks.iterdir()} == before


def test_unknown_front_matter_key_is_a_warning(tmp_path):
    text = "---\nauthor: me\n---\n" + question_md(1, "甲", ["1. **a**：b"])
    bank = write_bank(tmp_path / "questions", {"01-基础/001-a.md": text})
    result = CliRunner().invoke(main, ["check", "--questions", str(bank)])
    assert result.exit_code == 0
    assert "01-基础/001-a.md:2: warning: unknown front matter key 'author'" in result.output


def test_check_lists_every_problem_in_one_run(tmp_path):
    bank = write_bank(
        tmp_path / "questions",
        {
            "01-基础/001-a.md": question_md(1, "甲", ["1. **a**："]),
            "01-基础/002-b.md": question_md(3, "乙", ["1. **a**：b"]),
            "01-基础/003-c.md": "",
        },
    )
    result = CliRunner().invoke(main, ["check", "--questions", str(bank)])
    assert result.exit_code == 1 and "3 error(s)" in result.output
    assert [ln.split(":")[0] for ln in result.output.splitlines()[:3]] == [
        "01-基础/001-a.md",
        "01-基础/002-b.md",
        "01-基础/003-c.md",
    ]


def test_symlink_loop_and_unreadable_file(tmp_path):
    bank = write_bank(tmp_path / "questions", {"01-基础/001-a.md": question_md(1, "甲", ["1. **a**：b"])})
    (bank / "01-基础/002-loop.md").symlink_to(bank / "01-基础/002-loop.md")
    (bank / "01-基础/loopdir").symlink_to(bank / "01-基础")
    with pytest.raises(CardsError) as e:
        load_bank(bank)
    assert any("looping symbolic link" in p.message for p in e.value.problems)


def test_an_unreadable_file_is_reported(tmp_path, monkeypatch):
    bank = write_bank(tmp_path / "questions", {"01-基础/001-a.md": question_md(1, "甲", ["1. **a**：b"])})
    target = bank / "01-基础/001-a.md"
    if os.geteuid() != 0:
        target.chmod(0)
    else:  # root reads every file whatever its mode: make the read itself fail as it would for a user
        real = Path.read_bytes

        def denied(self):
            if self == target:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self)

        monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(CardsError) as e:
        load_bank(bank)
    assert [str(p) for p in e.value.problems] == [
        "01-基础/001-a.md:1: cannot read file: Permission denied; check its permissions"
    ]


def test_five_thousand_items_work(tmp_path):
    points = [f"{i}. **提示 {i}**：答案 {i}" for i in range(1, 5001)]
    bank = write_bank(tmp_path / "questions", {"01-基础/001-a.md": question_md(1, "大", points)})
    built = plan(Paths.default(bank), 1_800_000_000)
    assert len(built.cards) == 5000 and len({c.guid for c in built.cards}) == 5000


def test_hand_edited_lock_with_duplicate_guid_is_refused(tmp_path):
    bank = write_bank(
        tmp_path / "questions", {"01-基础/001-a.md": question_md(1, "甲", ["1. **a**：b", "2. **c**：d"])}
    )
    assert CliRunner().invoke(main, ["build", "--questions", str(bank)]).exit_code == 0
    lock = tmp_path / "decks" / "ainfra-cards.lock.yaml"
    data = yaml.safe_load(lock.read_text("utf-8"))
    data["notes"][1]["guid"] = data["notes"][0]["guid"]
    broken = yaml.safe_dump(data, allow_unicode=True)
    lock.write_text(broken, "utf-8")
    result = CliRunner().invoke(main, ["build", "--questions", str(bank)])
    assert result.exit_code == 1 and "appears twice in the lock" in result.output
    assert lock.read_text("utf-8") == broken


# ---------------------------------------------------------------------------------------------
# Crash safety and concurrency: real processes, real signals.

REPO = Path(__file__).resolve().parents[1]


def _build_cmd(bank: Path) -> list[str]:
    return [sys.executable, "-m", "ainfra_cards.cli", "build", "--questions", str(bank)]


def _assert_valid(decks: Path) -> None:
    data = yaml.safe_load((decks / "ainfra-cards.lock.yaml").read_text("utf-8"))
    assert data["format"] == 1 and data["notes"]
    assert _fields(decks / "ainfra-cards.apkg")


def test_a_killed_build_leaves_the_previous_files_intact(tmp_path):
    bank = tmp_path / "questions"
    bank.mkdir()
    for q in sorted((REPO / "questions").glob("0[1-5]*/0*.md")):
        target = bank / q.parent.name / q.name
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(q.read_bytes())
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1800000000"}
    subprocess.run(_build_cmd(bank), check=True, env=env, capture_output=True)
    decks = tmp_path / "decks"
    start = time.monotonic()
    subprocess.run(_build_cmd(bank), check=True, env=env, capture_output=True)
    full = time.monotonic() - start
    for fraction in (0.1, 0.3, 0.5, 0.7, 0.85, 0.95):
        for q in list(bank.glob("01*/00[1-3]*.md")):  # a change, so the build has something to write
            q.write_text(
                q.read_text("utf-8").replace("## 题目", f"## 题目\n\n<!-- {fraction} -->", 1), "utf-8"
            )
        proc = subprocess.Popen(
            _build_cmd(bank),
            env={**env, "SOURCE_DATE_EPOCH": str(1800000000 + int(fraction * 100))},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(full * fraction)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        _assert_valid(decks)
    # a kill mid-write can leave a temporary file; the next build clears what killed builds left
    subprocess.run(_build_cmd(bank), check=True, env=env, capture_output=True)
    _assert_valid(decks)
    assert list(decks.glob(".*.tmp")) == []


def test_a_second_build_at_the_same_time_fails_clearly(tmp_path):
    bank = write_bank(tmp_path / "questions", {"01-基础/001-a.md": question_md(1, "甲", ["1. **a**：b"])})
    assert CliRunner().invoke(main, ["build", "--questions", str(bank)]).exit_code == 0
    lock = tmp_path / "decks" / "ainfra-cards.lock.yaml"
    before = lock.read_bytes()
    with open(tmp_path / "decks" / ".ainfra-cards.lock.yaml.building", "a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        result = subprocess.run(_build_cmd(bank), capture_output=True, text=True)
    assert result.returncode == 1 and "another ainfra-cards build is writing this lock" in result.stderr
    assert lock.read_bytes() == before
