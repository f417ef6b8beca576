"""Find and read the files of a bank: module folders, question files, pages, front matter."""

from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import Collector, yaml_problem
from .util import text_key

MODULE_DIR_RE = re.compile(r"^(\d{1,3})-(.+)$")
QUESTION_FILE_RE = re.compile(r"^(\d{1,4})(?:-(.+))?\.md$")
FRONT_MATTER_KEYS = {"tags", "module", "id"}
MAX_FILE_BYTES = 4 * 1024 * 1024  # a question is a few KB; anything this large is a mistake


@dataclass
class SourceFile:
    """One Markdown file, decoded, with its front matter split off."""

    path: PurePosixPath  # relative to the bank root
    abspath: Path
    text: str  # body after the front matter, LF line ends
    body_line: int  # file line number of the body's first line
    front: dict[str, Any] = field(default_factory=dict)
    number: int | None = None  # for question files
    module_dir: str | None = None  # for files inside a module folder
    front_lines: dict[str, int] = field(default_factory=dict)  # front-matter key -> its file line
    source_key: str = ""  # text_key(path, text): names what is cached of this file

    def __post_init__(self) -> None:
        if not self.source_key:
            self.source_key = text_key(str(self.path), self.text)


@dataclass
class Listing:
    """The files of a bank, classified."""

    questions: list[SourceFile]
    pages: list[SourceFile]
    module_dirs: list[str]


def read_source(abspath: Path, rel: str, problems: Collector) -> tuple[bytes, str] | None:
    """A file's bytes, and its text: read as UTF-8 (BOM allowed), line ends normalised; None
    (and the problem reported) when it cannot be read."""
    try:
        size = abspath.stat().st_size
        if size > MAX_FILE_BYTES:
            problems.error(
                rel,
                1,
                f"file is {size / 1e6:.1f} MB; the limit is {MAX_FILE_BYTES // 2**20} MiB "
                "per file: split it or remove what is not a question",
            )
            return None
        raw = abspath.read_bytes()
    except OSError as e:
        problems.error(rel, 1, f"cannot read file: {e.strerror or e}; check its permissions")
        return None
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or _looks_utf16(raw):
        problems.error(
            rel,
            1,
            "the file looks like UTF-16 (a byte-order mark or a NUL byte beside each character); "
            f"re-save it as UTF-8, e.g. `iconv -f UTF-16 -t UTF-8 {rel} > fixed.md`",
        )
        return None
    if b"\x00" in raw:
        problems.error(rel, 1, "binary file (contains NUL bytes); only UTF-8 Markdown belongs here")
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        problems.error(
            rel,
            line,
            f"not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start}); "
            "re-save the file as UTF-8, e.g. `iconv -f GBK -t UTF-8`",
        )
        return None
    return raw, text.replace("\r\n", "\n").replace("\r", "\n")


def _looks_utf16(raw: bytes) -> bool:
    """UTF-16 without a byte-order mark: a NUL in every other byte of the start (ASCII text)."""
    head = raw[:200]
    return len(head) >= 4 and (head[1::2].count(0) > len(head) // 4 or head[0::2].count(0) > len(head) // 4)


def _verbatim(raw: bytes) -> bool:
    """Whether read_source's text is raw decoded as it is (no BOM, no CR): then raw is its
    UTF-8, and hashing raw spares encoding the text again."""
    return not raw.startswith(codecs.BOM_UTF8) and b"\r" not in raw


def split_front_matter(text: str, rel: str, problems: Collector) -> tuple[dict[str, Any], str, int]:
    """Split an optional ``---`` YAML block off the top; return (front, body, body_line)."""
    if not text.startswith("---\n"):
        return {}, text, 1
    end = re.search(r"^---[ \t]*$", text[4:], re.M)
    if end is None or re.search(r"^#{1,6} ", text[4 : 4 + end.start()], re.M):  # ran into the Markdown
        problems.error(
            rel,
            1,
            "front matter is not closed: line 1 opens it with '---' but no '---' line closes it "
            "before the Markdown; add a '---' line after the YAML (or delete line 1 if the file "
            "has no front matter)",
        )
        return {}, text, 1
    block = text[4 : 4 + end.start()]
    body = text[4 + end.end() :].removeprefix("\n")
    body_line = 2 + block.count("\n") + 1
    import yaml  # here: most banks have no front matter, and importing PyYAML costs a build

    try:
        front = yaml.safe_load(block) or {}
    except yaml.YAMLError as e:
        problem = yaml_problem(rel, e, "front matter", first_line=2)  # line 1 is the opening ---
        problems.error(rel, problem.line, problem.message)
        return {}, body, body_line
    if not isinstance(front, dict):
        problems.error(rel, 2, "front matter must be a YAML mapping such as 'tags: [a, b]'")
        return {}, body, body_line
    for key in sorted(set(map(str, front)) - FRONT_MATTER_KEYS):
        problems.warn(rel, 2, f"unknown front matter key '{key}' is ignored (known: id, module, tags)")
    return front, body, body_line


def front_key_lines(text: str, body_line: int) -> dict[str, int]:
    """The file line of each top-level front-matter key, so errors can point at it."""
    lines = text.split("\n")[1 : max(1, body_line - 2)]
    found = (re.match(r"([^\s:#][^:]*?)\s*:", line) for line in lines)
    return {m.group(1): i for i, m in enumerate(found, 2) if m}


def _walk_markdown(root: Path, problems: Collector) -> list[tuple[Path, str]]:
    """Every .md file under root, and its path from root (POSIX), in os.walk's order with names
    sorted; directory links are not followed (out of the bank, or round in a loop).

    os.scandir tells links and folders apart without a stat() per file, as os.walk does."""
    found: list[tuple[Path, str]] = []
    real_root = root.resolve()

    def walk(folder: str, prefix: str) -> None:
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:  # a folder that cannot be listed is skipped, as os.walk skips it
            return
        folders: list[os.DirEntry[str]] = []
        files: list[os.DirEntry[str]] = []
        for entry in entries:
            (folders if _is_dir(entry) else files).append(entry)
        for d in folders:
            if d.is_symlink():
                problems.warn(prefix + d.name, 1, "symbolic link to a folder is not followed")
        for f in files:
            if not f.name.endswith(".md"):
                continue
            rel, p = prefix + f.name, Path(f.path)
            if f.is_symlink():
                try:
                    target = p.resolve(strict=True)
                except (OSError, RuntimeError):
                    problems.error(rel, 1, "broken or looping symbolic link; remove it or point it at a file")
                    continue
                if not target.is_relative_to(real_root):
                    problems.error(
                        rel, 1, "symbolic link points outside the bank folder; copy the file in instead"
                    )
                    continue
            found.append((p, rel))
        for d in folders:
            if not d.is_symlink():
                walk(d.path, f"{prefix}{d.name}/")

    walk(str(root), "")
    return found


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """A folder, or a link to one (as os.walk sorts them); False when that cannot be told."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def list_bank(root: Path, problems: Collector) -> Listing:
    """Classify the bank's Markdown files and read them."""
    if not root.is_dir():
        problems.error(
            str(root),
            0,
            f"no such bank folder (looked in {Path.cwd()}); run ainfra-cards where questions/ is, "
            "or pass --questions DIR",
        )
        return Listing([], [], [])
    questions: list[SourceFile] = []
    pages: list[SourceFile] = []
    module_dirs = sorted(d.name for d in root.iterdir() if d.is_dir() and MODULE_DIR_RE.match(d.name))
    for p, rel_name in _walk_markdown(root, problems):
        rel = PurePosixPath(rel_name)
        kind = _classify(rel, problems)
        if kind is None:
            continue
        read = read_source(p, str(rel), problems)
        if read is None:
            continue
        raw, text = read
        before = len(problems.errors)
        front, body, body_line = split_front_matter(text, str(rel), problems)
        if body is text and len(problems.errors) > before:
            continue  # an unclosed front matter: the rest of the file cannot be read as meant
        src = SourceFile(
            rel,
            p,
            body,
            body_line,
            front,
            front_lines=front_key_lines(text, body_line) if front else {},
            source_key=text_key(str(rel), raw if body is text and _verbatim(raw) else body),
        )
        if kind == "question":
            m = QUESTION_FILE_RE.match(rel.name)
            assert m is not None
            src.number = int(m.group(1))
            src.module_dir = rel.parts[0]
            questions.append(src)
        else:
            pages.append(src)
    return Listing(questions, pages, module_dirs)


def _classify(rel: PurePosixPath, problems: Collector) -> str | None:
    """'question', 'page', or None (reported or ignored)."""
    if rel.name == "README.md" or len(rel.parts) == 1:
        return "page"  # front page, module pages, the guided tour and other root pages
    if len(rel.parts) != 2 or not MODULE_DIR_RE.match(rel.parts[0]):
        problems.warn(str(rel), 1, "not inside a module folder 'NN-名称/'; ignored")
        return None
    if not QUESTION_FILE_RE.match(rel.name):
        problems.error(str(rel), 1, "question file name has no number; rename it 'NNN-slug.md' or 'NNN.md'")
        return None
    return "question"
