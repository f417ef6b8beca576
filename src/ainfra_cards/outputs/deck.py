"""The Anki package (.apkg): notes with per-note modification times, deterministically.

Anki's importer updates a note only when the package's note is newer than the learner's, and a
notetype only when it is newer. genanki stamps everything with one build time; its extension
points let each note and the notetype carry their own time instead (the time their content last
changed, from the lock), so a re-import updates exactly what changed. Zip entries get a fixed
date, so the same input gives the same package.
"""

from __future__ import annotations

import io
import itertools
import json
import sqlite3
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import notetype as nt
from ..model import Card, Module
from ..util import digest

if TYPE_CHECKING:
    from ..build import Built

ZIP_DATE = (2020, 1, 1, 0, 0, 0)  # every zip entry's date: fixed, so equal input gives equal bytes
ZIP_LEVEL = 3  # zlib's fast mode: the collection deflates 2.4x faster than at the default 6, 11% larger
NOTE_ID_BASE = 1000  # note and card ids are the build stamp (seconds) times this, counting up


@dataclass
class DeckOutput:
    """The deck of the selected modules (all when none are selected)."""

    path: Path
    modules: list[Module] = field(default_factory=list)

    def selected(self, module: Module) -> bool:
        return not self.modules or module in self.modules

    def cards(self, built: Built) -> list[Card]:
        return [c for c in built.cards if self.selected(c.module)]

    def media(self, built: Built) -> dict[str, Path]:
        """Anki media name -> file, for the images these cards show."""
        used = "".join(
            v
            for c in self.cards(built)
            for v in (c.fields["Front"], c.fields["Back"], c.fields["Context"], c.fields["Prompt"])
        )
        return {name: path for name, path in built.media.items() if name in used}

    def fingerprint(self, built: Built) -> str:
        """Each note's GUID, time and content digest, and the images: no field is rendered."""
        notes = [
            (n.guid, n.mod, built.content[n.guid]) for n in built.notes if self.selected(n.question.module)
        ]
        questions = [q for q in built.bank.questions if self.selected(q.module)]
        images = sorted({name for q in questions for name in built.media_names(q)})
        return digest("deck", built.lock.notetype_mod, nt.notetype_digest(), notes, images)

    def render(self, built: Built) -> bytes:
        return package_bytes(self.cards(built), built.lock.notetype_mod, self.media(built))

    def is_current(self, built: Built) -> bool:
        if not self.path.is_file():
            return False
        try:
            on_disk = apkg_summary(self.path.read_bytes())
        except (OSError, KeyError, ValueError, zipfile.BadZipFile, sqlite3.DatabaseError):
            return False  # an unreadable committed deck is as stale as it gets
        return on_disk == apkg_summary(self.render(built))


def deck_name(module: Module) -> str:
    return f"{nt.ROOT_DECK_NAME}::{module.label}"


def package_bytes(cards: list[Card], notetype_mod: int, media: dict[str, Path]) -> bytes:
    """The .apkg for cards: genanki writes the collection; notes and notetype carry their times."""
    import genanki  # only a build that writes a deck needs it

    class TimedModel(genanki.Model):  # type: ignore[misc]
        def to_json(self, timestamp: float, deck_id: int) -> dict[str, Any]:
            return super().to_json(notetype_mod, deck_id)

    class TimedNote(genanki.Note):  # type: ignore[misc]
        def __init__(self, mod: int, **kwargs: Any):
            super().__init__(**kwargs)
            self.mod = mod

        def write_to_db(self, cursor, timestamp, deck_id, id_gen):  # type: ignore[no-untyped-def]
            super().write_to_db(cursor, self.mod, deck_id, id_gen)  # the note's own time, and its cards'

        def _check_invalid_html_tags_in_fields(self) -> None:
            pass  # genanki's warning about stray tags; every field was sanitised by nh3 already

    model = TimedModel(
        nt.NOTETYPE_ID,
        nt.NOTETYPE_NAME,
        fields=[{"name": f} for f in nt.FIELDS],
        templates=nt.templates(),
        css=nt.css(),
        sort_field_index=0,
    )
    decks: dict[Module, genanki.Deck] = {}
    for position, card in enumerate(cards):
        deck = decks.get(card.module)
        if deck is None:
            deck = decks[card.module] = genanki.Deck(nt.deck_id(card.module.number), deck_name(card.module))
        fields = [card.fields.get(name, "") for name in nt.FIELDS]
        deck.add_note(
            TimedNote(card.mod, model=model, fields=fields, tags=card.tags, guid=card.guid, due=position)
        )
    root = genanki.Deck(nt.ROOT_DECK_ID, nt.ROOT_DECK_NAME)
    package = genanki.Package([root, *sorted(decks.values(), key=lambda d: d.deck_id)])
    stamp = max([notetype_mod, *(c.mod for c in cards)])
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "collection.anki2"
        conn = sqlite3.connect(db)
        try:
            package.write_to_db(conn.cursor(), stamp, itertools.count(stamp * NOTE_ID_BASE))
            conn.commit()
        finally:
            conn.close()
        return _zip(db.read_bytes(), media)


def _zip(collection: bytes, media: dict[str, Path]) -> bytes:
    names = sorted(media)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as z:
        _add(z, "collection.anki2", collection)
        _add(z, "media", json.dumps({str(i): name for i, name in enumerate(names)}).encode())
        for i, name in enumerate(names):
            _add(z, str(i), media[name].read_bytes())
    return buffer.getvalue()


def _add(z: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data, compresslevel=ZIP_LEVEL)


def apkg_summary(package: bytes) -> dict[str, Any]:
    """What a package holds, in a form two builds can be compared by (for build --check)."""
    with zipfile.ZipFile(io.BytesIO(package)) as z, tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.anki2"
        db.write_bytes(z.read("collection.anki2"))
        media = json.loads(z.read("media"))
        media_bytes = {name: z.read(i) for i, name in media.items()}
        conn = sqlite3.connect(db)
        try:
            notes = conn.execute("SELECT guid, mid, mod, tags, flds FROM notes ORDER BY guid").fetchall()
            cards = conn.execute(
                "SELECT n.guid, c.did, c.ord, c.mod FROM cards c JOIN notes n ON n.id = c.nid"
                " ORDER BY n.guid, c.ord"
            ).fetchall()
            models, decks = conn.execute("SELECT models, decks FROM col").fetchone()
        finally:
            conn.close()
    models = {k: {f: v for f, v in m.items() if f not in ("usn",)} for k, m in json.loads(models).items()}
    deck_names = sorted((k, d["name"]) for k, d in json.loads(decks).items())
    return {"notes": notes, "cards": cards, "models": models, "decks": deck_names, "media": media_bytes}
