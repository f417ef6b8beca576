"""decks/CHANGES.md: what each version of the bank added, revised and retired (history.py).

The same text is what `ainfra-cards changes` prints. Made from the plan's next lock alone, so it
always agrees with the deck: a card listed as revised in a version carries that version's
`AI-Infra::revised::<version>` tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..history import Release, changelog
from ..lockfile import LockEntry
from ..util import digest
from . import same_bytes

if TYPE_CHECKING:
    from ..plan import Plan

HEADER = (
    "# 更新记录 / Changes\n\n"
    "由 `ainfra-cards build` 生成，请勿手改。版本号是增加、改写或退役卡片的那次构建的日期（UTC）。\n"
    "在 Anki 里搜索 `tag:AI-Infra::revised::<版本>` 找到该版修订的卡片，\n"
    "`tag:AI-Infra::retired` 找到已退役的卡片。\n"
)


@dataclass
class ChangesOutput:
    path: Path

    def fingerprint(self, plan: Plan) -> str:
        return digest("changes", changes_text(plan))

    def render(self, plan: Plan) -> bytes:
        return changes_text(plan).encode("utf-8")

    def is_current(self, plan: Plan) -> bool:
        return same_bytes(self.path, self.render(plan))


def changes_text(plan: Plan, since: str | None = None) -> str:
    """The changelog as Markdown, newest version first (only versions after since, if given)."""
    where = {n.guid: f"{n.question.path}:{n.point.line}" for n in plan.notes}
    releases = changelog(plan.lock)
    first = releases[-1].version if releases else None
    parts = [HEADER]
    for release in releases:
        if since is None or release.version > since:
            parts.append(_release(release, where, first=release.version == first))
    return "\n".join(parts)


def _release(r: Release, where: dict[str, str], first: bool) -> str:
    lines = [f"## {r.version}", ""]
    if first:  # the bank's first version: every card is new, a list of them says nothing
        lines += [f"首个版本：{len(r.added)} 张卡片。 / First version: {len(r.added)} cards.", ""]
    elif r.added:
        lines += [f"### 新增 / added ({len(r.added)})", ""]
        lines += [f"- {_card(e, where)}：{e.answer}" for e in r.added]
        lines.append("")
    if r.revised:
        lines += [f"### 修订 / revised ({len(r.revised)})", ""]
        for change in r.revised:
            (cue, answer), old = change.new, change.old
            lines.append(f"- {_card(change.entry, where)}")
            if old.cue != cue:
                lines += [f"  - 提示 / cue: {old.cue} → {cue}"]
            if old.answer != answer:
                lines += [f"  - 答案 / answer: {old.answer} → {answer}"]
        lines.append("")
    if r.retired:
        lines += [f"### 退役 / retired ({len(r.retired)})", ""]
        lines += [f"- {_card(e, where)}：{e.answer}" for e in r.retired]
        lines.append("")
    return "\n".join(lines)


def _card(e: LockEntry, where: dict[str, str]) -> str:
    place = where.get(e.guid) or f"第 {e.number} 题第 {e.index} 条（已删除 / removed）"
    return f"第 {e.number} 题 `{place}` **{e.cue}**"
