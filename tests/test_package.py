"""The .apkg's collection, as genanki writes it through the Note and Model this tool extends:
per-note times, ids and due order (real-Anki behaviour is in test_anki_roundtrip.py)."""

from __future__ import annotations

import io
import json
import sqlite3
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import question_md, write_bank

from ainfra_cards import notetype as nt
from ainfra_cards.build import Paths, plan
from ainfra_cards.outputs import collection as deck_mod
from ainfra_cards.outputs.collection import NOTE_ID_BASE
from ainfra_cards.outputs.deck import package_bytes

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


def test_notes_cards_and_notetype_carry_their_own_times(built):
    """Each note and its cards carry the time their content last changed; the notetype, its own."""
    from dataclasses import replace

    cards = [replace(c, mod=1_700_000_000 + 3600 * i) for i, c in enumerate(built.cards)]
    rows = _rows(_collection_of(package_bytes(cards, 1_600_000_000, {})))
    by_id = {n[0]: n for n in rows["notes"]}
    assert sorted(n[3] for n in rows["notes"]) == sorted(c.mod for c in cards)
    assert {n[1]: n[3] for n in rows["notes"]} == {c.guid: c.mod for c in cards}
    assert all(card[4] == by_id[card[1]][3] for card in rows["cards"])
    newest = max(c.mod for c in cards)
    assert min(by_id) == newest * NOTE_ID_BASE  # ids count up from the newest time
    models = json.loads(rows["col"][0][9])
    assert [m["mod"] for m in models.values()] == [1_600_000_000]


def test_cards_are_due_in_bank_order_in_their_module_decks(built):
    cards = built.cards
    rows = _rows(_collection_of(package_bytes(cards, 1_600_000_000, {})))
    guid_of = {n[0]: n[1] for n in rows["notes"]}
    due = {guid_of[c[1]]: (c[2], c[8]) for c in rows["cards"]}
    assert due == {c.guid: (nt.deck_id(c.module.number), i) for i, c in enumerate(cards)}


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
