"""The collection (collection.anki2) inside a deck, written by genanki through its extension
points: a Note and a Model that carry their own modification time instead of the build's."""

from __future__ import annotations

import itertools
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import genanki

from .. import notetype as nt
from ..model import Card

NOTE_ID_BASE = 1000  # note and card ids are the build stamp (seconds) times this, counting up


class TimedModel(genanki.Model):  # type: ignore[misc]
    """The notetype, stamped with the time it last changed (from the lock), not the build's."""

    def __init__(self, mod: int):
        super().__init__(
            nt.NOTETYPE_ID,
            nt.NOTETYPE_NAME,
            fields=[{"name": f} for f in nt.FIELDS],
            templates=nt.templates(),
            css=nt.css(),
            sort_field_index=0,
        )
        self.mod = mod

    def to_json(self, timestamp: float, deck_id: int) -> dict[str, Any]:
        return super().to_json(self.mod, deck_id)  # type: ignore[no-any-return]


class TimedNote(genanki.Note):  # type: ignore[misc]
    """A note (and its cards) stamped with the time its content last changed."""

    def __init__(self, mod: int, suspended: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.mod, self.suspended = mod, suspended

    def write_to_db(self, cursor: Any, timestamp: float, deck_id: int, id_gen: Any) -> None:
        for card in self.cards:
            card.suspend = self.suspended  # a retired card: a new learner's copy arrives suspended
        super().write_to_db(cursor, self.mod, deck_id, id_gen)


def collection_bytes(cards: list[Card], notetype_mod: int, about: str = "") -> bytes:
    """The collection (collection.anki2) of the .apkg for cards, written by genanki.

    Ids count up from the newest time, in deck order, each note followed by its cards; a card's
    due is its note's position in the bank (new cards are studied in bank order).
    """
    model = TimedModel(notetype_mod)
    decks: dict[int, genanki.Deck] = {}
    for position, card in enumerate(cards):
        did = nt.deck_id(card.module.number)
        if did not in decks:
            decks[did] = genanki.Deck(did, nt.deck_name(card.module.label))
        note = TimedNote(
            card.mod,
            card.suspended,
            model=model,
            fields=[card.fields.get(name, "") for name in nt.FIELDS],
            tags=card.tags,
            guid=card.guid,
            due=position,
        )
        decks[did].add_note(note)
    stamp = max([notetype_mod, *(c.mod for c in cards)])
    root = genanki.Deck(nt.ROOT_DECK_ID, nt.ROOT_DECK_NAME, description=about)
    package = genanki.Package([root, *(decks[did] for did in sorted(decks))])
    conn = sqlite3.connect(":memory:")
    try:
        package.write_to_db(conn.cursor(), notetype_mod, itertools.count(stamp * NOTE_ID_BASE))
        conn.commit()
        return _serialize(conn)
    finally:
        conn.close()


def _serialize(conn: sqlite3.Connection) -> bytes:
    """The in-memory database's file image."""
    if hasattr(conn, "serialize"):
        return conn.serialize()
    return _file_image(conn)  # Python 3.10 has no serialize(); only the header's counters differ


def _file_image(conn: sqlite3.Connection) -> bytes:
    """The database copied page by page into a file, and that file's bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "collection.anki2"
        out = sqlite3.connect(db)
        try:
            conn.backup(out)
        finally:
            out.close()
        return db.read_bytes()
