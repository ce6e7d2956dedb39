"""User-given text made inert for a terminal (docs/troubleshooting.md).

Names of files, keys, columns and ids reach the console in one-line messages. A newline in a
key would split its line in two; an escape (ESC) would recolour or rewrite the screen; a
bidirectional override (U+202E) would show a file name reversed. :func:`inert_terminal` writes
each such character as its Python escape (``\\n``, ``\\x1b``, ``\\u202e``), as ``repr`` does,
and leaves every other character, accents and symbols included, as it is.

The ground floor: imports nothing of the package.
"""

from __future__ import annotations

import unicodedata

__all__ = ["inert_terminal", "terminal_active"]

_ACTIVE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Controls (C0, C1, DEL), format characters (bidirectional controls, zero-width ones),
surrogates, and the line and paragraph separators."""


def _active(char: str) -> bool:
    return unicodedata.category(char) in _ACTIVE_CATEGORIES


def _escape(char: str) -> str:
    code = ord(char)
    if char in "\n\r\t":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal_active(text: str) -> str | None:
    """The first character of ``text`` that a terminal would act on, escaped; None if none."""
    return next((_escape(char) for char in text if _active(char)), None)


def inert_terminal(text: object, *, lines: bool = False) -> str:
    """``text`` with every control, format (bidirectional, zero-width) and line-separator
    character written as its escape; with ``lines``, the line breaks ``\\n`` of a message of
    several lines are kept. Ordinary text is returned unchanged."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        _escape(char) if _active(char) and not (lines and char == "\n") else char for char in text
    )
