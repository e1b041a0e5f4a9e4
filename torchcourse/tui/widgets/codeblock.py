"""A snippet's code and outputs, their long lines folded with a ``↪`` mark (walk L2).

A code line wider than the block used to soft-wrap to column 0, where Python reads it as a
wrong indentation, and a wrapped ``+`` line of an edited run's output lost its ``+``. Here a line that does not fit is cut (at its last space when one is in the
second half of the row, else at the width) and every continuation row starts with a dim
``↪ ``; lines that fit are left alone (a quick cell count, most lines).
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.content import Content
from textual.widgets import Static

MARK = "↪ "


def fold(line: Content, width: int) -> list[Content]:
    """``line`` as rows of at most ``width`` cells; the continuation rows start with :data:`MARK`."""
    plain = line.plain
    if width <= len(MARK) + 4 or cell_len(plain) <= width:
        return [line]
    rows: list[Content] = []
    start, avail = 0, width
    while cell_len(plain[start:]) > avail:
        end, used = start, 0
        while end < len(plain) and used + cell_len(plain[end]) <= avail:
            used += cell_len(plain[end])
            end += 1
        space = plain.rfind(" ", start, end)
        if space > start + avail // 2:
            end = space + 1
        if end == start:  # a character wider than the row: never loop forever
            end = start + 1
        rows.append(line[start:end])
        start, avail = end, width - len(MARK)
    rows.append(line[start:])
    return [rows[0], *(Content.assemble((MARK, "dim"), row) for row in rows[1:])]


def fold_all(code: Content, width: int) -> list[Content]:
    out: list[Content] = []
    for line in code.split("\n"):
        out.extend(fold(line, width))
    return out


class CodeBlock(Static):
    """A Static for highlighted code whose long lines are folded with :data:`MARK`."""

    def __init__(self, code: Content, **kwargs) -> None:
        super().__init__(code, **kwargs)
        self.code_content = code
        self._folded: tuple[int, list[Content]] | None = None  # (width, rows): a layout asks twice

    def set_code(self, code: Content) -> None:
        self.update(code)

    def update(self, content="", *, layout: bool = True) -> None:
        self.code_content = content if isinstance(content, Content) else Content(str(content))
        self._folded = None
        super().update(content, layout=layout)

    def _rows(self, width: int) -> list[Content]:
        if self._folded is None or self._folded[0] != width:
            self._folded = (width, fold_all(self.code_content, width))
        return self._folded[1]

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._rows(width))

    def render(self):
        width = self.content_region.width
        if width <= 0:
            return self.code_content
        return Content("\n").join(self._rows(width))
