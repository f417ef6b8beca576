"""decks/ainfra-cards.csv through Anki's own CSV import, with the metadata Anki reads from the
file's header lines and no option changed: one note per memory point with the lock's GUIDs,
tags and subdecks; a rebuilt file updates the notes in place."""

from __future__ import annotations

import csv
from pathlib import Path

from anki.import_export_pb2 import ImportCsvRequest
from conftest import Builder, Learner, plain, question_md, write_bank

POINTS = ["1. **桶大小默认值**：25 MB", '2. **首桶**：约 1 MB，见 `bucket_cap_mb`（"首桶"更小）']


def _import(learner: Learner, path: Path):
    metadata = learner.col.get_csv_metadata(str(path), None)  # what Anki's import dialog starts from
    return learner.col.import_csv(ImportCsvRequest(path=str(path), metadata=metadata))


def test_anki_imports_the_csv_and_updates_it_in_place(tmp_path):
    bank = write_bank(
        tmp_path / "questions",
        {
            "05-数据并行/046-a.md": question_md(46, "DDP 分桶", POINTS),
            "08-通信/087-b.md": question_md(87, "all-reduce", ["1. **每卡发送量**：2(N-1)/N·S"]),
        },
    )
    builder = Builder(tmp_path)
    plan = builder.build()
    table = tmp_path / "decks" / "ainfra-cards.csv"
    (tmp_path / "learner").mkdir()
    learner = Learner(tmp_path / "learner" / "collection.anki2")
    try:
        log = _import(learner, table)
        assert len(log.log.new) == 3
        notes = learner.notes()
        assert set(notes) == {n.guid for n in plan.notes}
        for card in plan.cards:
            note = notes[card.guid]
            assert (note["Front"], note["Back"]) == (card.fields["Front"], card.fields["Back"])
            assert set(note.tags) == set(card.tags)
            deck = learner.col.decks.name(learner.card_of(card.guid).did)
            assert deck == f"AI Infra 面经::{card.module.label}"
        learner.study_all()
        first = next(g for g in notes if "桶大小" in notes[g]["Front"])
        card_id = learner.card_of(first).id

        path = bank / "05-数据并行/046-a.md"
        path.write_text(path.read_text("utf-8").replace("25 MB", "25 MiB"), "utf-8")
        builder.build(advance=86400)
        log = _import(learner, table)
        assert len(log.log.new) == 0 and len(log.log.updated) >= 1
        notes = learner.notes()
        assert len(notes) == 3  # updated in place, nothing duplicated
        assert plain(notes[first]["Back"]) == "25 MiB" and learner.card_of(first).id == card_id
        assert learner.reviews(card_id) == 1
    finally:
        learner.close()


def test_the_csv_reads_as_a_table_for_spreadsheets(tmp_path):
    write_bank(tmp_path / "questions", {"05-数据并行/046-a.md": question_md(46, "DDP 分桶", POINTS)})
    plan = Builder(tmp_path).build()
    lines = (tmp_path / "decks" / "ainfra-cards.csv").read_text("utf-8").splitlines()
    header = [line for line in lines if line.startswith("#")]
    assert header[0] == "#separator:tab" and "#if matches:update current" in header
    columns = header[[h.split(":")[0] for h in header].index("#columns")].split(":", 1)[1].split("\t")
    rows = list(csv.reader(lines[len(header) :], delimiter="\t"))
    assert [dict(zip(columns, r, strict=True))["guid"] for r in rows] == [c.guid for c in plan.cards]
    second = dict(zip(columns, rows[1], strict=True))
    assert second["Front"] == "首桶" and '"首桶"更小' in second["Back"] and second["Number"] == "46"
