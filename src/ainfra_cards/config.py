"""Optional project configuration: ``ainfra-cards.yaml`` beside the bank folder.

Only study.html's branding is configurable::

    study_html:
      title: AI Infra 面经
      subtitle: 305 题 · 自测版
      browser_title: AI Infra 面经

Command-line options override the file; the file overrides the defaults (the bank's front page).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .errors import CardsError, Collector, Problem
from .htmlpage import Branding

CONFIG_FILE = "ainfra-cards.yaml"
_STUDY_KEYS = {"title", "subtitle", "browser_title"}


def load_branding(questions: Path, problems: Collector) -> Branding:
    """Branding from the config file beside the bank, if there is one."""
    path = questions.resolve().parent / CONFIG_FILE
    if not path.is_file():
        return Branding()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        mark = getattr(e, "problem_mark", None)
        raise CardsError(Problem(str(path), mark.line + 1 if mark else 1, f"cannot read config: {e}")) from e
    if not isinstance(data, dict):
        raise CardsError(Problem(str(path), 1, "config must be a YAML mapping with a 'study_html' key"))
    for key in sorted(set(data) - {"study_html"}):
        problems.warn(str(path), 1, f"unknown config key '{key}' is ignored (known: study_html)")
    study = data.get("study_html") or {}
    if not isinstance(study, dict):
        raise CardsError(
            Problem(str(path), 1, "'study_html' must be a mapping of title, subtitle, browser_title")
        )
    for key in sorted(set(study) - _STUDY_KEYS):
        problems.warn(
            str(path),
            1,
            f"unknown study_html key '{key}' is ignored (known: {', '.join(sorted(_STUDY_KEYS))})",
        )
    return Branding(
        *(None if study.get(k) is None else str(study[k]) for k in ("title", "subtitle", "browser_title"))
    )


def merge(base: Branding, title: str | None, subtitle: str | None, browser_title: str | None) -> Branding:
    """Options given on the command line win over the config file."""
    return Branding(
        title if title is not None else base.title,
        subtitle if subtitle is not None else base.subtitle,
        browser_title if browser_title is not None else base.browser_title,
    )
