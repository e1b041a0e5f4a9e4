"""Split a chapter part into display segments: prose, callouts and snippets.

The reader mounts one widget per segment, part by part, so the first screen appears fast
(Textual's Markdown widget costs ~30 µs per character to mount). Prose is cut at headings and
at about ``CHUNK`` characters so a section jump or a search hit lands near its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchcourse.course.chapter import markdown_parser
from torchcourse.course.model import Chapter, Part, Snippet

CHUNK = 900
HEADING_ATTR_RE = re.compile(r"(^#{1,6}[ \t].*?)[ \t]*\{#[A-Za-z0-9_\-]+\}[ \t]*$", re.M)
BREAK_LINE_RE = re.compile(r"^[ \t]*<!--\s*break.*?-->[ \t]*$", re.M)

@dataclass
class Segment:
    kind: str  # "prose" | "callout" | "snippet"
    text: str  # Markdown (display form) for prose/callout; code for snippets
    start_line: int  # 1-based lines in the chapter file, inclusive
    end_line: int
    anchor: str | None = None  # section anchor when the segment starts with a heading
    callout: str | None = None  # "star" | "warn"
    snippet: Snippet | None = None


_FENCE_MARK_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def display_markdown(text: str) -> str:
    """Markdown as shown: heading anchors ``{#…}`` and break markers removed (outside code
    fences: a fence that shows the marker's syntax keeps it)."""
    if "```" not in text and "~~~" not in text:
        text = HEADING_ATTR_RE.sub(r"\1", text)
        return BREAK_LINE_RE.sub("", text)
    out, fence = [], None
    for line in text.split("\n"):
        m = _FENCE_MARK_RE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip().strip(fence[0]):
            fence = None
        elif fence is None:
            line = HEADING_ATTR_RE.sub(r"\1", line)
            line = BREAK_LINE_RE.sub("", line)
        out.append(line)
    return "\n".join(out)


def underscores_as_written(parsed) -> None:
    """Underscores are never emphasis in chapter prose (Rich's Markdown tokens, changed in place).

    The course writes bold as ``**…**``; a name like ``__setattr__`` or ``super().__init__()``
    written outside backticks (a section title, and the appendix's links that quote one) means
    itself, as in the table of contents, never bold ``setattr``. The ``_`` / ``__`` delimiters
    the parser took for emphasis are put back as text.
    """
    from markdown_it.token import Token

    for tok in parsed:
        children = tok.children
        if not children or not any(c.type in _EMPHASIS and c.markup in ("_", "__") for c in children):
            continue
        tok.children = [Token("text", "", 0, content=c.markup) if c.type in _EMPHASIS and c.markup in ("_", "__") else c
                        for c in children]


_EMPHASIS = frozenset({"em_open", "em_close", "strong_open", "strong_close"})


def part_lines(chapter: Chapter, part: Part) -> tuple[int, list[str]]:
    """(first line number, the part's source lines) — the break marker line excluded."""
    lines = chapter.source.splitlines()
    end = part.end_line - 1 if part.break_label is not None else part.end_line
    return part.start_line, lines[part.start_line - 1 : end]


def course_segments(course, chapter: Chapter, index: int) -> list[Segment]:
    """Part ``index`` of ``chapter`` split once per process, in ``course.memo`` (the app's prewarm
    splits every chapter's opening part while the home screen is up; the reader then finds them)."""
    key = ("segments", chapter.id, index)
    segs = course.memo.get(key)
    if segs is None:
        segs = course.memo[key] = split_part(chapter, chapter.parts[index])
    return segs


def split_part(chapter: Chapter, part: Part, chunk: int = CHUNK) -> list[Segment]:
    first, lines = part_lines(chapter, part)
    text = "\n".join(lines)
    tokens = markdown_parser().parse(text)
    snippets_by_line = {s.line: s for s in chapter.snippets}
    heading_lines = {s.line: s.anchor for s in chapter.sections}
    blocks: list[tuple[str, int, int, object]] = []  # (kind, start0, end0 exclusive, extra)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.level != 0 or not tok.map:
            i += 1
            continue
        start, end = tok.map
        if tok.type == "fence":
            lang = (tok.info.strip().split() or [""])[0].split("{")[0]
            snip = snippets_by_line.get(first + start) if lang == "python" else None
            if snip is not None:
                blocks.append(("snippet", start, end, snip))
            elif lang == "output" and blocks and blocks[-1][0] == "snippet":
                kind, s0, _e0, snip = blocks[-1]
                blocks[-1] = (kind, s0, end, snip)
            else:
                blocks.append(("prose", start, end, None))
        elif tok.type == "blockquote_open":
            j = i + 1
            while j < len(tokens) and tokens[j].type != "inline":
                j += 1
            body = tokens[j].content.lstrip("*_ ") if j < len(tokens) else ""
            kind = "star" if body.startswith("⭐") else "warn" if body.startswith("⚠") else None
            blocks.append(("callout" if kind else "prose", start, end, kind))
        elif tok.type == "heading_open":
            blocks.append(("heading", start, end, heading_lines.get(first + start)))
        elif tok.type.endswith("_open") or tok.type in ("fence", "code_block", "hr", "html_block"):
            blocks.append(("prose", start, end, None))
        i += 1

    segments: list[Segment] = []
    buf: list[tuple[int, int]] = []
    buf_anchor: str | None = None

    def flush() -> None:
        nonlocal buf, buf_anchor
        if buf:
            s0, e0 = buf[0][0], buf[-1][1]
            md = display_markdown("\n".join(lines[s0:e0])).strip("\n")
            if md.strip():
                segments.append(Segment("prose", md, first + s0, first + e0 - 1, anchor=buf_anchor))
        buf, buf_anchor = [], None

    size = 0
    for kind, s0, e0, extra in blocks:
        if kind == "heading":
            flush()
            size = 0
            buf_anchor = extra  # type: ignore[assignment]
            buf.append((s0, e0))
            continue
        if kind == "prose":
            if size > chunk:
                flush()
                size = 0
            buf.append((s0, e0))
            size += sum(len(ln) for ln in lines[s0:e0])
            continue
        flush()
        size = 0
        if kind == "callout":
            md = display_markdown("\n".join(lines[s0:e0]))
            segments.append(Segment("callout", md, first + s0, first + e0 - 1, callout=extra))  # type: ignore[arg-type]
        else:
            snip: Snippet = extra  # type: ignore[assignment]
            segments.append(Segment("snippet", snip.code, first + s0, first + e0 - 1, snippet=snip))
    flush()
    return segments
