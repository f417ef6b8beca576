"""The project's one exception type and the problem records it carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Problem:
    """Something wrong at a place: ``path:line: message``."""

    path: str
    line: int
    message: str
    severity: Severity = "error"

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


def yaml_problem(path: str, error: Exception, what: str, first_line: int = 1) -> Problem:
    """A YAML syntax error as path:line; first_line is the file line of the YAML's first line."""
    mark = getattr(error, "problem_mark", None)
    line = first_line + mark.line if mark is not None else first_line
    reason = getattr(error, "problem", None) or str(error).splitlines()[0]
    return Problem(path, line, f"{what} is not valid YAML ({reason})")
