"""The error of text that is not what its reader expects (a benchmark's output, a binding report,
an imported table): raised by every parser and by the bounds on the values they read."""

from __future__ import annotations

from typing import Optional


class ParseError(ValueError):
    """Output is not a complete, well-formed result (truncated table, no banner, ...).

    The message says what is wrong and where (1-based line number of the text that was
    given to the parser). ``line`` holds that line number, or None when the problem is
    not tied to one line (e.g. empty output).
    """

    def __init__(self, message: str, line: Optional[int] = None) -> None:
        if line is not None:
            message = f"line {line}: {message}"
        super().__init__(message)
        self.line = line
