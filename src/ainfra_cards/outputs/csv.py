"""decks/ainfra-cards.csv: every note as one row, for Anki's own text import and for spreadsheets.

The header lines are Anki's text-import file headers (rslib/src/import_export/text/csv/
metadata.rs): tab-separated, HTML fields, the stock "Basic" notetype (every Anki has it), the
GUID, deck and tags columns, and "if matches: update current". So Anki's CSV import with no
option changed gives one Basic note per memory point with the lock's GUID, its tags and its
module's subdeck, and importing a rebuilt file updates those notes in place. The other columns
(number, title, module, source file, sources) are for spreadsheets; Anki leaves them unmapped.
A learner uses either this file or the .apkg (whose notes have their own notetype), not both.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import notetype as nt
from ..util import digest
from . import same_bytes

if TYPE_CHECKING:
    from ..plan import Plan

COLUMNS = ["guid", "Front", "Back", "deck", "tags", "Number", "Title", "Module", "Source", "Extra"]
HEADER = (
    "#separator:tab\n"
    "#html:true\n"
    "#notetype:Basic\n"
    "#columns:" + "\t".join(COLUMNS) + "\n"
    f"#guid column:{COLUMNS.index('guid') + 1}\n"
    f"#deck column:{COLUMNS.index('deck') + 1}\n"
    f"#tags column:{COLUMNS.index('tags') + 1}\n"
    "#if matches:update current\n"
)


@dataclass
class CsvOutput:
    path: Path

    def fingerprint(self, plan: Plan) -> str:
        """As the deck's: each note's GUID, time and content digest (no field is rendered)."""
        notes = [(n.guid, n.mod, plan.content[n.guid]) for n in plan.notes]
        retired = [(c.guid, c.mod, c.fields) for c in plan.retired_cards]
        return digest("csv", notes, retired)

    def render(self, plan: Plan) -> bytes:
        out = io.StringIO()
        out.write(HEADER)
        writer = csv.writer(out, delimiter="\t", lineterminator="\n")
        for card in plan.cards:
            fields = card.fields
            writer.writerow(
                [
                    card.guid,
                    fields["Front"],
                    fields["Back"],
                    nt.deck_name(card.module.label),
                    " ".join(card.tags),
                    fields["Number"],
                    fields["Title"],
                    fields["Module"],
                    fields["Source"],
                    fields["Extra"],
                ]
            )
        return out.getvalue().encode("utf-8")

    def is_current(self, plan: Plan) -> bool:
        return same_bytes(self.path, self.render(plan))
