"""Terminal cell widths for the plain-text commands (a CJK character takes two cells)."""

from __future__ import annotations

import unicodedata


def char_width(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    return sum(char_width(ch) for ch in text)
