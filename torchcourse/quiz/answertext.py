"""How a typed answer is read before it is compared: the one normal form both the grader
(``quiz/grading.py``) and the checkpoint checks (``quiz/bank.py``) use. It imports nothing of the
quiz package, so neither of those two imports the other."""

from __future__ import annotations

import re
import unicodedata

# CJK punctuation NFKC leaves alone, mapped to its ASCII look-alike.
_CJK_PUNCT = str.maketrans(
    {
        "。": ".",
        "、": ",",
        "“": '"',
        "”": '"',
        "‘": "'",
        "’": "'",
        "「": '"',
        "」": '"',
        "『": '"',
        "』": '"',
        "【": "[",
        "】": "]",
        "《": "<",
        "》": ">",
        "〈": "<",
        "〉": ">",
        "—": "-",
        "–": "-",
        "…": "...",
    }
)
_QUOTES = "\"'`"
_WS_RE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """The form fill answers are compared in.

    NFKC (full-width letters, digits and punctuation become half-width: ``（）`` → ``()``,
    ``ｓｔｏｒａｇｅ`` → ``storage``), CJK quotes and stops mapped to ASCII, whitespace removed
    everywhere, case folded, then quotes and backticks around the whole answer stripped
    (`` `x.stride()` `` → ``x.stride()``). Nothing else is forgiven: a trailing ``()`` counts
    only when the question lists that spelling in ``accept``.
    """
    s = unicodedata.normalize("NFKC", text).translate(_CJK_PUNCT)
    s = _WS_RE.sub("", s).casefold()
    while len(s) >= 2 and s[0] in _QUOTES and s[-1] == s[0]:
        s = s[1:-1].strip()
    # a lone leading/trailing backtick pair of different counts (``code``) or stray quotes
    s = s.strip("`")
    return s
