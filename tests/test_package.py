"""The .apkg's collection: batched rows equal genanki's own, and a cached collection image
gives the same bytes without genanki.

The deck's notes and cards are inserted in two batches rather than through genanki's Note and
Card objects, and the collection before any note is loaded from a cached image. These tests
hold both to what genanki itself writes, table by table and row by row.
"""

from __future__ import annotations

import io
import itertools
import os
import sqlite3
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import genanki
import pytest
from conftest import question_md, write_bank

from ainfra_cards import notetype as nt
from ainfra_cards.build import Paths, plan
from ainfra_cards.cache import NO_CACHE, Cache
from ainfra_cards.outputs import deck as deck_mod
from ainfra_cards.outputs.deck import NOTE_ID_BASE, DeckOutput, deck_name, genanki_model, package_bytes

TABLES = ("col", "notes", "cards", "revlog", "graves")


def _bank(root: Path) -> Path:
    return write_bank(
        root / "questions",
        {
            "01-基础/001-a.md": question_md(1, "甲", ["1. **公式**：\\( a^2 \\) 与 `x`", "2. **乙**：丙"]),
            "01-基础/002-b.md": question_md(2, "乙", ["1. **丁**：戊"]),
            "03-进阶/031-c.md": question_md(31, "丙", ["1. **表**：见 [第 1 题](../01-基础/001-a.md)"]),
        },
    )


def _genanki_package(cards: list[Any], notetype_mod: int) -> bytes:
    """The collection as genanki writes it note by note (what this tool did before batching)."""

    class TimedNote(genanki.Note):  # type: ignore[misc]
        def __init__(self, mod: int, **kwargs: Any):
            super().__init__(**kwargs)
            self.mod = mod

        def write_to_db(self, cursor, timestamp, deck_id, id_gen):  # type: ignore[no-untyped-def]
            super().write_to_db(cursor, self.mod, deck_id, id_gen)

    model = genanki_model(notetype_mod)  # the notetype as this tool hands it to genanki
    decks: dict[int, genanki.Deck] = {}
    for position, card in enumerate(cards):
        did = nt.deck_id(card.module.number)
        deck = decks.setdefault(did, genanki.Deck(did, deck_name(card.module)))
        fields = [card.fields.get(name, "") for name in nt.FIELDS]
        deck.add_note(
            TimedNote(card.mod, model=model, fields=fields, tags=card.tags, guid=card.guid, due=position)
        )
    root = genanki.Deck(nt.ROOT_DECK_ID, nt.ROOT_DECK_NAME)
    stamp = max([notetype_mod, *(c.mod for c in cards)])
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "c.anki2")
        package = genanki.Package([root, *sorted(decks.values(), key=lambda d: d.deck_id)])
        package.write_to_db(conn.cursor(), stamp, itertools.count(stamp * NOTE_ID_BASE))
        conn.commit()
        conn.close()
        return (Path(tmp) / "c.anki2").read_bytes()


def _rows(collection: bytes) -> dict[str, list[Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.anki2"
        db.write_bytes(collection)
        conn = sqlite3.connect(db)
        try:
            rows = {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in TABLES}
            rows["schema"] = conn.execute("SELECT * FROM sqlite_master ORDER BY name").fetchall()
        finally:
            conn.close()
    return rows


def _collection_of(apkg: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(apkg)) as z:
        return z.read("collection.anki2")


@pytest.fixture
def built(tmp_path):
    return plan(Paths.default(_bank(tmp_path)), 1_800_000_000)


def test_the_batched_collection_is_row_for_row_what_genanki_writes(built):
    cards = built.cards
    assert len({c.module for c in cards}) == 2 and len({c.mod for c in cards}) == 1
    ours = package_bytes(cards, built.lock.notetype_mod, {})
    assert _rows(_collection_of(ours)) == _rows(_genanki_package(cards, built.lock.notetype_mod))


def test_notes_with_their_own_times_keep_genanki_numbering(built):
    """Different note times (the newest gives the ids' base), as after an edit."""
    from dataclasses import replace

    cards = [replace(c, mod=1_700_000_000 + 3600 * i) for i, c in enumerate(built.cards)]
    ours = package_bytes(cards, built.lock.notetype_mod, {})
    assert _rows(_collection_of(ours)) == _rows(_genanki_package(cards, built.lock.notetype_mod))


def test_a_cached_collection_image_gives_the_same_bytes(built, tmp_path):
    cache = Cache(tmp_path / "cache")
    cold = package_bytes(built.cards, built.lock.notetype_mod, {}, NO_CACHE)
    first = package_bytes(built.cards, built.lock.notetype_mod, {}, cache)
    assert (cache.hits, cache.misses) == (0, 1)
    again = package_bytes(built.cards, built.lock.notetype_mod, {}, cache)
    assert cache.hits == 1
    assert cold == first == again


def test_a_rebuild_of_the_deck_does_not_load_genanki(tmp_path):
    """After an edit the deck is packaged from the cached collection image alone."""
    bank = _bank(tmp_path)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ainfra_cards.build import BuildRequest, run_build\n"
        "run_build(BuildRequest(Path(sys.argv[1]), now=1800000000))\n"
        "print('genanki' in sys.modules)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def build() -> str:
        out = subprocess.run(
            [sys.executable, "-c", script, str(bank)], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert build() == "True"  # a first build has no image yet: genanki writes one
    path = bank / "01-基础/002-b.md"
    path.write_text(path.read_text("utf-8").replace("戊", "己"), "utf-8")
    assert build() == "False"
    assert DeckOutput(tmp_path / "decks" / "ainfra-cards.apkg").is_current(
        plan(Paths.default(bank), 1_800_000_000)
    )


def test_the_file_copy_of_the_database_holds_every_row():
    """Python 3.10 has no serialize(): the collection is then copied out through a file."""
    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT);")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, "丙" * (i % 97)) for i in range(2000)])
    conn.commit()
    image = deck_mod._file_image(conn)
    assert image[:16] == b"SQLite format 3\x00"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "c.db").write_bytes(image)
        copy = sqlite3.connect(Path(tmp) / "c.db")
        assert copy.execute("SELECT * FROM t").fetchall() == conn.execute("SELECT * FROM t").fetchall()
        copy.close()
