"""A YAML error of a matrix, tuning plan or machine.yaml as one line: where, and what."""

from __future__ import annotations

import yaml

LIMIT = 300


def one_line(exc: BaseException) -> str:
    """``exc`` in one line of at most LIMIT characters; for a YAML error, its line and column
    (PyYAML's own message spans several lines and quotes the text)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        text = f"line {mark.line + 1}, column {mark.column + 1}: {exc.problem or exc.context}"
    else:
        text = str(exc)
    text = " ".join(text.split())
    return text if len(text) <= LIMIT else text[:LIMIT] + "…"
