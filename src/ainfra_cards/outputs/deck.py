"""The Anki package (.apkg): notes with per-note modification times, deterministically.

Anki's importer updates a note only when the package's note is newer than the learner's, and a
notetype only when it is newer. genanki stamps everything with one build time; its extension
points let each note and the notetype carry their own time instead (the time their content last
changed, from the lock), so a re-import updates exactly what changed. Zip entries get a fixed
date, so the same input gives the same package.
"""

from __future__ import annotations

import base64
import binascii
import io
import itertools
import json
import sqlite3
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import notetype as nt
from ..cache import NO_CACHE, Cache
from ..model import Card, Module
from ..util import code_key, digest, library_stamp

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
        return self.start_render(built)()

    def start_render(self, built: Built) -> Callable[[], bytes]:
        """The collection now; zipping it (deflating, most of the time left) when called."""
        collection = collection_bytes(self.cards(built), built.lock.notetype_mod, built.cache)
        media = self.media(built)
        return lambda: _zip(collection, media)

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


def package_bytes(
    cards: list[Card], notetype_mod: int, media: dict[str, Path], cache: Cache = NO_CACHE
) -> bytes:
    """The .apkg for cards: notes and notetype carry their own times."""
    return _zip(collection_bytes(cards, notetype_mod, cache), media)


def collection_bytes(cards: list[Card], notetype_mod: int, cache: Cache = NO_CACHE) -> bytes:
    """The collection (collection.anki2) of the .apkg for cards.

    genanki writes the collection's schema, its decks and the notetype (see _collection); the
    notes and cards are then inserted in two batches, row for row what genanki's Note and Card
    write (one INSERT per row through genanki cost four times as much). Ids count up from the
    newest time, in deck order, each note followed by its cards, as genanki numbers them.
    """
    by_deck: dict[int, list[tuple[int, Card]]] = {}
    names: dict[int, str] = {}
    for position, card in enumerate(cards):
        did = nt.deck_id(card.module.number)
        names.setdefault(did, deck_name(card.module))
        by_deck.setdefault(did, []).append((position, card))
    decks = sorted(names.items())
    stamp = max([notetype_mod, *(c.mod for c in cards)])
    conn, req = _collection(decks, notetype_mod, cache)
    try:
        ids = itertools.count(stamp * NOTE_ID_BASE)
        note_cards: list[tuple[Any, ...]] = []

        def notes() -> Iterator[tuple[Any, ...]]:  # made one by one: the joined fields are most of a deck
            for did, _ in decks:
                for position, card in by_deck[did]:
                    fields = [card.fields.get(name, "") for name in nt.FIELDS]
                    nid = next(ids)
                    flds = "\x1f".join(fields)
                    note_cards.extend(
                        (next(ids), nid, did, ord_, card.mod, -1, 0, 0, position, 0, 0, 0, 0, 0, 0, 0, 0, "")
                        for ord_ in _card_ords(req, fields)
                    )
                    yield (
                        nid,
                        card.guid,
                        nt.NOTETYPE_ID,
                        card.mod,
                        -1,
                        _tags(card.tags),
                        flds,
                        fields[0],
                        0,
                        0,
                        "",
                    )

        cursor = conn.cursor()
        cursor.executemany(f"INSERT INTO notes VALUES({','.join('?' * 11)})", notes())
        cursor.executemany(f"INSERT INTO cards VALUES({','.join('?' * 18)})", note_cards)
        conn.commit()
        return _serialize(conn)
    finally:
        conn.close()


Req = list[tuple[int, str, list[int]]]  # genanki's `req`: per template, which fields make a card


def _collection(
    decks: list[tuple[int, str]], notetype_mod: int, cache: Cache
) -> tuple[sqlite3.Connection, Req]:
    """A database holding the collection before any note: schema, decks and notetype, as
    genanki writes them; and the notetype's `req`.

    That much depends only on the decks, the notetype and genanki, so its image is kept in the
    cache: a rebuild neither imports genanki nor runs it. Both ways the notes go into a copy
    loaded from the image (the header's counters then come out the same).
    """
    conn = sqlite3.connect(":memory:")
    if not hasattr(conn, "deserialize"):  # Python 3.10: no image to load; genanki writes each time
        return conn, _genanki_collection(conn, decks, notetype_mod)
    key = digest(
        "collection",
        code_key("outputs/deck.py", "notetype.py"),
        library_stamp("genanki"),
        sqlite3.sqlite_version,
        nt.notetype_digest(),
        notetype_mod,
        decks,
    )
    cached = _cached_collection(cache.get("collection", key))
    if cached is None:
        cached = _collection_image(decks, notetype_mod)
        image, req = cached
        cache.put(
            "collection",
            key,
            {"image": base64.b64encode(image).decode(), "crc": zlib.crc32(image), "req": req},
        )
    image, req = cached
    conn.deserialize(image)  # type: ignore[attr-defined]
    return conn, req


def _cached_collection(hit: Any) -> tuple[bytes, Req] | None:
    """The image and req of a cache entry; None for anything else (a damaged entry is a miss)."""
    try:
        image = base64.b64decode(hit["image"], validate=True)
        req = _plain_req(hit["req"])
    except (TypeError, KeyError, ValueError, binascii.Error):
        return None
    return (image, req) if zlib.crc32(image) == hit.get("crc") else None


def _collection_image(decks: list[tuple[int, str]], notetype_mod: int) -> tuple[bytes, Req]:
    """The file image of the collection genanki writes before any note, and the notetype's req."""
    conn = sqlite3.connect(":memory:")
    try:
        req = _genanki_collection(conn, decks, notetype_mod)
        conn.commit()
        return conn.serialize(), req  # type: ignore[attr-defined]
    finally:
        conn.close()


def _plain_req(req: Any) -> Req:
    return [(int(o), str(how), [int(i) for i in fields]) for o, how, fields in req]


def genanki_model(notetype_mod: int) -> Any:
    """The notetype as a genanki Model that carries its own modification time, not the build's."""
    import genanki  # only a deck whose collection is not in the cache needs it

    class TimedModel(genanki.Model):  # type: ignore[misc]
        def to_json(self, timestamp: float, deck_id: int) -> dict[str, Any]:
            return super().to_json(notetype_mod, deck_id)

    return TimedModel(
        nt.NOTETYPE_ID,
        nt.NOTETYPE_NAME,
        fields=[{"name": f} for f in nt.FIELDS],
        templates=nt.templates(),
        css=nt.css(),
        sort_field_index=0,
    )


def _genanki_collection(conn: sqlite3.Connection, decks: list[tuple[int, str]], notetype_mod: int) -> Req:
    import genanki

    model = genanki_model(notetype_mod)
    module_decks = []
    for did, name in decks:
        module_decks.append(genanki.Deck(did, name))
        module_decks[-1].add_model(model)  # as genanki does for a deck that holds the model's notes
    root = genanki.Deck(nt.ROOT_DECK_ID, nt.ROOT_DECK_NAME)
    genanki.Package([root, *module_decks]).write_to_db(conn.cursor(), notetype_mod, itertools.count())
    return _plain_req(model._req)


def _tags(tags: list[str]) -> str:
    """A note's tags as genanki writes them (and as it refuses them: none may hold a space)."""
    for tag in tags:
        if " " in tag:
            raise ValueError(f"tag {tag!r} contains a space")
    return " " + " ".join(tags) + " "


def _card_ords(req: Req, fields: list[str]) -> list[int]:
    """The templates that make a card for these fields: genanki's rule (the notetype's `req`)."""
    return [
        ord_ for ord_, how, required in req if (any if how == "any" else all)(fields[i] for i in required)
    ]


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
