"""Full-text search over the whole course (Chinese included); Enter jumps to the place."""

from __future__ import annotations

from textual import on
from textual.content import Content
from textual.widgets import Input
from textual.widgets.option_list import Option

from torchcourse.tui.screens.dialogs import Finder


def plain_excerpt(text: str) -> str:
    """A search excerpt as text: a Markdown table row reads 「retain_graph · 0 次」, not 「| retain_graph | 0 次 |」;
    separator rows (|---|) and backticks go."""
    import re

    out = []
    for line in text.strip().splitlines():
        stripped = line.strip()
        if stripped.startswith("|") or stripped.endswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                continue
            line = " · ".join(c for c in cells if c)
        out.append(line.replace("`", ""))
    return " ".join(out).strip()


class SearchScreen(Finder):
    NAME = "search"
    HEADING = "搜索全文（输入关键词，回车跳到第一条；↓ 进入结果列表，Esc 关闭）"
    EMPTY = "没有找到。换个词试试（中文、英文、代码都可以）。"
    FIT = {"#search-results": (9, 14)}  # title (two lines when narrow) and margin, input, status, border

    def make_input(self) -> Input:
        return Input(self.initial, placeholder="比如：stride、retain_graph、就地", id="search-input")

    def input_text(self) -> str:
        return self.query_one("#search-input", Input).value

    def find_hits(self, text: str) -> list:
        from torchcourse.lookup import search_text

        return search_text(self.app.course, text.strip(), limit=50)

    def hit_option(self, index: int, hit) -> Option:
        ch = self.app.course.chapter(hit.chapter_id)
        title = f"{hit.chapter_id} {ch.title if ch else ''}"
        sec = ch.section(hit.anchor) if ch and hit.anchor else None
        # the chapter's own heading ("01 · 张量：…") is not a section: no title twice (walk L15)
        where = f" · {sec.title}" if sec and sec.level > 1 and ch.title not in sec.title else ""
        return Option(Content.assemble((title + where, "bold"), "\n  ", plain_excerpt(hit.excerpt)), id=f"hit-{index}")

    def found_text(self, count: int) -> str:
        return f"找到 {count} 处"

    def open_hit(self, hit) -> None:
        """A jump to the hit; the hits stay active: n / N in the reader step through them."""
        app = self.app
        app.search_hits = list(self.hits)
        app.search_index = self.hits.index(hit) if hit in self.hits else 0
        app.search_term = self.input_text().strip()
        app.jump_to(hit.chapter_id, line=hit.line)

    @on(Input.Changed, "#search-input")
    def _changed(self, event: Input.Changed) -> None:
        self.find(event.value)

    @on(Input.Submitted, "#search-input")
    def _submitted(self) -> None:
        self.first_hit()

    def on_key(self, event) -> None:
        if event.key == "down" and self.focused is self.input and self.hits:
            self.results.focus()
            event.stop()
