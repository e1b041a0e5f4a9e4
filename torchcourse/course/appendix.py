"""The appendix chapter's error tables: parsing and validation. No textual, no torch.

The appendix (``kind = "appendix"`` in course.toml) is content like a chapter. Every Markdown
table whose header is ``| 报错原文 | 原因 | 先查 | 讲解 |`` (or the older three-column
``| 报错原文 | 原因 | 讲解 |``) holds one error entry per row (format in ``content/README.md``).

:func:`appendix_entries` turns the rows into :class:`ErrorEntry` objects (the error lookup in
``torchcourse.lookup`` answers queries over them); :func:`appendix_problems` is what
``torchcourse check`` reports about them, with the appendix file and line:

- a row the lookup cannot use (cell count, empty excerpt, missing or broken link);
- an excerpt that no snippet of the course ever printed: after the runner's normalization
  (``torchcourse.runner.normalize``, expected side) and with runs of whitespace (line breaks,
  the tabs of a multi-line message) read as one space, the excerpt must occur in the expected
  output of at least one snippet. So every excerpt is a real run's, and stays one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchcourse.course.model import Chapter, Course, Problem

APPENDIX_HEADER = ("报错原文", "原因", "讲解")
APPENDIX_HEADER_CHECK = ("报错原文", "原因", "先查", "讲解")
LINK_RE = re.compile(r"\[(?P<label>[^\]]*)\]\((?P<chapter>[A-Za-z0-9_\-]+)?#(?P<anchor>[A-Za-z0-9_\-]+)\)")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_RULE_CELL_RE = re.compile(r":?-{3,}:?")
_WS_RE = re.compile(r"\s+")


@dataclass(frozen=True)
class ErrorEntry:
    text: str  # the error excerpt, e.g. "RuntimeError: view size is not compatible …"
    cause: str  # one sentence (appendix) or the explaining section's title (snippets)
    chapter_id: str  # the chapter that explains it
    anchor: str  # section anchor in that chapter
    section_title: str
    source: str = "appendix"  # "appendix" or "snippet"
    origin: str = ""  # "A:12" (appendix file line) or "03:view-error" (CHAPTER:SNIPPET)
    check: str = ""  # 先查: the first thing to check (appendix rows with four cells)

    @property
    def link(self) -> str:
        return f"{self.chapter_id}#{self.anchor}"


@dataclass(frozen=True)
class Row:
    line: int  # 1-based line in the appendix file
    cells: list[str]
    columns: int  # the table's header width: 3 or 4


def plain_cell(cell: str) -> str:
    """A prose cell as text: link targets, backticks and bold marks removed."""
    cell = re.sub(r"\[([^\]]*)\]\([^)\s]*\)", r"\1", cell)
    return cell.replace("`", "").replace("**", "").strip()


def split_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [c.strip().replace("\\|", "|") for c in cells]


def strip_code(cell: str) -> str:
    """The excerpt inside a cell's backticks (`` `x` `` or ``` `` x `` ```)."""
    cell = cell.strip()
    m = re.fullmatch(r"(`+)\s?(.*?)\s?\1", cell)
    if m:
        return m.group(2)
    return cell.replace("`", "")


def appendix_rows(chapter: Chapter):
    """Every data row of every 报错原文 table of one chapter file."""
    in_table = 0
    in_fence = False
    for i, ln in enumerate(chapter.source.splitlines(), start=1):
        if _FENCE_RE.match(ln):
            in_fence = not in_fence
            in_table = 0
            continue
        if in_fence:
            continue
        if not ln.strip().startswith("|"):
            in_table = 0
            continue
        cells = split_row(ln)
        if tuple(cells) in (APPENDIX_HEADER, APPENDIX_HEADER_CHECK):
            in_table = len(cells)
            continue
        if not in_table or all(_RULE_CELL_RE.fullmatch(c) for c in cells if c):
            continue
        yield Row(i, cells, in_table)


def appendices(course: Course):
    return [ch for ch in course.chapters if ch.kind == "appendix" and ch.available]


def _section_title(course: Course, chapter_id: str, anchor: str, fallback: str) -> str:
    ch = course.chapter(chapter_id)
    sec = ch.section(anchor) if ch is not None and ch.available else None
    return sec.title if sec else fallback


def appendix_entries(course: Course) -> list[ErrorEntry]:
    """The usable rows of the appendix tables, in file order."""
    out = []
    for ch in appendices(course):
        for row in appendix_rows(ch):
            cells = row.cells
            if len(cells) != row.columns:
                continue
            text, cause = strip_code(cells[0]), plain_cell(cells[1])
            check = plain_cell(cells[2]) if row.columns == 4 else ""
            m = LINK_RE.search(cells[-1])
            if not text or m is None:
                continue
            target = m.group("chapter") or ch.id
            label = m.group("label")
            fallback = label.split("§", 1)[1].strip() if "§" in label else label
            title = _section_title(course, target, m.group("anchor"), fallback)
            out.append(ErrorEntry(text, cause, target, m.group("anchor"), title, "appendix", f"{ch.id}:{row.line}", check))
    return out


def flat(text: str) -> str:
    """Runs of whitespace as one space: a message's line breaks and tabs do not matter."""
    return _WS_RE.sub(" ", text).strip()


def appendix_problems(course: Course) -> list[Problem]:
    """Rows of the appendix tables that the lookup cannot use (cells, links), with file and line.
    Whether each excerpt was really printed by a run is checked above the model, where the
    runner's normalization is at hand (:func:`torchcourse.check.excerpt_problems`)."""
    problems = []
    for ch in appendices(course):
        for row in appendix_rows(ch):
            cells = row.cells
            header = "| 报错原文 | 原因 | 先查 | 讲解 |" if row.columns == 4 else "| 报错原文 | 原因 | 讲解 |"
            if len(cells) != row.columns:
                problems.append(Problem(ch.file, row.line, f"报错表的这一行需要 {row.columns} 个单元格（{header}），这里有 {len(cells)} 个"))
                continue
            if not strip_code(cells[0]):
                problems.append(Problem(ch.file, row.line, "报错表的这一行的 报错原文 单元格是空的"))
            m = LINK_RE.search(cells[-1])
            if m is None:
                problems.append(Problem(ch.file, row.line, f"讲解 单元格需要一个链接，如 [03 §标题](03#anchor)，这里是 {cells[-1]!r}"))
                continue
            target_id = m.group("chapter") or ch.id
            target = course.chapter(target_id)
            if target is None:
                problems.append(Problem(ch.file, row.line, f"链接指向未知章节 {target_id!r}"))
            elif target.available and target.section(m.group("anchor")) is None:
                problems.append(Problem(ch.file, row.line, f"链接指向未知小节：第 {target_id} 章没有 #{m.group('anchor')}"))
    return problems


__all__ = [
    "APPENDIX_HEADER", "APPENDIX_HEADER_CHECK", "ErrorEntry", "Row", "appendix_entries", "appendix_problems",
    "appendix_rows", "flat", "plain_cell", "split_row", "strip_code",
]
