"""Full-text search of the course's chapters (the app's ``/``). No textual, no torch."""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchcourse.course.model import Course


@dataclass(frozen=True)
class TextHit:
    chapter_id: str
    part: int  # 0-based part index
    line: int  # 1-based line in the chapter file
    anchor: str | None  # the enclosing section, if any
    excerpt: str


_MD_LINK_RE = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")
_MD_ANCHOR_RE = re.compile(r"\s*\{#[^}]*\}\s*$")
_MD_LEAD_RE = re.compile(r"^\s*(?:#{1,6}\s+|>\s?|[-*+]\s+)+")
_MD_COMMENT_RE = re.compile(r"<!--(?P<body>.*?)-->")
_BREAK_LABEL_RE = re.compile(r"\s*break\s*:\s*(?P<label>.*?)\s*$")


def _plain(line: str) -> str:
    """A Markdown line as the reader shows it: no link targets, backticks, bold marks, heading
    hashes or anchors; of an HTML comment only a break point's label (the reader shows it in
    the 🛑 banner). Searched and shown in search results."""
    def comment(m: re.Match) -> str:
        label = _BREAK_LABEL_RE.match(m.group("body"))
        return label.group("label") if label else ""

    line = _MD_COMMENT_RE.sub(comment, line)
    if line.lstrip().startswith("```"):  # a fence delimiter: ```python {#id timeout=…}
        return ""
    line = _MD_LINK_RE.sub(r"\1", line)
    line = _MD_ANCHOR_RE.sub("", line)
    line = _MD_LEAD_RE.sub("", line)
    return line.replace("`", "").replace("**", "")


def _excerpt(line: str, start: int, length: int, width: int = 100) -> str:
    line = line.strip()
    if len(line) <= width:
        return line
    start = max(0, min(start - width // 3, len(line) - width))
    out = line[start : start + width]
    return ("…" if start > 0 else "") + out + ("…" if start + width < len(line) else "")


def search_text(course: Course, query: str, limit: int = 50) -> list[TextHit]:
    """Case-insensitive search of every written chapter's text (Chinese included), in course order.

    A line matches when it holds the whole query, or every one of its space-separated words.
    """
    q = query.strip().casefold()
    if not q:
        return []
    words = q.split()
    hits: list[TextHit] = []
    for ch in course.chapters:
        if not ch.available or not ch.source:
            continue
        sections = sorted(ch.sections, key=lambda s: s.line)
        for n, raw in enumerate(ch.source.splitlines(), start=1):
            raw = _plain(raw)
            low = raw.casefold()
            pos = low.find(q)
            if pos < 0:
                if len(words) < 2 or not all(w in low for w in words):
                    continue
                pos = low.find(words[0])
            part = ch.part_at(n)
            if part is None:
                part = ch.parts[-1].index if ch.parts else 0
            anchor = None
            for s in sections:
                if s.line <= n:
                    anchor = s.anchor
                else:
                    break
            hits.append(TextHit(ch.id, part, n, anchor, _excerpt(raw, pos, len(q))))
            if len(hits) >= limit:
                return hits
    return hits
