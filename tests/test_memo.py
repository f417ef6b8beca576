"""The build memo never changes what is built.

The memo (memo.py) keeps parsed questions, rendered questions, note digests, the parsed lock,
the matching and a record of each output, in one SQLite file, under a hash of their input and
of the whole package's code. These tests build real banks with and without it and compare
bytes; change the package's code under a warm memo; break the file in the ways a disk or a user
can; run two builds at once; and check that batching inline pieces gives exactly what rendering
each alone gives.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import question_md, write_bank

import ainfra_cards
from ainfra_cards.bank import load_bank
from ainfra_cards.cli import main
from ainfra_cards.lockfile import GENERATOR, Lock, dump_lock, load_lock
from ainfra_cards.memo import KEEP_DAYS, Memo
from ainfra_cards.outputs.deck import apkg_summary
from ainfra_cards.render import FileRenderer, _batchable, render_fragment

REPO = Path(__file__).resolve().parents[1]
OUTPUTS = ("ainfra-cards.apkg", "ainfra-cards.lock.yaml", "study.html")
MEMO = Path("ainfra-cards") / "memo.sqlite3"


def _bank(root: Path) -> Path:
    return write_bank(
        root / "questions",
        {
            "01-基础/001-a.md": question_md(
                1, "甲 `code`", ["1. **公式**：\\( a^2 + b^2 \\) 与 `x`", "2. **乙**：丙 **粗体**"]
            ),
            "02-进阶/011-b.md": question_md(11, "乙", ["1. **表**：见 [第 1 题](../01-基础/001-a.md)"]),
        },
    )


def _build(bank: Path, cache_home: Path, *args: str) -> dict[str, bytes]:
    env = {"XDG_CACHE_HOME": str(cache_home), "SOURCE_DATE_EPOCH": "1800000000"}
    result = CliRunner(env=env).invoke(main, ["build", "--questions", str(bank), *args])
    assert result.exit_code == 0, result.output
    decks = bank.parent / "decks"
    return {name: (decks / name).read_bytes() for name in OUTPUTS}


def _entries(cache_home: Path) -> int:
    db = sqlite3.connect(cache_home / MEMO)
    try:
        return int(db.execute("SELECT count(*) FROM memo").fetchone()[0])
    finally:
        db.close()


def test_outputs_are_byte_identical_with_and_without_the_memo(tmp_path):
    cold = _build(_bank(tmp_path / "a"), tmp_path / "cache-a", "--no-cache")
    assert not (tmp_path / "cache-a").exists()  # --no-cache writes no memo either
    first = _build(_bank(tmp_path / "b"), tmp_path / "cache-b")
    again = _build(tmp_path / "b" / "questions", tmp_path / "cache-b")  # all from the memo
    assert cold == first == again
    assert _entries(tmp_path / "cache-b") > 0


def test_a_warm_build_after_a_code_change_equals_a_cold_one(tmp_path):
    """Changing a constant that shapes the output (the tag root) under a warm memo: every note
    is updated, exactly as a --no-cache build of the changed code does it."""
    package = tmp_path / "code" / "ainfra_cards"
    shutil.copytree(Path(ainfra_cards.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "SOURCE_DATE_EPOCH": "1800000000"}

    def build(bank: Path, *args: str, code: Path | None = None) -> str:
        run_env = {**env, "PYTHONPATH": str(code)} if code else env
        out = subprocess.run(
            [sys.executable, "-m", "ainfra_cards.cli", "build", "--questions", str(bank), *args],
            env=run_env,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    warm, cold = _bank(tmp_path / "warm"), _bank(tmp_path / "cold")
    build(warm, code=package.parent)  # the original code warms the memo
    build(cold, code=package.parent)
    notetype = package / "notetype.py"
    text = notetype.read_text("utf-8")
    assert 'TAG_ROOT = "AI-Infra"' in text
    notetype.write_text(text.replace('TAG_ROOT = "AI-Infra"', 'TAG_ROOT = "AIInfra"'), "utf-8")
    report = build(warm, code=package.parent)
    build(cold, "--no-cache", code=package.parent)
    assert re.search(r"^total\s+0\s+3\s+0\s+0$", report, re.M), report  # every note updated
    for name in OUTPUTS:
        assert (warm.parent / "decks" / name).read_bytes() == (cold.parent / "decks" / name).read_bytes(), (
            name
        )
    notes = apkg_summary((warm.parent / "decks" / "ainfra-cards.apkg").read_bytes())["notes"]
    assert all(" AIInfra::Q0" in tags and "AI-Infra" not in tags for _, _, _, tags, _ in notes)
    check = subprocess.run(
        [sys.executable, "-m", "ainfra_cards.cli", "build", "--check", "--questions", str(warm)],
        env={**env, "PYTHONPATH": str(package.parent)},
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "foreign", "folder"])
def test_a_broken_or_foreign_memo_file_is_a_miss_and_made_anew(tmp_path, damage):
    bank = _bank(tmp_path)
    cache = tmp_path / "cache"
    clean = _build(bank, cache)
    for name in ("study.html", "ainfra-cards.apkg"):  # make the next build render both again
        (tmp_path / "decks" / name).unlink()
    memo = cache / MEMO
    if damage == "garbage":
        memo.write_bytes(b"\x00\xff not a database" * 100)
    elif damage == "empty":
        memo.write_bytes(b"")
    elif damage == "truncated":
        memo.write_bytes(memo.read_bytes()[: memo.stat().st_size // 3])
    elif damage == "foreign":
        memo.unlink()
        db = sqlite3.connect(memo)
        db.execute("CREATE TABLE memo (key TEXT, value TEXT)")  # someone else's file of that name
        db.execute("INSERT INTO memo VALUES ('k', 'v')")
        db.commit()
        db.close()
    else:
        memo.unlink()
        memo.mkdir()  # not even a file: the memo is off, the build goes on
    assert _build(bank, cache) == clean
    if damage != "folder":
        assert _entries(cache) > 0  # made anew
        assert _build(bank, cache) == clean


def test_two_builds_at_once_share_the_memo_safely(tmp_path):
    cache = tmp_path / "cache"
    banks = [_bank(tmp_path / f"b{i}") for i in range(4)]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "SOURCE_DATE_EPOCH": "1800000000"}
    results: list[subprocess.CompletedProcess[str]] = []

    def build(bank: Path) -> None:
        results.append(
            subprocess.run(
                [sys.executable, "-m", "ainfra_cards.cli", "build", "--questions", str(bank)],
                env=env,
                capture_output=True,
                text=True,
            )
        )

    threads = [threading.Thread(target=build, args=(b,)) for b in banks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.returncode for r in results] == [0] * 4, [r.stderr for r in results]
    reference = _build(_bank(tmp_path / "ref"), tmp_path / "c2", "--no-cache")
    for bank in banks:
        decks = bank.parent / "decks"
        assert {name: (decks / name).read_bytes() for name in OUTPUTS} == reference


def test_entries_unused_for_long_are_dropped(tmp_path, monkeypatch):
    import ainfra_cards.memo as memo_mod

    path = tmp_path / "memo.sqlite3"
    memo = Memo(path)
    memo.put(memo.key("t", 1), "old")
    memo.close()
    day = 86400
    now = memo_mod.time.time()
    monkeypatch.setattr(memo_mod.time, "time", lambda: now + (KEEP_DAYS - 1) * day)
    memo = Memo(path)
    assert memo.get(memo.key("t", 1)) == "old"  # still there, and now marked as used again
    memo.close()
    monkeypatch.setattr(memo_mod.time, "time", lambda: now + (2 * KEEP_DAYS - 2) * day)
    memo = Memo(path)
    assert memo.get(memo.key("t", 1)) == "old"
    memo.close()
    monkeypatch.setattr(memo_mod.time, "time", lambda: now + (4 * KEEP_DAYS) * day)
    later = Memo(path)  # a build long after, which keeps something new: the old entry goes
    later.put(later.key("t", 2), "new")
    later.close()
    assert Memo(path).get(Memo(path).key("t", 1)) is None


def test_an_unwritable_cache_folder_only_means_no_cache(tmp_path):
    bank = _bank(tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", "utf-8")
    assert _build(bank, blocker) == _build(_bank(tmp_path / "ref"), tmp_path / "c2", "--no-cache")


def test_an_edit_is_never_hidden_by_the_cache(tmp_path):
    def edit(bank: Path) -> None:
        path = bank / "01-基础/001-a.md"
        path.write_text(path.read_text("utf-8").replace("丙 **粗体**", "丁 **斜体**"), "utf-8")

    bank, ref = _bank(tmp_path / "a"), _bank(tmp_path / "b")
    _build(bank, tmp_path / "cache")
    _build(ref, tmp_path / "c2", "--no-cache")
    edit(bank)
    edit(ref)
    cached = _build(bank, tmp_path / "cache")  # the edited file misses, the rest hit
    fresh = _build(ref, tmp_path / "c2", "--no-cache")  # the same history, nothing cached
    assert "丁 <strong>斜体</strong>" in cached["study.html"].decode()
    assert cached == fresh


def test_batched_inline_pieces_equal_single_renders_on_the_whole_bank():
    bank, _ = load_bank(REPO / "questions")
    compared = 0
    for q in bank.questions:
        r = FileRenderer(q.media)
        texts = [t for p in q.points for t in (p.cue, p.answer)]
        r.prefetch(texts)
        for text in texts:
            if _batchable(text):
                alone = render_fragment(text, inline=True)
                assert r(text, inline=True) == alone, text
                compared += 1
    assert compared > 1000


def test_writing_back_an_unchanged_lock_note_gives_the_full_dump(tmp_path):
    lock = load_lock(REPO / "decks" / "ainfra-cards.lock.yaml")
    assert lock is not None and lock.blocks
    full = dump_lock(Lock(lock.notetype_digest, lock.notetype_mod, lock.entries), GENERATOR)
    assert dump_lock(lock, GENERATOR) == full
    edited = [*lock.entries]
    edited[3] = type(edited[3])(**{**edited[3].__dict__, "answer": "改: 'x' \"y\"\n- z"})
    both = Lock(lock.notetype_digest, lock.notetype_mod, edited, lock.blocks)
    assert dump_lock(both, GENERATOR) == dump_lock(
        Lock(lock.notetype_digest, lock.notetype_mod, edited), GENERATOR
    )


def test_rendering_in_two_processes_builds_the_same_bytes(tmp_path, monkeypatch):
    from ainfra_cards import build

    files = {
        f"0{1 + n % 3}-模块{1 + n % 3}/{n:03d}-q.md": question_md(
            n, f"题 {n} `x`", [f"1. **提示 {n}**：答案 \\( a_{n} \\)", f"2. **另一条 {n}**：`code_{n}`"]
        )
        for n in range(1, 9)
    }
    one = _build(write_bank(tmp_path / "one" / "questions", files), tmp_path / "c1", "--no-cache")
    monkeypatch.setattr(build, "PARALLEL_MIN_QUESTIONS", 2)  # 8 questions: two workers
    monkeypatch.setattr(build, "MAX_WORKERS", 2)
    two = _build(write_bank(tmp_path / "two" / "questions", files), tmp_path / "c2", "--no-cache")
    assert one == two


def test_a_series_of_edits_under_the_cache_builds_what_a_cold_build_does(tmp_path):
    """Each step's outputs, built with the memo (unchanged questions, the lock and the matching
    read back from it), equal a --no-cache build
    of the same history: an answer edited and reverted, a question added that changes where
    links point, a file renamed, a module page added."""
    steps = [
        lambda b: _replace(b / "01-基础/001-a.md", "丙 **粗体**", "丁"),
        lambda b: _replace(b / "01-基础/001-a.md", "丁", "丙 **粗体**"),
        lambda b: (b / "01-基础/002-c.md").write_text(
            question_md(2, "丙", ["1. **链**：见 [第 11 题](../02-进阶/011-b.md)"]), "utf-8"
        ),
        lambda b: (b / "02-进阶/011-b.md").rename(b / "02-进阶/011-renamed.md"),
        lambda b: (b / "02-进阶/README.md").write_text(
            "# 进阶\n\n- [第 2 题](../01-基础/002-c.md)\n", "utf-8"
        ),
    ]
    cached, cold = _bank(tmp_path / "a"), _bank(tmp_path / "b")
    _build(cached, tmp_path / "cache")
    _build(cold, tmp_path / "c2", "--no-cache")
    for step in steps:
        step(cached)
        step(cold)
        assert _build(cached, tmp_path / "cache") == _build(cold, tmp_path / "c2", "--no-cache")
    assert (tmp_path / "cache" / "ainfra-cards" / "memo.sqlite3").is_file()


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new), "utf-8")


def test_every_field_of_a_lock_entry_is_written(tmp_path):
    from dataclasses import fields

    from ainfra_cards.lockfile import LockEntry, Revision, _note_data

    entry = LockEntry(
        "g", "001", 1, 1, "cue", "answer", "c", 5, "active", "an-id", "2026.11.30", "2026.12.01"
    )
    entry.history = [Revision("2026.12.01", "old cue", "old answer")]
    entry.retired_in, entry.replaced_by = "2026.12.02", "h"
    assert list(_note_data(entry)) == [f.name for f in fields(LockEntry)]


def test_a_build_of_inputs_a_build_left_behind_is_that_build_again(tmp_path, monkeypatch):
    """Nothing parsed when the bank, the lock, the code and every output are as the last build left
    them; any one of them changed, and the build runs in full."""
    from ainfra_cards.build import BuildRequest, run_build

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bank = _bank(tmp_path)

    def build(mode="write"):
        return run_build(BuildRequest(bank, now=1_800_000_000, mode=mode))

    first = build()
    assert first.built is not None
    again = build()
    assert again.built is None and {w.outcome for w in again.written} == {"unchanged"}
    assert again.summary.deck_cards == first.summary.deck_cards == 3
    assert [c.unchanged for c in again.summary.changes.values()] == [2, 1]
    checked = build("check")
    assert checked.built is None and checked.stale == []
    deck = tmp_path / "decks" / "ainfra-cards.apkg"
    deck.write_bytes(deck.read_bytes())  # rewritten (same bytes, a new file state): look again
    assert build().built is not None and build().built is None
    image = bank / "01-基础" / "note.txt"  # any other file of the bank folder is an input too
    image.write_text("x", "utf-8")
    assert build().built is not None and build().built is None
    _replace(bank / "01-基础/001-a.md", "丙 **粗体**", "丁")
    changed = build()
    assert changed.built is not None and sum(c.updated for c in changed.summary.changes.values()) == 1


def test_only_the_newest_code_versions_keep_their_entries(tmp_path, monkeypatch):
    import ainfra_cards.memo as memo_mod

    path = tmp_path / "memo.sqlite3"
    for version in range(5):  # five code versions, each building once
        monkeypatch.setattr(memo_mod, "code_stamp", lambda v=version: f"code-{v}")
        memo = Memo(path)
        memo.put(memo.key("t", 1), f"from {version}")
        memo.close()
    db = sqlite3.connect(path)
    stamps = {row[0] for row in db.execute("SELECT stamp FROM memo")}
    db.close()
    assert stamps == {f"code-{v}" for v in range(5 - memo_mod.KEEP_CODE_VERSIONS, 5)}


def test_the_lock_a_build_wrote_is_read_back_from_the_memo_as_parsing_it_gives(tmp_path):
    """After a build, the memo holds the lock under the bytes written, and that entry is exactly
    what parsing those bytes gives: the next build's lock is the same with or without it."""
    from ainfra_cards.build import Paths, _load_lock, plan
    from ainfra_cards.lockfile import read_lock

    bank = _bank(tmp_path)
    _build(bank, tmp_path / "cache")
    lock_path = bank.parent / "decks" / "ainfra-cards.lock.yaml"
    raw = lock_path.read_bytes()
    memo = Memo(tmp_path / "cache" / MEMO)
    try:
        misses = memo.misses
        remembered = _load_lock(lock_path, memo)
        assert memo.misses == misses and memo.hits == 1  # from the memo, not parsed
    finally:
        memo.close()
    assert remembered == read_lock(raw, str(lock_path))
    # and for the whole bundled bank: parsing the lock text a plan writes gives its Lock back
    built = plan(Paths.default(REPO / "questions"), 1_800_000_000)
    assert read_lock(built.lock_text.encode("utf-8"), "lock") == built.lock
