"""The command line, through click's CliRunner, on banks written into tmp_path."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from click.testing import CliRunner
from conftest import question_md, write_bank

from ainfra_cards import __version__
from ainfra_cards.cli import main


def small_bank(tmp_path):
    return write_bank(
        tmp_path / "questions",
        {
            "01-基础/001-a.md": question_md(1, "甲题", ["1. **一**：壹", "2. **二**：贰"]),
            "02-进阶/011-b.md": question_md(11, "乙题", ["1. **三**：叁"]),
        },
    )


def run(*args, env=None):
    result = CliRunner().invoke(main, list(args), env={"SOURCE_DATE_EPOCH": "1800000000", **(env or {})})
    return result


def test_help_and_version():
    assert "build" in run("--help").output and "stats" in run("--help").output
    assert "--dry-run" in run("build", "--help").output
    assert __version__ in run("--version").output


def test_build_writes_deck_and_lock_and_reports_per_module(tmp_path):
    bank = small_bank(tmp_path)
    result = run("build", "--questions", str(bank))
    assert result.exit_code == 0, result.output
    assert "01 基础" in result.output and "total" in result.output
    deck, lock = tmp_path / "decks" / "ainfra-cards.apkg", tmp_path / "decks" / "ainfra-cards.lock.yaml"
    assert zipfile.ZipFile(deck).namelist()[0] == "collection.anki2" and lock.is_file()
    assert run("build", "--questions", str(bank), "--check").exit_code == 0
    # editing the bank makes the committed deck stale
    (bank / "01-基础/001-a.md").write_text(
        question_md(1, "甲题", ["1. **一**：壹！", "2. **二**：贰"]), "utf-8"
    )
    stale = run("build", "--questions", str(bank), "--check")
    assert stale.exit_code == 1 and "stale" in stale.output


def test_dry_run_writes_nothing(tmp_path):
    bank = small_bank(tmp_path)
    result = run("build", "--questions", str(bank), "--dry-run")
    assert result.exit_code == 0 and "would write" in result.output
    assert not (tmp_path / "decks").exists()


def test_module_filter_restricts_the_deck_but_not_the_lock(tmp_path):
    bank = small_bank(tmp_path)
    result = run("build", "--questions", str(bank), "--module", "02")
    assert result.exit_code == 0, result.output
    deck = tmp_path / "decks" / "ainfra-cards-02.apkg"
    assert deck.is_file()
    lock = (tmp_path / "decks" / "ainfra-cards.lock.yaml").read_text("utf-8")
    assert lock.count("guid:") == 3
    bad = run("build", "--questions", str(bank), "--module", "07")
    assert bad.exit_code == 1 and "--module 07: no such module" in bad.output


def test_bad_input_names_file_and_line_and_writes_nothing(tmp_path):
    bank = small_bank(tmp_path)
    assert run("build", "--questions", str(bank)).exit_code == 0
    deck = tmp_path / "decks" / "ainfra-cards.apkg"
    before = deck.read_bytes(), (tmp_path / "decks" / "ainfra-cards.lock.yaml").read_bytes()
    (bank / "01-基础/002-c.md").write_text(question_md(2, "丙题", ["1. **四**："]), "utf-8")
    (bank / "02-进阶/011-dup.md").write_text(question_md(11, "重复", ["1. **五**：伍"]), "utf-8")
    (bank / "02-进阶/012-gbk.md").write_bytes(question_md(12, "编码", ["1. **六**：陆"]).encode("gbk"))
    result = run("build", "--questions", str(bank))
    assert result.exit_code == 1
    out = result.output
    assert "01-基础/002-c.md:24: 记忆要点 item 1 has a cue but no answer" in out
    assert "02-进阶/011-dup.md:1: question 11 is also 02-进阶/011-b.md" in out
    assert "02-进阶/012-gbk.md:1: not UTF-8" in out and "iconv" in out
    assert "nothing was written" in out
    assert (deck.read_bytes(), (tmp_path / "decks" / "ainfra-cards.lock.yaml").read_bytes()) == before
    check = run("check", "--questions", str(bank))
    assert check.exit_code == 1 and check.output.count(": ") >= 3 and "3 error(s)" in check.output


def test_stats_counts_questions_and_cards(tmp_path):
    bank = small_bank(tmp_path)
    result = run("stats", "--questions", str(bank))
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[-1].split() == ["total", "2", "3"]


def test_corrupt_or_newer_lock_is_refused_and_kept(tmp_path):
    bank = small_bank(tmp_path)
    lock = tmp_path / "decks" / "ainfra-cards.lock.yaml"
    lock.parent.mkdir()
    for text in (
        "format: 1\nnotes: [\n<<<<<<< HEAD\n",
        "format: 99\nnotes: []\n",
        "format: 1\nnotes:\n- guid: x\n",
    ):
        lock.write_text(text, "utf-8")
        result = run("build", "--questions", str(bank))
        assert result.exit_code == 1 and "ainfra-cards.lock.yaml:" in result.output
        assert lock.read_text("utf-8") == text
        checked = run("check", "--questions", str(bank))
        assert checked.exit_code == 1 and "ainfra-cards.lock.yaml:" in checked.output


def test_build_writes_study_html_and_check_notices_when_it_is_stale(tmp_path):
    bank = small_bank(tmp_path)
    assert run("build", "--questions", str(bank)).exit_code == 0
    study = tmp_path / "decks" / "study.html"
    assert "甲题" in study.read_text("utf-8")
    study.write_text(study.read_text("utf-8").replace("甲题", "旧题"), "utf-8")
    stale = run("build", "--questions", str(bank), "--check")
    assert stale.exit_code == 1 and "study.html: stale" in stale.output
    assert run("build", "--questions", str(bank)).exit_code == 0
    assert run("build", "--questions", str(bank), "--check").exit_code == 0


def test_html_branding_from_config_file_and_options(tmp_path):
    bank = small_bank(tmp_path)
    (tmp_path / "ainfra-cards.yaml").write_text(
        "study_html:\n  title: 我的题库\n  subtitle: 副标题\n  colour: red\n", "utf-8"
    )
    result = run("html", "--questions", str(bank), "--browser-title", "浏览器标题")
    assert result.exit_code == 0, result.output
    assert "unknown study_html key 'colour'" in result.output
    page = (tmp_path / "decks" / "study.html").read_text("utf-8")
    assert "<title>浏览器标题</title>" in page and "我的题库" in page and "副标题" in page
    out = tmp_path / "elsewhere.html"
    assert run("html", "--questions", str(bank), "-o", str(out), "--title", "命令行").exit_code == 0
    assert "命令行" in out.read_text("utf-8")


def test_stats_lists_retired_points_for_learners_who_pulled_the_change(tmp_path):
    bank = small_bank(tmp_path)
    assert run("build", "--questions", str(bank)).exit_code == 0
    (bank / "01-基础/001-a.md").write_text(question_md(1, "甲题", ["1. **一**：壹"]), "utf-8")
    first = run("build", "--questions", str(bank))
    assert 'retired: question 1 item 2 "二"' in first.output
    again = run("build", "--questions", str(bank))  # a learner's build after git pull: nothing new
    assert "retired:" not in again.output
    listed = run("stats", "--questions", str(bank), "--retired")
    assert "1 retired memory point(s) in the lock" in listed.output
    assert 'retired: question 1 item 2 "二"' in listed.output and "tag:AI-Infra::Q001" in listed.output


def test_the_command_reports_and_exits_as_main_does(tmp_path):
    """The command itself in a real process: everything printed arrives, and the exit status
    is main's."""
    import subprocess
    import sys

    bank = small_bank(tmp_path)

    def command(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "ainfra_cards.cli", *args]
        return subprocess.run(
            cmd, capture_output=True, text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c")}
        )

    built = command("build", "--questions", str(bank))
    assert built.returncode == 0, built.stderr
    assert "01 基础" in built.stdout and "total" in built.stdout
    assert zipfile.is_zipfile(tmp_path / "decks" / "ainfra-cards.apkg")
    (bank / "01-基础/001-a.md").write_text("# 第 1 题：甲题\n", "utf-8")
    failed = command("check", "--questions", str(bank))
    assert failed.returncode == 1
    assert "01-基础/001-a.md" in failed.stdout + failed.stderr
    usage = command("build", "--no-such-option")
    assert usage.returncode == 2 and "No such option" in usage.stderr
    assert command("--version").stdout.strip().endswith(__version__)


def test_a_lost_lock_is_said_first_and_derived_cards_are_told_from_new_ones(tmp_path):
    bank = small_bank(tmp_path)
    assert run("build", "--questions", str(bank)).exit_code == 0
    first = run("build", "--questions", str(bank))
    assert "no lock file" not in first.output
    (tmp_path / "decks" / "ainfra-cards.lock.yaml").unlink()
    path = next(bank.rglob("*.md"))
    text = path.read_text("utf-8")
    cue = text.split("1. **")[1].split("**")[0]
    path.write_text(text.replace(f"1. **{cue}**", f"1. **{cue}（改写）**"), "utf-8")
    result = run("build", "--questions", str(bank))
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].startswith("no lock file at ") and "derived from its question number and cue" in lines[0]
    total = sum(
        1 for _ in bank.rglob("*.md") for line in _.read_text("utf-8").splitlines() if line[:1].isdigit()
    )
    assert lines[1] == (
        f"of the {total} cards, {total - 1} are already in {tmp_path / 'decks' / 'ainfra-cards.apkg'} "
        f"under the same GUID (derived); new to it: 1"
    )


def test_outside_a_bank_the_error_names_the_folder_it_looked_in(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("check")
    assert result.exit_code == 1
    assert f"questions:0: no such bank folder (looked in {tmp_path})" in result.output
    assert "--questions DIR" in result.output


def test_a_module_deck_reports_only_its_modules_and_is_ignored_by_git(tmp_path):
    bank = small_bank(tmp_path)
    result = run("build", "--questions", str(bank), "--module", "01")
    assert result.exit_code == 0
    rows = [line.split()[0] for line in result.output.splitlines()[1:] if line[:2].isdigit()]
    assert rows == ["01"], result.output
    ignored = (Path(__file__).resolve().parents[1] / ".gitignore").read_text("utf-8").splitlines()
    assert "decks/ainfra-cards-*.apkg" in ignored
