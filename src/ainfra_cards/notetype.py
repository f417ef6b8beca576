"""The notetype and decks every deck of this tool uses. Their identity is frozen.

Anki matches an imported notetype by ID and refuses to update notes whose notetype's fields or
templates no longer match the learner's copy (they become "conflicting" and silently stop
updating). So FIELDS is fixed from the first release: never rename, reorder or remove a field;
only the templates' HTML and the CSS may change, and a change moves the notetype's modification
time (see ids.next_lock) so that the importer takes it.
"""

from __future__ import annotations

from .util import digest, static_text

# Frozen: Anki keys the notetype by this ID. A new ID would import as a second notetype and
# every re-imported note would be duplicated instead of updated.
NOTETYPE_ID = 1764520531007
NOTETYPE_NAME = "AI Infra 面经 (ainfra-cards)"
# Frozen: the root deck and module subdecks. Module N's subdeck is ROOT_DECK_ID + N.
ROOT_DECK_ID = 1764520531100
ROOT_DECK_NAME = "AI Infra 面经"
TAG_ROOT = "AI-Infra"

# Frozen, in this order (see the module docstring). Extra is reserved for future use, so a new
# kind of content never needs a new field.
FIELDS = ["Front", "Back", "Number", "Title", "Module", "Source", "Context", "Prompt", "Extra"]
TEMPLATE_NAME = "记忆要点"


def deck_id(module_number: int) -> int:
    return ROOT_DECK_ID + module_number


def deck_name(label: str) -> str:
    """A module's subdeck, from its label (``05 数据并行``)."""
    return f"{ROOT_DECK_NAME}::{label}"


def css() -> str:
    return "\n".join(static_text(n) for n in ("card.css", "pygments-light.css", "pygments-dark.css"))


def templates() -> list[dict[str, str]]:
    return [{"name": TEMPLATE_NAME, "qfmt": static_text("front.html"), "afmt": static_text("back.html")}]


def notetype_digest() -> str:
    """Changes exactly when the notetype's fields, templates or CSS change."""
    return digest(FIELDS, templates(), css())
