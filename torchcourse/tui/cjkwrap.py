"""Line breaking for Chinese text in Rich and Textual.

Rich (and Textual's ``Content``, which reuses Rich's ``divide_line``) breaks lines only at
whitespace. Chinese prose has no spaces, so a whole clause is one "word": when it does not fit
in what is left of a line, the line ends early and the clause starts a new one, leaving ragged
half-empty lines all over a chapter. Here every CJK character is a word of its own, with the
usual line-breaking courtesy: closing punctuation (，。）」…) stays with the character before it
and opening punctuation (（「“) with the character after it, so no line starts with "，".

A phrase that must stay on one line (``断点 1/2 之后``) is written with no-break spaces
(:data:`GLUE`, U+00A0) instead of spaces: everything between two ordinary spaces that holds a
no-break space is one word, so the line breaks before the phrase, never inside it.

:func:`install` swaps Rich's word splitter for this one; it is idempotent and leaves Rich alone
if its internals ever change shape. Only the app process installs it.
"""

from __future__ import annotations

from typing import Iterable

# (first, last) code points of the scripts whose characters are words of their own
_CJK_RANGES = (
    (0x2E80, 0x2FFF),  # radicals, Kangxi
    (0x3040, 0x30FF),  # kana
    (0x3100, 0x312F),  # bopomofo
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # hangul
    (0xF900, 0xFAFF),  # compatibility ideographs
)
_CLOSE = frozenset("，。、；：！？）」』》〉】〕”’…·％")
_OPEN = frozenset("（「『《〈【〔“‘")
GLUE = "\u00a0"  # a no-break space: the text around it is one phrase


def glued(*words: str) -> str:
    """``words`` joined by no-break spaces: a phrase the wrapping never breaks (when it fits)."""
    return GLUE.join(words)


def glue_inline_code(parsed, longest: int = 40) -> None:
    """Keep short inline code spans on one line (Rich's Markdown tokens, changed in place).

    A code span with spaces inside (``x.view(4, 3)``) would otherwise break at them. Its spaces
    become no-break spaces, and where it touches a CJK character an ordinary space is put
    between them, so the glued phrase is exactly the code span (never the sentence around it).
    Spans longer than ``longest`` cells are left to wrap.
    """
    for tok in parsed:
        children = tok.children
        if not children:
            continue
        for k, child in enumerate(children):
            if child.type != "code_inline" or " " not in child.content or len(child.content) > longest:
                continue
            child.content = child.content.replace(" ", GLUE)
            before = children[k - 1] if k > 0 else None
            after = children[k + 1] if k + 1 < len(children) else None
            if before is not None and before.type == "text" and before.content and _is_cjk(before.content[-1]):
                before.content += " "
            if after is not None and after.type == "text" and after.content and _is_cjk(after.content[0]):
                after.content = " " + after.content


def space_links(parsed) -> None:
    """Put a space between a link and a CJK character it touches when the link's text starts (or
    ends) with a Latin letter or digit, as :func:`glue_inline_code` does for code: 「见[06 章](06)」
    reads 「见 06 章」 like 「见 [06 章](06)」, not 「见06 章」 (Rich's Markdown tokens, changed in place)."""
    for tok in parsed:
        children = tok.children
        if not children or not any(c.type == "link_open" for c in children):
            continue
        for k, child in enumerate(children):
            if child.type == "link_open":
                before = children[k - 1] if k > 0 else None
                inner = children[k + 1] if k + 1 < len(children) else None
                if (before is not None and before.type == "text" and before.content and _is_cjk(before.content[-1])
                        and inner is not None and inner.type in ("text", "code_inline") and inner.content[:1].isascii()
                        and inner.content[:1].isalnum()):
                    before.content += " "
            elif child.type == "link_close":
                inner = children[k - 1] if k > 0 else None
                after = children[k + 1] if k + 1 < len(children) else None
                if (after is not None and after.type == "text" and after.content and _is_cjk(after.content[0])
                        and inner is not None and inner.type in ("text", "code_inline") and inner.content[-1:].isascii()
                        and inner.content[-1:].isalnum()):
                    after.content = " " + after.content


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    if o < 0x2E80:
        return False
    for first, last in _CJK_RANGES:
        if first <= o <= last:
            return True
    return False


def words(text: str) -> Iterable[tuple[int, int, str]]:
    """:func:`_words`, with every run between ordinary spaces that holds a no-break space merged
    into one word (a glued phrase; text without one pays a single ``in`` test)."""
    if GLUE not in text:
        yield from _words(text)
        return
    group: list[tuple[int, int, str]] = []
    for word in _words(text):
        group.append(word)
        tail = word[2][len(word[2].rstrip()):]  # trailing whitespace: ordinary space ends the run
        if tail and tail.replace(GLUE, ""):
            yield from _flush(group, text)
            group = []
    yield from _flush(group, text)


def _flush(group: list[tuple[int, int, str]], text: str) -> Iterable[tuple[int, int, str]]:
    if not group:
        return
    glued_at = [i for i, w in enumerate(group) if GLUE in w[2].rstrip(" \t\n")]
    if not glued_at:
        yield from group
        return
    # A phrase ends with its last glued word and the one after it; when that one is not CJK
    # (a glued code span: ``torchcourse quiz 01。四道…``), the Chinese after it wraps freely
    # (walk L1). A phrase whose last glued word is followed by CJK (``断点 1/2 之后``) stays whole.
    last = glued_at[-1] + 1
    if last < len(group) and not _is_cjk(group[last][2].lstrip("".join(_OPEN))[:1] or "a"):
        start, end = group[0][0], group[last][1]
        yield start, end, text[start:end]
        yield from group[last + 1:]
        return
    start, end = group[0][0], group[-1][1]
    yield start, end, text[start:end]


def _words(text: str) -> Iterable[tuple[int, int, str]]:
    """Rich's ``words`` contract: (start, end, word-with-trailing-space) covering the text.

    A word is: leading spaces, opening punctuation, then one CJK character or a run of other
    non-space characters, then closing punctuation and trailing spaces. (A plain loop rather
    than a regular expression: compiling the equivalent pattern cost ~3.5 ms at every start.)
    """
    n = len(text)
    i = 0
    while i < n:
        start = i
        while i < n and text[i].isspace():
            i += 1
        while i < n and text[i] in _OPEN:
            i += 1
        if i < n and _is_cjk(text[i]):
            i += 1
        else:
            while i < n and not text[i].isspace() and text[i] not in _OPEN and text[i] not in _CLOSE and not _is_cjk(text[i]):
                i += 1
        while i < n and text[i] in _CLOSE:
            i += 1
        while i < n and text[i].isspace():
            i += 1
        if i == start:  # cannot happen, but never loop forever
            i += 1
        yield start, i, text[start:i]


def _fast_divide_line(divide_line):
    """Rich's ``divide_line`` with a shortcut: a line that fits needs no breaks (most UI lines)."""

    def fast_divide_line(text: str, width: int, fold: bool = True) -> list[int]:
        # a widget squeezed to no width (a terminal or a browser window made one cell wide): Rich
        # would fold a long word into ``range(0, n, 0)`` and end the app; one cell is the least
        width = max(1, width)
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
