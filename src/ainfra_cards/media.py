"""Images referenced from questions: validated against the bank folder, named for Anki.

A question may show a diagram that lives beside it (``![图](img/ring.png)``). The image must
resolve to a file inside the bank folder: absolute paths, ``..`` escapes, symbolic links that
point out of the bank and remote URLs are refused (a build never fetches anything).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

from .errors import Collector
from .markup import mask_code

IMAGE_RE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")
IMAGE_TYPES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"}
MAX_IMAGE_BYTES = 2 * 1024 * 1024


def find_images(
    markdown: str, source: Path, bank_root: Path, rel: str, first_line: int, problems: Collector
) -> dict[str, Path]:
    """Map each image reference in markdown (outside code) to its file; report bad ones."""
    found: dict[str, Path] = {}
    if "![" not in markdown:  # the common case: no image at all
        return found
    text = mask_code(markdown)
    for m in IMAGE_RE.finditer(text):
        ref = m.group(1)
        line = first_line + text.count("\n", 0, m.start())
        path = _resolve(ref, source, bank_root, rel, line, problems)
        if path is not None:
            found[ref] = path
    return found


def _resolve(ref: str, source: Path, root: Path, rel: str, line: int, problems: Collector) -> Path | None:
    if _SCHEME_RE.match(ref):
        problems.error(
            rel,
            line,
            f"image {ref!r} is remote; images are never fetched: save it beside "
            "the question and reference it relatively",
        )
        return None
    if ref.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", ref):
        problems.error(rel, line, f"image {ref!r} is an absolute path; reference it relative to the question")
        return None
    target = (source.parent / ref).resolve()
    if not target.is_relative_to(root.resolve()):
        problems.error(rel, line, f"image {ref!r} points outside the bank folder; keep images inside it")
        return None
    if not target.is_file():
        problems.error(rel, line, f"image {ref!r} not found (looked for {target})")
        return None
    if target.suffix.lower() not in IMAGE_TYPES:
        problems.error(rel, line, f"image {ref!r} is not a picture ({', '.join(sorted(IMAGE_TYPES))})")
        return None
    if target.stat().st_size > MAX_IMAGE_BYTES:
        problems.error(rel, line, f"image {ref!r} is over {MAX_IMAGE_BYTES // 2**20} MiB; shrink it")
        return None
    return target


def anki_name(path: Path) -> str:
    """A media file name that cannot collide: our prefix plus a hash of the bytes."""
    st = path.stat()
    return _anki_name(path, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=4096)
def _anki_name(path: Path, size: int, mtime_ns: int) -> str:
    """Keyed by size and modification time too, so a changed file is hashed again."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return f"ainfra-cards-{digest}{path.suffix.lower()}"


def data_uri(path: Path) -> str:
    """The image inline, for study.html."""
    import base64
    import mimetypes

    mime = mimetypes.types_map.get(path.suffix.lower(), "image/png")
    if path.suffix.lower() == ".svg":
        mime = "image/svg+xml"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"
