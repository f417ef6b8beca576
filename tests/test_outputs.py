"""Outputs behave like ordinary files, go where the options say, and carry the sources."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import question_md, write_bank

from ainfra_cards.cli import main

SOURCES = """
---

## 参考资料

- [PyTorch DDP notes](https://docs.pytorch.org/docs/stable/notes/ddp.html) — 分桶与 hook
- [DDP API](https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html) — 默认值
"""
OUTPUTS = ("ainfra-cards.apkg", "ainfra-cards.lock.yaml", "study.html")


def with_sources(text: str) -> str:
    return text.replace("\n---\n\n## 记忆要点", SOURCES + "\n---\n\n## 记忆要点")


def _bank(root: Path, sources: bool = False) -> Path:
    text = question_md(46, "DDP 分桶", ["1. **桶大小默认值**：25 MB", "2. **首桶**：约 1 MB"])
    return write_bank(root / "questions", {"05-数据并行/046-a.md": with_sources(text) if sources else text})


def _build(*args: str) -> None:
    result = CliRunner().invoke(main, ["build", *args])
    assert result.exit_code == 0, result.output


def _study_page(bank: Path, *args: str) -> str:
    """study.html as `ainfra-cards build` writes it beside the bank."""
    _build("--questions", str(bank), *args)
    return (bank.parent / "decks" / "study.html").read_text("utf-8")


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_outputs_get_the_mode_of_any_new_file_or_keep_the_one_they_replace(tmp_path, umask_022):
    bank = _bank(tmp_path)
    _build("--questions", str(bank))
    decks = tmp_path / "decks"
    for name in OUTPUTS:
        assert stat.S_IMODE((decks / name).stat().st_mode) == 0o644, name
    (decks / "study.html").chmod(0o640)
    path = bank / "05-数据并行/046-a.md"
    path.write_text(path.read_text("utf-8").replace("25 MB", "25 MiB"), "utf-8")
    _build("--questions", str(bank))
    assert stat.S_IMODE((decks / "study.html").stat().st_mode) == 0o640
    assert stat.S_IMODE((decks / "ainfra-cards.apkg").stat().st_mode) == 0o644
    assert not list(decks.glob(".*"))  # no temporary file and no build marker lingers


def test_output_elsewhere_leaves_the_repository_untouched(tmp_path):
    bank = _bank(tmp_path / "repo")
    _build("--questions", str(bank))
    decks = tmp_path / "repo" / "decks"
    before = {p.name: p.read_bytes() for p in decks.iterdir()}
    path = bank / "05-数据并行/046-a.md"
    path.write_text(path.read_text("utf-8").replace("约 1 MB", "约 1 MiB"), "utf-8")
    mine = tmp_path / "mine" / "deck.apkg"
    _build("--questions", str(bank), "--output", str(mine))
    assert {p.name: p.read_bytes() for p in decks.iterdir()} == before
    assert sorted(p.name for p in mine.parent.iterdir()) == [
        "CHANGES.md",
        "ainfra-cards.csv",
        "ainfra-cards.lock.yaml",
        "deck.apkg",
        "study.html",
    ]
    # the lock written elsewhere continues the repository's: same GUIDs
    home = (decks / "ainfra-cards.lock.yaml").read_text("utf-8")
    moved = (mine.parent / "ainfra-cards.lock.yaml").read_text("utf-8")
    guids = [line for line in home.splitlines() if line.startswith("- guid:")]
    assert guids and guids == [line for line in moved.splitlines() if line.startswith("- guid:")]


def test_the_original_layouts_branding_file_is_read_and_options_still_win(tmp_path):
    bank = _bank(tmp_path)
    (tmp_path / "study_html_meta.txt").write_text("我的题库\n自测版\n浏览器标签\n", "utf-8")
    page = _study_page(bank)
    assert "<title>浏览器标签</title>" in page and ">我的题库<" in page and "自测版" in page
    (tmp_path / "ainfra-cards.yaml").write_text("study_html:\n  subtitle: 配置文件\n", "utf-8")
    page = _study_page(bank, "--title", "命令行")
    assert ">命令行<" in page and "配置文件" in page and "<title>浏览器标签</title>" in page


def test_the_branding_file_inside_the_bank_folder_is_read_too(tmp_path):
    """The original bank keeps study_html_meta.txt among its module folders; one beside the
    bank folder fills in first."""
    bank = _bank(tmp_path)
    (bank / "study_html_meta.txt").write_text("原题库标题\n原副标题\n原标签\n", "utf-8")
    page = _study_page(bank)
    assert "<title>原标签</title>" in page and ">原题库标题<" in page and "原副标题" in page
    (tmp_path / "study_html_meta.txt").write_text("旁边的标题\n\n\n", "utf-8")
    page = _study_page(bank)
    assert ">旁边的标题<" in page and "原副标题" in page and "<title>原标签</title>" in page


def test_sources_open_in_a_new_tab_in_study_html(tmp_path):
    bank = _bank(tmp_path, sources=True)
    page = _study_page(bank)
    assert (
        '<a href="https://docs.pytorch.org/docs/stable/notes/ddp.html" target="_blank" '
        'rel="noopener noreferrer">PyTorch DDP notes</a>' in page
    )
    assert page.count('target="_blank"') == 2  # only the sources: other external links stay text


@pytest.mark.parametrize("failing", ["ainfra-cards.apkg", "study.html"])
def test_the_lock_is_not_written_when_a_file_it_vouches_for_cannot_be(tmp_path, failing):
    """Files are written by threads beside rendering; the lock comes last and only once every
    other file is in place: a deck or page that cannot be written leaves the lock as it was."""
    bank = _bank(tmp_path)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert CliRunner(env=env).invoke(main, ["build", "--questions", str(bank)]).exit_code == 0
    decks = tmp_path / "decks"
    lock = (decks / "ainfra-cards.lock.yaml").read_bytes()
    page = bank / "05-数据并行/046-a.md"
    page.write_text(page.read_text("utf-8").replace("25 MB", "25 MiB"), "utf-8")
    (decks / failing).unlink()
    (decks / failing).mkdir()  # a folder where the file goes: replacing it fails, even for root
    result = CliRunner(env=env).invoke(main, ["build", "--questions", str(bank)])
    assert result.exit_code == 1
    assert f"cannot write {failing}" in result.output
    assert (decks / "ainfra-cards.lock.yaml").read_bytes() == lock
    (decks / failing).rmdir()
    result = CliRunner(env=env).invoke(main, ["build", "--questions", str(bank)])
    assert result.exit_code == 0, result.output
    assert (decks / "ainfra-cards.lock.yaml").read_bytes() != lock
