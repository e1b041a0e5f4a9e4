"""Terminal cell widths for the plain-text commands (a CJK character takes two cells)."""

from __future__ import annotations

import unicodedata


def char_width(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    return sum(char_width(ch) for ch in text)


def fit(text: str, columns: int) -> str:
    """``text`` cut to at most ``columns`` cells, ending in ``…`` when cut."""
    if display_width(text) <= columns:
        return text
    out, used = [], 0
    for ch in text:
        w = char_width(ch)
        if used + w > columns - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"
