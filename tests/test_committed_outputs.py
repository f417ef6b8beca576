"""The deck, lock and study.html committed in decks/ are what the bundled bank builds to."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ainfra_cards.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_committed_deck_lock_and_study_html_are_current():
    result = CliRunner().invoke(main, ["build", "--questions", str(REPO / "questions"), "--check"])
    assert result.exit_code == 0, f"run `ainfra-cards build` and commit decks/:\n{result.output}"
    assert "up to date" in result.output
