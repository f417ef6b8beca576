"""Write Cards into an Anki package (.apkg) with per-note modification times, deterministically.

genanki stamps every note, card and notetype with one build time. Anki's importer updates a note
only when the package's note is newer than the learner's, and a notetype only when it is newer,
so one build time would either rewrite every note on every import or (fixed) never deliver a
fix. We let genanki write the collection, then set each note's and the notetype's time from the
lock, and zip it with fixed entry dates so that the same input gives the same bytes.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import tempfile
import zipfile
from pathlib import Path

import genanki

from . import notetype as nt
from .model import Card, Module

ZIP_DATE = (2020, 1, 1, 0, 0, 0)


def make_model() -> genanki.Model:
    return genanki.Model(
        nt.NOTETYPE_ID,
        nt.NOTETYPE_NAME,
        fields=[{"name": f} for f in nt.FIELDS],
        templates=nt.templates(),
        css=nt.css(),
        sort_field_index=0,
    )


def deck_name(module: Module) -> str:
    return f"{nt.ROOT_DECK_NAME}::{module.label}"


def write_apkg(
    cards: list[Card], notetype_mod: int, path: Path, media: dict[str, Path] | None = None
) -> None:
    """Write cards to path (which should be a temporary file: the caller renames it into place)."""
    model = make_model()
    decks: dict[Module, genanki.Deck] = {}
    root = genanki.Deck(nt.ROOT_DECK_ID, nt.ROOT_DECK_NAME)
    for position, card in enumerate(cards):
        deck = decks.get(card.module)
        if deck is None:
            deck = decks[card.module] = genanki.Deck(nt.deck_id(card.module.number), deck_name(card.module))
        fields = [card.fields.get(name, "") for name in nt.FIELDS]
        deck.add_note(genanki.Note(model=model, fields=fields, tags=card.tags, guid=card.guid, due=position))
    package = genanki.Package([root, *sorted(decks.values(), key=lambda d: d.deck_id)])
    package.media_files = [str(p) for _, p in sorted((media or {}).items())]
    stamp = max([notetype_mod, *(c.mod for c in cards)])
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "collection.anki2"
        conn = sqlite3.connect(db)
        try:
            package.write_to_db(conn.cursor(), stamp, itertools.count(stamp * 1000))
            _set_times(conn, cards, notetype_mod)
            conn.commit()
        finally:
            conn.close()
        _zip(path, db, media or {})


def _set_times(conn: sqlite3.Connection, cards: list[Card], notetype_mod: int) -> None:
    """Give each note and its cards the time its content last changed; the notetype its own."""
    conn.execute("CREATE INDEX ix_aic_guid ON notes (guid)")  # dropped again: not part of the package
    conn.executemany("UPDATE notes SET mod = ? WHERE guid = ?", [(c.mod, c.guid) for c in cards])
    conn.execute("DROP INDEX ix_aic_guid")
    conn.execute("UPDATE cards SET mod = (SELECT mod FROM notes WHERE notes.id = cards.nid)")
    (models_json,) = conn.execute("SELECT models FROM col").fetchone()
    models = json.loads(models_json)
    for m in models.values():
        m["mod"] = notetype_mod
    conn.execute("UPDATE col SET models = ?, mod = ?", (json.dumps(models, sort_keys=True), notetype_mod))


def _zip(path: Path, db: Path, media: dict[str, Path]) -> None:
    names = sorted(media)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        _add(z, "collection.anki2", db.read_bytes())
        _add(z, "media", json.dumps({str(i): name for i, name in enumerate(names)}).encode())
        for i, name in enumerate(names):
            _add(z, str(i), media[name].read_bytes())


def _add(z: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def apkg_summary(path: Path) -> dict:
    """What a package holds, in a form two builds can be compared by (for build --check)."""
    with zipfile.ZipFile(path) as z, tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.anki2"
        db.write_bytes(z.read("collection.anki2"))
        media = json.loads(z.read("media"))
        media_bytes = {name: z.read(i) for i, name in media.items()}
        conn = sqlite3.connect(db)
        try:
            notes = conn.execute("SELECT guid, mid, mod, tags, flds FROM notes ORDER BY guid").fetchall()
            cards = conn.execute(
                "SELECT n.guid, c.did, c.ord FROM cards c JOIN notes n ON n.id = c.nid ORDER BY n.guid, c.ord"
            ).fetchall()
            models, decks = conn.execute("SELECT models, decks FROM col").fetchone()
        finally:
            conn.close()
    models = {k: {f: v for f, v in m.items() if f not in ("usn",)} for k, m in json.loads(models).items()}
    deck_names = sorted((k, d["name"]) for k, d in json.loads(decks).items())
    return {"notes": notes, "cards": cards, "models": models, "decks": deck_names, "media": media_bytes}
