"""Project configuration: what study.html calls itself, from the files beside the bank.

Each setting is taken from the first of these that gives it:

1. a command-line option (``--title``, ``--subtitle``, ``--browser-title``);
2. ``ainfra-cards.yaml`` beside the bank folder::

       study_html:
         title: AI Infra 面经
         subtitle: 305 题 · 自测版
         browser_title: AI Infra 面经

3. ``study_html_meta.txt`` beside the bank folder, the original layout's branding file: three
   lines, the page title, the subtitle and the browser-tab title (an empty line means "not set");
   then the same file inside the bank folder, where the original bank keeps it;
4. the defaults: the bank's front-page title, and question and card counts as the subtitle.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from .errors import CardsError, Collector, Problem, yaml_problem

CONFIG_FILE = "ainfra-cards.yaml"
META_FILE = "study_html_meta.txt"


@dataclass(frozen=True)
class Branding:
    """What study.html calls itself; a field left None falls through to the next source."""

    title: str | None = None
    subtitle: str | None = None
    browser_title: str | None = None

    def over(self, base: Branding) -> Branding:
        """This branding, with base filling in what it leaves unset."""
        return Branding(
            *(
                getattr(self, f.name) if getattr(self, f.name) is not None else getattr(base, f.name)
                for f in fields(self)
            )
        )


_KEYS = tuple(f.name for f in fields(Branding))


def load_branding(questions: Path, problems: Collector, options: Branding = Branding()) -> Branding:
    """Options over ainfra-cards.yaml over study_html_meta.txt (defaults are filled in later)."""
    folder = questions.resolve().parent
    branding = options.over(_from_config(folder / CONFIG_FILE, problems)).over(_from_meta(folder / META_FILE))
    return branding.over(_from_meta(questions / META_FILE))


def _from_meta(path: Path) -> Branding:
    if not path.is_file():
        return Branding()
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise CardsError(
            Problem(str(path), 1, f"cannot read branding file: {e}; it must be UTF-8 text")
        ) from e
    values = [line.strip() or None for line in lines[: len(_KEYS)]]
    return Branding(*values)


def _from_config(path: Path, problems: Collector) -> Branding:
    if not path.is_file():
        return Branding()
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError) as e:
        raise CardsError(Problem(str(path), 1, f"cannot read config: {e}")) from e
    except yaml.YAMLError as e:
        raise CardsError(yaml_problem(str(path), e, "config")) from e
    if not isinstance(data, dict):
        raise CardsError(Problem(str(path), 1, "config must be a YAML mapping with a 'study_html' key"))
    for key in sorted(set(data) - {"study_html"}):
        problems.warn(str(path), 1, f"unknown config key '{key}' is ignored (known: study_html)")
    study = data.get("study_html") or {}
    if not isinstance(study, dict):
        raise CardsError(
            Problem(str(path), 1, "'study_html' must be a mapping of title, subtitle, browser_title")
        )
    for key in sorted(set(study) - set(_KEYS)):
        problems.warn(
            str(path), 1, f"unknown study_html key '{key}' is ignored (known: {', '.join(sorted(_KEYS))})"
        )
    return Branding(*(None if study.get(k) is None else str(study[k]) for k in _KEYS))
