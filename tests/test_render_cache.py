"""Rendering once and caching it never changes what is built.

The build cache keeps parsed questions, rendered pieces, note digests, the parsed lock and a
record of each output. These tests build real banks with and without it and compare bytes,
break the cache in the ways a disk or a user can, and check that batching inline pieces gives
exactly what rendering each alone gives.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import question_md, write_bank

from ainfra_cards.bank import load_bank
from ainfra_cards.cache import NO_CACHE, Cache
from ainfra_cards.cli import main
from ainfra_cards.lockfile import (
    GENERATOR,
    Lock,
    dump_lock,
    load_lock,
    lock_data,
    parse_lock_text,
    remember_lock,
)
from ainfra_cards.render import FileRenderer, _batchable, render_fragment

REPO = Path(__file__).resolve().parents[1]
OUTPUTS = ("ainfra-cards.apkg", "ainfra-cards.lock.yaml", "study.html")


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


def test_outputs_are_byte_identical_with_and_without_the_cache(tmp_path):
    cold = _build(_bank(tmp_path / "a"), tmp_path / "cache-a", "--no-cache")
    assert not (tmp_path / "cache-a").exists()  # --no-cache writes no cache either
    first = _build(_bank(tmp_path / "b"), tmp_path / "cache-b")
    again = _build(tmp_path / "b" / "questions", tmp_path / "cache-b")  # all from the cache
    assert cold == first == again
    assert any((tmp_path / "cache-b").rglob("*.json"))


@pytest.mark.parametrize("damage", ["garbage", "empty", "other-key", "truncated", "unreadable"])
@pytest.mark.parametrize("files", ["*.json", "*.bin"])
def test_a_broken_cache_entry_is_a_miss_not_an_error(tmp_path, damage, files):
    """Every entry (*.json) or the bundle (*.bin), broken in each way a disk or a user can."""
    bank = _bank(tmp_path)
    cache = tmp_path / "cache"
    clean = _build(bank, cache)
    for name in ("study.html", "ainfra-cards.apkg"):  # make the next build render both again
        (tmp_path / "decks" / name).unlink()
    damaged = list(cache.rglob(files))
    assert damaged
    for entry in damaged:
        if damage == "garbage":
            entry.write_bytes(b"\x00\xff not json")
        elif damage == "empty":
            entry.write_text("", "utf-8")
        elif damage == "other-key":
            entry.write_text(json.dumps({"format": 1, "key": "nope", "data": {}}), "utf-8")
        elif damage == "truncated":
            entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
        elif os.geteuid() != 0:
            entry.chmod(0)
        else:
            entry.unlink()
            entry.mkdir()  # even root cannot read a folder as a file
    assert _build(bank, cache) == clean


def test_a_build_reads_what_the_last_one_used_from_one_bundle(tmp_path):
    """With every single entry gone, the bundle alone gives a build all it needs: the bytes
    are the same and nothing is parsed or rendered again."""
    bank = _bank(tmp_path)
    cache = tmp_path / "cache"
    clean = _build(bank, cache)
    for entry in cache.rglob("*.json"):
        if entry.parent.parent.name != "output":  # output records are never bundled
            entry.unlink()
    for name in ("study.html", "ainfra-cards.apkg"):
        (tmp_path / "decks" / name).unlink()
    calls = []
    import ainfra_cards.render as render_mod

    real = render_mod._markdown
    render_mod._markdown = lambda text: calls.append(text) or real(text)  # type: ignore[assignment]
    try:
        assert _build(bank, cache) == clean
    finally:
        render_mod._markdown = real
    assert calls == []


@pytest.mark.parametrize(
    "command", [["build", "--module", "01"], ["html", "--output", "elsewhere/page.html"]]
)
def test_a_module_deck_or_the_page_alone_reads_the_whole_decks_bundle(tmp_path, command, monkeypatch):
    """Entries in a bundle have no file of their own: another output of the same bank reads
    them from the bank's whole-deck bundle instead of parsing and rendering the bank again."""
    import ainfra_cards.render as render_mod

    bank = _bank(tmp_path)
    _build(bank, tmp_path / "cache")
    for entry in (tmp_path / "cache").rglob("*.json"):
        if entry.parent.parent.name != "output":
            entry.unlink()
    calls: list[str] = []
    real = render_mod._markdown
    monkeypatch.setattr(render_mod, "_markdown", lambda text: calls.append(text) or real(text))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "SOURCE_DATE_EPOCH": "1800000000"}
    args = [*command[:1], "--questions", str(bank), *command[1:]]
    args = [a if a != "elsewhere/page.html" else str(tmp_path / a) for a in args]
    result = CliRunner(env=env).invoke(main, args)
    assert result.exit_code == 0, result.output
    assert calls == []


def _markdown_calls(monkeypatch) -> list[str]:
    import ainfra_cards.render as render_mod

    calls: list[str] = []
    real = render_mod._markdown
    monkeypatch.setattr(render_mod, "_markdown", lambda text: calls.append(text) or real(text))
    return calls


def test_a_small_edit_goes_into_the_delta_and_the_next_build_reads_it(tmp_path, monkeypatch):
    """After an edit that changes under REBUNDLE_SHARE of what a build uses, the build leaves the
    bundle alone and writes what it added as the bundle's delta, not as files of their own; a
    later build reads it from there, renders nothing, and builds what a cold build does."""
    from ainfra_cards import cache as cache_mod

    monkeypatch.setattr(cache_mod, "REBUNDLE_SHARE", 0.9)  # this bank is tiny: one edit is 1/2 of it
    bank = _bank(tmp_path / "a")
    cache = tmp_path / "cache"
    _build(bank, cache)
    (bundle,) = (cache / "ainfra-cards" / "bundle").rglob("*.bin")
    before = bundle.read_bytes()
    files_before = {p for p in cache.rglob("*.json") if p.parent.parent.name not in cache_mod.UNBUNDLED}

    _replace(bank / "01-基础/001-a.md", "丙 **粗体**", "丁")
    edited = _build(bank, cache)
    assert bundle.read_bytes() == before  # the bundle was not written again
    delta = bundle.with_name(bundle.stem + ".delta.bin")
    assert delta.is_file() and delta.stat().st_size < len(before)
    assert {
        p for p in cache.rglob("*.json") if p.parent.parent.name not in cache_mod.UNBUNDLED
    } == files_before

    for entry in cache.rglob("*.json"):  # nothing but the bundle and its delta to read from
        if entry.parent.parent.name != "output":
            entry.unlink()
    for name in ("study.html", "ainfra-cards.apkg"):
        (tmp_path / "a" / "decks" / name).unlink()
    calls = _markdown_calls(monkeypatch)
    assert _build(bank, cache) == edited
    assert calls == []
    cold = _bank(tmp_path / "b")  # the same history, built with no cache
    _build(cold, tmp_path / "c2", "--no-cache")
    _replace(cold / "01-基础/001-a.md", "丙 **粗体**", "丁")
    assert _build(cold, tmp_path / "c2", "--no-cache") == edited

    _replace(bank / "01-基础/001-a.md", "丁", "戊")  # a second edit: the delta takes it too
    _build(bank, cache)
    assert bundle.read_bytes() == before and delta.is_file()
    monkeypatch.setattr(cache_mod, "REBUNDLE_SHARE", 0.0)  # enough changed: one bundle again
    _replace(bank / "01-基础/001-a.md", "戊", "己")
    _build(bank, cache)
    assert bundle.read_bytes() != before and not delta.exists()


def test_a_new_bundle_keeps_what_the_delta_held_of_kinds_the_build_did_not_use(tmp_path, monkeypatch):
    """A build that changed nothing reads no rendered piece; when it writes a new bundle, the
    edited question's pieces (in the delta) go into it, as the last bundle's own do."""
    from ainfra_cards import cache as cache_mod

    monkeypatch.setattr(cache_mod, "REBUNDLE_SHARE", 0.9)
    bank = _bank(tmp_path)
    cache = tmp_path / "cache"
    _build(bank, cache)
    _replace(bank / "01-基础/001-a.md", "丙 **粗体**", "丁")
    edited = _build(bank, cache)  # the edited question's pieces go into the delta
    monkeypatch.setattr(cache_mod, "REBUNDLE_SHARE", -1.0)  # the next build writes a new bundle
    assert _build(bank, cache) == edited  # changed nothing: renders nothing, writes no output
    assert not list((cache / "ainfra-cards" / "bundle").rglob("*.delta.bin"))
    for entry in cache.rglob("*.json"):
        if entry.parent.parent.name != "output":
            entry.unlink()
    for name in ("study.html", "ainfra-cards.apkg"):
        (tmp_path / "decks" / name).unlink()
    calls = _markdown_calls(monkeypatch)
    assert _build(bank, cache) == edited
    assert calls == []


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "removed"])
def test_a_broken_delta_is_a_miss_not_an_error(tmp_path, monkeypatch, damage):
    from ainfra_cards import cache as cache_mod

    monkeypatch.setattr(cache_mod, "REBUNDLE_SHARE", 0.9)
    bank = _bank(tmp_path)
    cache = tmp_path / "cache"
    _build(bank, cache)
    _replace(bank / "01-基础/001-a.md", "丙 **粗体**", "丁")
    edited = _build(bank, cache)
    (delta,) = (cache / "ainfra-cards" / "bundle").rglob("*.delta.bin")
    if damage == "garbage":
        delta.write_bytes(b"\x00\xff not a bundle")
    elif damage == "empty":
        delta.write_bytes(b"")
    elif damage == "truncated":
        delta.write_bytes(delta.read_bytes()[: delta.stat().st_size // 2])
    else:
        delta.unlink()
    for name in ("study.html", "ainfra-cards.apkg"):
        (tmp_path / "decks" / name).unlink()
    assert _build(bank, cache) == edited


def test_bundled_data_reads_back_as_json_data_does(tmp_path):
    """JSON data reads back as JSON gives it, bytes as bytes: from a bundle and from a file."""
    data = {"t": ("a", 1, [2.5, None, True]), "s": "丙", "n": {"x": [("y",)]}, "b": ["页", "页".encode()]}
    as_json = {
        **json.loads(json.dumps({k: v for k, v in data.items() if k != "b"})),
        "b": ["页", "页".encode()],
    }
    cache = Cache(tmp_path / "c")
    cache.open_bundle("out")
    cache.put("parse", "k" * 16, data)
    assert cache.get("parse", "k" * 16) == as_json  # what this build wrote, before any file exists
    cache.close_bundle()  # a new bundle: the entry gets no file of its own
    assert not (tmp_path / "c" / "parse").exists()
    bundled = Cache(tmp_path / "c")
    bundled.open_bundle("out")
    assert bundled.get("parse", "k" * 16) == as_json and bundled.hits == 1

    read_only = Cache(tmp_path / "c")
    read_only.open_bundle("another output")
    read_only.put("parse", "j" * 16, data)
    read_only.close_bundle(rebundle=False)  # no bundle written: the entry is kept as a file
    assert Cache(tmp_path / "c").get("parse", "j" * 16) == as_json


def test_an_edited_file_renders_only_its_edited_pieces(tmp_path, monkeypatch):
    """The pieces an edit left as they were come from the file's last version."""
    import ainfra_cards.render as render_mod

    bank = _bank(tmp_path / "a")
    _build(bank, tmp_path / "cache")
    _build(bank, tmp_path / "cache")  # nothing changed: it reads no rendered piece, and must keep them
    _replace(bank / "01-基础/001-a.md", "丙 **粗体**", "丁 **斜体**")
    rendered: list[str] = []
    real = render_mod.render_fragment
    monkeypatch.setattr(
        render_mod, "render_fragment", lambda text, *a, **k: rendered.append(text) or real(text, *a, **k)
    )
    cached = _build(bank, tmp_path / "cache")
    assert rendered == ["丁 **斜体**"]
    ref = _bank(tmp_path / "b")
    _build(ref, tmp_path / "c2", "--no-cache")
    _replace(ref / "01-基础/001-a.md", "丙 **粗体**", "丁 **斜体**")
    monkeypatch.setattr(render_mod, "render_fragment", real)
    assert cached == _build(ref, tmp_path / "c2", "--no-cache")


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
        r = FileRenderer(NO_CACHE, q.source_key, q.media)
        texts = [t for p in q.points for t in (p.cue, p.answer)]
        r.prefetch(texts)
        for text in texts:
            if _batchable(text):
                alone = render_fragment(text, inline=True)
                assert r(text, inline=True) == alone, text
                compared += 1
    assert compared > 1000


def test_writing_back_an_unchanged_lock_note_gives_the_full_dump(tmp_path):
    lock = load_lock(REPO / "decks" / "ainfra-cards.lock.yaml", Cache(tmp_path / "cache"))
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
    """Each step's outputs, built with the cache (the lock read back from the cache entry the
    previous build wrote, every unchanged study.html article reused), equal a --no-cache build
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
    assert any((tmp_path / "cache" / "ainfra-cards" / "bundle").rglob("*.bin"))


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new), "utf-8")


def test_the_lock_data_cached_on_write_is_what_parsing_the_written_lock_gives(tmp_path):
    lock = load_lock(REPO / "decks" / "ainfra-cards.lock.yaml")
    assert lock is not None
    entries = [*lock.entries]
    entries[0] = replace(entries[0], status="retired", id="kept-id", cue="123", answer="'引号' # 注释")
    edited = Lock(lock.notetype_digest, lock.notetype_mod, entries, lock.blocks)
    assert lock_data(edited) == {
        k: v for k, v in parse_lock_text(dump_lock(edited, GENERATOR)).items() if k != "generator"
    }
    cache = Cache(tmp_path / "cache")
    text = dump_lock(edited, GENERATOR)
    remember_lock(cache, text.encode("utf-8"), edited)
    path = tmp_path / "lock.yaml"
    path.write_text(text, "utf-8")
    from_cache, parsed = load_lock(path, cache), load_lock(path)
    assert cache.hits == 1
    assert from_cache is not None and parsed is not None
    assert from_cache.entries == parsed.entries and from_cache.blocks == parsed.blocks


def test_the_next_build_reads_the_lock_it_wrote_from_the_cache(tmp_path):
    bank = _bank(tmp_path)
    _build(bank, tmp_path / "cache")
    cache = Cache(tmp_path / "cache" / "ainfra-cards")
    cache.open_bundle(str((tmp_path / "decks" / "ainfra-cards.apkg").resolve()))  # as a build does
    assert load_lock(tmp_path / "decks" / "ainfra-cards.lock.yaml", cache) is not None
    assert (cache.hits, cache.misses) == (1, 0)


def test_matching_takes_the_comparison_forms_cached_with_the_lock(tmp_path, monkeypatch):
    """The lock a build writes is cached with its cues' and answers' comparison forms (most of
    what matching costs); the next build takes them, and nothing that is not a well-formed
    list of forms for every note of that lock."""
    from ainfra_cards import ids

    bank = _bank(tmp_path)
    _build(bank, tmp_path / "cache")
    cache = Cache(tmp_path / "cache" / "ainfra-cards")
    cache.open_bundle(str((tmp_path / "decks" / "ainfra-cards.apkg").resolve()))
    lock = load_lock(tmp_path / "decks" / "ainfra-cards.lock.yaml", cache)
    assert lock is not None and lock.entries
    monkeypatch.setattr(ids, "_FORMS", {})
    ids.recall_forms(cache, lock)
    texts = {t for e in lock.entries for t in (e.cue, e.answer)}
    assert {t: ids._NOT_COMPARED_RE.sub("", t).lower() for t in texts} == ids._FORMS
    assert (cache.hits, cache.misses) == (2, 0)

    key = ids._forms_key(lock.key)
    some = {e.guid: ["a", "b"] for e in lock.entries[1:]}
    for bad in ({"x": 1}, some, {**some, lock.entries[0].guid: ["a"]}, ["a", "b"]):
        cache.put("forms", key, bad)
        monkeypatch.setattr(ids, "_FORMS", {})
        ids.recall_forms(cache, lock)
        assert ids._FORMS == {}


def test_the_cache_is_swept_of_old_entries_at_most_once_a_day(tmp_path):
    from ainfra_cards import cache as cache_mod

    cache = Cache(tmp_path / "c")
    now = 2_000_000_000.0
    day = 86400
    for i in range(12):  # twelve locks' data, one a day: only the newest 8 stay
        cache.put("lock", f"{i:02d}" + "a" * 14, {"i": i})
        os.utime(cache._path("lock", f"{i:02d}" + "a" * 14), (now - (12 - i) * day,) * 2)
    cache.put("render", "old" + "b" * 13, {})
    os.utime(cache._path("render", "old" + "b" * 13), (now - (cache_mod.MAX_AGE_DAYS + 1) * day,) * 2)
    cache.put("render", "new" + "b" * 13, {})
    os.utime(cache._path("render", "new" + "b" * 13), (now - day,) * 2)

    assert cache.sweep(now) == 4 + 1
    locks = sorted(p.stem[:2] for p in (tmp_path / "c" / "lock").rglob("*.json"))
    assert locks == [f"{i:02d}" for i in range(4, 12)]
    assert cache.get("render", "new" + "b" * 13) == {} and cache.get("render", "old" + "b" * 13) is None

    cache.put("render", "old" + "b" * 13, {})
    os.utime(cache._path("render", "old" + "b" * 13), (now - (cache_mod.MAX_AGE_DAYS + 1) * day,) * 2)
    assert cache.sweep(now + day / 2) == 0  # swept less than a day ago: nothing is even looked at
    assert cache.sweep(now + day + 1) == 1


def test_an_entry_in_use_is_kept_alive(tmp_path):
    from ainfra_cards import cache as cache_mod

    cache = Cache(tmp_path / "c")
    cache.put("parse", "k" * 16, [1])
    path = cache._path("parse", "k" * 16)
    old = time.time() - (cache_mod.MAX_AGE_DAYS - 1) * 86400
    os.utime(path, (old, old))
    assert cache.get("parse", "k" * 16) == [1]
    assert path.stat().st_mtime > old + 86400  # re-stamped: the next sweep keeps it
    assert cache.sweep() == 0 and path.exists()


def test_a_build_sweeps_and_a_sweep_never_breaks_a_build(tmp_path):
    bank = _bank(tmp_path)
    first = _build(bank, tmp_path / "cache")
    root = tmp_path / "cache" / "ainfra-cards"
    assert (root / ".last-sweep").exists()
    long_ago = time.time() - 400 * 86400
    for entry in root.rglob("*.json"):
        os.utime(entry, (long_ago, long_ago))
    os.utime(root / ".last-sweep", (long_ago, long_ago))
    (tmp_path / "decks" / "study.html").unlink()
    # the entries this build used are re-stamped, every other one is swept; the bytes stay the same
    assert _build(bank, tmp_path / "cache") == first
    assert not [p for p in root.rglob("*.json") if p.stat().st_mtime < long_ago + 1]
    assert _build(bank, tmp_path / "cache") == first


def test_every_field_of_a_lock_entry_is_written(tmp_path):
    from dataclasses import fields

    from ainfra_cards.lockfile import LockEntry, _note_data

    entry = LockEntry("g", "001", 1, 1, "cue", "answer", "c", 5, "active", "an-id")
    assert list(_note_data(entry)) == [f.name for f in fields(LockEntry)]
