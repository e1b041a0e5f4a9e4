"""Line breaking for Chinese text in Rich and Textual.

Rich (and Textual's ``Content``, which reuses Rich's ``divide_line``) breaks lines only at
whitespace. Chinese prose has no spaces, so a whole clause is one "word": when it does not fit
in what is left of a line, the line ends early and the clause starts a new one, leaving ragged
half-empty lines all over a chapter. Here every CJK character is a word of its own, with the
usual line-breaking courtesy: closing punctuation (，。）」…) stays with the character before it
and opening punctuation (（「“) with the character after it, so no line starts with "，".

:func:`install` swaps Rich's word splitter for this one; it is idempotent and leaves Rich alone
if its internals ever change shape. Only the app process installs it.
"""

from __future__ import annotations

import re
from typing import Iterable

_CJK = (
    "\u2e80-\u2fff"  # radicals, Kangxi
    "\u3040-\u30ff"  # kana
    "\u3100-\u312f"  # bopomofo
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul
    "\uf900-\ufaff"  # compatibility ideographs
)
_CLOSE = "，。、；：！？）」』》〉】〕”’…·％"
_OPEN = "（「『《〈【〔“‘"

re_word_cjk = re.compile(
    rf"\s*(?:[{_OPEN}]*(?:[{_CJK}]|[^\s{_CJK}{_OPEN}{_CLOSE}]+)[{_CLOSE}]*|[{_OPEN}{_CLOSE}]+)\s*"
)


def words(text: str) -> Iterable[tuple[int, int, str]]:
    """Rich's ``words`` contract: (start, end, word-with-trailing-space) covering the text."""
    position = 0
    match = re_word_cjk.match(text, position)
    while match is not None and match.end() > position:
        start, end = match.span()
        yield start, end, match.group(0)
        position = end
        match = re_word_cjk.match(text, position)


def _fast_divide_line(divide_line):
    """Rich's ``divide_line`` with a shortcut: a line that fits needs no breaks (most UI lines)."""

    def fast_divide_line(text: str, width: int, fold: bool = True) -> list[int]:
        if len(text) <= width:
            from rich.cells import cell_len

            if cell_len(text) <= width:
                return []
        return divide_line(text, width, fold)

    fast_divide_line.original = divide_line  # type: ignore[attr-defined]
    return fast_divide_line


def install() -> bool:
    """Make Rich (and so Textual) break Chinese lines between characters. True if installed."""
    try:
        import rich._wrap as rich_wrap
    except ImportError:  # pragma: no cover
        return False
    if getattr(rich_wrap, "words", None) is words:
        return True
    if not callable(getattr(rich_wrap, "words", None)) or not callable(getattr(rich_wrap, "divide_line", None)):
        return False
    rich_wrap.words = words
    import textual.content as textual_content  # it imported divide_line by name

    for module in (rich_wrap, textual_content):
        current = getattr(module, "divide_line", None)
        if callable(current) and getattr(current, "original", None) is None:
            module.divide_line = _fast_divide_line(current)
    return True
