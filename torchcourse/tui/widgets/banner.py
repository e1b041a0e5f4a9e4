"""The 🛑 break-point banner at the end of a part, and the chapter-end panel."""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static


class BreakBanner(Static):
    """"🛑 断点 k/N · label"; the screen records progress when it is reached."""

    def __init__(self, index: int, total: int, label: str, *, reached: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.index = index  # 1-based break index
        self.total = total
        self.label = label
        self.reached = reached  # True for a break the store already holds (reached in an earlier visit)
        self.words = "已记下"  # after ✔: progress.model.break_words once the store has it (show_words)
        if reached:
            self.add_class("-reached")

    def on_mount(self) -> None:
        self.refresh_text()

    def _text(self) -> tuple[str, str]:
        mark = f"  ✔ {self.words}" if self.reached else ""
        return f"🛑 断点 {self.index}/{self.total} · {self.label}{mark}", "可以在这里停下：s 保存并回到首页 · 空格/PgDn 继续下一段 · n 跳到下一个断点"  # n jumps (review-00 F2)

    def refresh_text(self, layout: bool = True) -> None:
        self.update("\n".join(self._text()), layout=layout)

    def show_words(self, words: str) -> None:
        """The model's words for this reached break (see ``progress.model.break_words``)."""
        if words != self.words:
            self.words = words
            if self.reached:
                self.refresh_text()

    def mark_reached(self) -> None:
        if not self.reached:
            self.reached = True
            self.add_class("-reached")
            # No new layout when the longer first line still fits on one line: a layout arranges
            # every block of the chapter (20-35 ms in a long one, on the PgDn that reached it).
            # Sizes come from the last layout (asking for the region could arrange them all too).
            width = self.outer_size.width - self.styles.gutter.width
            fits = cell_len(self._text()[0]) <= width
            self.refresh_text(layout=not fits)


class ChapterEnd(Vertical):
    """After the last part: the checkpoint quiz and the next chapter along the route."""

    def __init__(self, has_quiz: bool, next_title: str | None, next_words: str = "下一章", **kwargs) -> None:
        super().__init__(**kwargs)
        self.has_quiz = has_quiz
        self.next_title = next_title
        self.next_words = next_words  # "路线 B 的下一章": the route's, not the chapter's own 下一章
        self.end_title = "本章到此结束。"  # progress.model.end_words once the store is read (show_title)

    def show_title(self, title: str) -> None:
        """The title in the model's words (``progress.model.end_words``)."""
        self.end_title = title
        for label in self.query(".end-title"):
            label.update(title)  # type: ignore[attr-defined]

    def compose(self) -> ComposeResult:
        yield Label(self.end_title, classes="end-title")
        with Horizontal(classes="end-actions"):
            if self.has_quiz:
                yield Button("✅ 检查点测验 (m)", id="end-quiz", action="screen.quiz", compact=True)
            if self.next_title:
                yield Button(f"{self.next_words} ▶ {self.next_title} (])", id="end-next", action="screen.next_chapter", compact=True)
            else:
                # no "(Esc)": after a link Esc goes back to the link's chapter (review-00 F8)
                yield Button("回到首页", id="end-home", action="screen.back", compact=True)

