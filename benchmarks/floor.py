#!/usr/bin/env python3
"""The floors a build is measured against (run as separate processes by bench.py).

usage: floor.py package NOTES.json OUT.apkg
       floor.py markdown NOTES.json OUT.apkg BANK_DIR

`package` only packages the given notes with genanki: the least any build that writes a deck
can cost. `markdown` first runs one Python-Markdown pass (fenced_code, tables, codehilite) over
every question file of the bank, then packages: the least a build that renders can cost.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def package(notes_file: str, out: str) -> None:
    import genanki

    data = json.loads(Path(notes_file).read_text(encoding="utf-8"))
    model = genanki.Model(
        data["model_id"],
        "floor",
        fields=[{"name": f} for f in data["fields"]],
        templates=[{"name": "c", "qfmt": "{{Front}}", "afmt": "{{Back}}"}],
    )
    decks: dict[int, genanki.Deck] = {}
    for n in data["notes"]:
        deck = decks.setdefault(n["deck_id"], genanki.Deck(n["deck_id"], n["deck"]))
        deck.add_note(genanki.Note(model=model, fields=n["fields"], tags=n["tags"], guid=n["guid"]))
    genanki.Package(list(decks.values())).write_to_file(out)


def markdown_pass(bank: str) -> None:
    import markdown

    md = markdown.Markdown(extensions=["fenced_code", "tables", "codehilite"])
    for path in sorted(Path(bank).glob("*/*.md")):
        md.reset()
        md.convert(path.read_text(encoding="utf-8"))


if __name__ == "__main__":
    kind, notes, out = sys.argv[1:4]
    if kind == "markdown":
        markdown_pass(sys.argv[4])
    package(notes, out)
