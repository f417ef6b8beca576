"""The project's one exception type and the problem records it carries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """Something wrong at a place: ``path:line: message``."""

    path: str
    line: int
    message: str
    severity: str = "error"  # or "warning"

    def __str__(self) -> str:
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{self.path}:{self.line}: {prefix}{self.message}"


class CardsError(Exception):
    """Raised by the core for bad input; carries every problem found, not only the first."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem("ainfra-cards", 0, problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class Collector:
    """Gathers problems so that one run reports all of them."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def error(self, path: str, line: int, message: str) -> None:
        self.problems.append(Problem(str(path), line, message))

    def warn(self, path: str, line: int, message: str) -> None:
        self.problems.append(Problem(str(path), line, message, "warning"))

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]
