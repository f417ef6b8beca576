"""The pipeline's shape: the stages are pure (no memo), outputs read the plan and never import the
build, and no module imports another that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

import ainfra_cards

PACKAGE = Path(ainfra_cards.__file__).parent
STAGES = ("sources", "parse", "items", "ids", "render", "lockfile", "bank", "history")


def _imports(path: Path) -> set[str]:
    """The package modules a file imports, as dotted names relative to the package."""
    here = path.relative_to(PACKAGE).with_suffix("").parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(here[: len(here) - node.level])
            target = [*base, *(node.module.split(".") if node.module else [])]
            names = [".".join(target)] if node.module else [".".join([*base, a.name]) for a in node.names]
            found.update(n for n in names if n)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {".".join(p.relative_to(PACKAGE).with_suffix("").parts): p for p in PACKAGE.rglob("*.py")}
    return {name.removesuffix(".__init__"): _imports(path) for name, path in modules.items()}


def test_stages_know_nothing_of_the_memo_and_outputs_nothing_of_the_build():
    graph = _graph()
    for stage in STAGES:
        assert "memo" not in graph[stage], stage
    for name, deps in graph.items():
        if name.startswith("outputs"):
            assert "build" not in deps, name


def test_no_import_circles():
    graph = _graph()

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for dep in graph.get(todo.pop(), ()):
                if dep in graph and dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    circles = [name for name in graph if name in reach(name)]
    assert not circles, circles
