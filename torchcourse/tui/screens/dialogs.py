"""Modal screens: the base :class:`Dialog`, :class:`Finder` (search and error lookup), help
(every key), run-all summary."""

from __future__ import annotations

from pathlib import Path

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from torchcourse.tui import keys
from torchcourse.tui.bindings import DIALOG_BINDINGS


class Dialog(ModalScreen):
    CSS_PATH = Path(__file__).resolve().parent.parent / "dialogs.tcss"
    BINDINGS = DIALOG_BINDINGS
    # selector → (rows the rest of the box needs, most rows): a scrolling part of the box gets
    # fewer rows on a short terminal, so the box (at most 90% of the screen) is never cut.
    FIT: dict[str, tuple[int, int]] = {}

    def action_dismiss_dialog(self) -> None:
        self.dismiss(None)

    def on_mount(self) -> None:
        self.fit_height(self.app.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self.fit_height(event.size.height)

    def fit_height(self, height: int) -> None:
        room = height * 9 // 10  # .dialog-box { max-height: 90% }
        for selector, (reserve, most) in self.FIT.items():
            for widget in self.query(selector):
                widget.styles.max_height = max(2, min(most, room - reserve))


class Finder(Dialog):
    """Look something up while the learner types: a title, an input, a status line and the
    results (Enter on one jumps to its place in the course). Search and error lookup."""

    NAME = ""  # the ids: #NAME-box, #NAME-input, #NAME-status, #NAME-results
    HEADING = ""
    EMPTY = ""  # the status line when nothing matched

    def __init__(self, initial: str = "") -> None:
        super().__init__()
        self.initial = initial
        self.hits: list = []
        self.shown_for: str | None = None  # the text self.hits were found for
        self._enter_waits = False  # Enter came before the hits of the text typed: jump when they come

    # -- what a finder supplies ---------------------------------------------------------

    def make_input(self) -> Widget:
        raise NotImplementedError

    def input_text(self) -> str:
        raise NotImplementedError

    def find_hits(self, text: str) -> list:
        raise NotImplementedError

    def hit_option(self, index: int, hit) -> Option:
        raise NotImplementedError

    def found_text(self, count: int) -> str:
        raise NotImplementedError

    def open_hit(self, hit) -> None:
        raise NotImplementedError

    # -- shared behaviour ---------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id=f"{self.NAME}-box", classes="dialog-box"):
            yield Label(self.HEADING, classes="dialog-title")
            yield self.make_input()
            yield Label("", id=f"{self.NAME}-status")
            yield OptionList(id=f"{self.NAME}-results")

    @property
    def input(self) -> Widget:
        return self.query_one(f"#{self.NAME}-input")

    @property
    def results(self) -> OptionList:
        return self.query_one(f"#{self.NAME}-results", OptionList)

    def on_mount(self) -> None:
        self.input.focus()
        if self.initial:
            self.find(self.initial)

    @work(thread=True, exclusive=True, exit_on_error=False, group="find")
    def find(self, text: str) -> None:
        hits = self.find_hits(text) if text.strip() else []
        self.app.call_from_thread(self._show, text, hits)

    def _show(self, text: str, hits: list) -> None:
        if text != self.input_text():
            return  # typed on since: a newer search is on its way
        self.hits = hits
        self.shown_for = text
        results = self.results
        results.clear_options()
        results.add_options([self.hit_option(i, h) for i, h in enumerate(hits)])
        status = self.query_one(f"#{self.NAME}-status", Label)
        if not text.strip():
            status.update("")
        elif hits:
            status.update(self.found_text(len(hits)))
            results.highlighted = 0
        else:
            status.update(self.EMPTY)
        if self._enter_waits:
            self._enter_waits = False
            self.first_hit()

    def first_hit(self) -> None:
        """Enter in the input: the first hit of what is typed now. Pressed before the search of
        the last keystroke has answered (a quick typist), it jumps as soon as that answer comes,
        never to a hit of the text typed before."""
        if not self.input_text().strip():
            self._enter_waits = False
            return
        if self.shown_for != self.input_text():
            self._enter_waits = True
            return
        if self.hits:
            self.jump(0)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.jump(event.option_index)

    def jump(self, index: int) -> None:
        hit = self.hits[index]
        self.dismiss(None)
        self.open_hit(hit)


class HelpScreen(Dialog):
    """Every key of the app, rendered from :mod:`torchcourse.tui.keys`."""

    BINDINGS = Dialog.BINDINGS + [Binding("question_mark", "dismiss_dialog", "关闭", show=False)]
    FIT = {"#help-scroll": (4, 20)}  # title line and its margin, border

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box", classes="dialog-box"):
            yield Label("按键一览（Esc 关闭）", classes="dialog-title")
            with VerticalScroll(id="help-scroll"):
                yield HelpTable(self.app.course.chars_per_minute, id="help-table")


class HelpTable(Static):
    """The key table, each description's wrapped lines indented under its first (walk L2: they
    started at the box's edge). ``content`` stays the unwrapped table (what it says)."""

    def __init__(self, cpm: int, **kwargs) -> None:
        super().__init__(help_content(cpm), **kwargs)
        self._cpm = cpm

    def render(self) -> Content:
        return help_content(self._cpm, self.content_size.width or None)

    def get_content_height(self, container, viewport, width: int) -> int:
        return sum(max(1, len(line.wrap(width))) for line in help_content(self._cpm, width).split("\n"))


KEY_COLUMN = 16  # "  " + the key, padded: where each description starts


def help_content(cpm: int = 170, width: int | None = None) -> Content:
    """The help's text; with ``width`` its descriptions come wrapped to it, continuation lines
    indented to the description column."""
    lines: list[Content] = []
    scope = None
    for sc, key, desc in keys.key_table():
        if sc != scope:
            if scope is not None:
                lines.append(Content(""))
            lines.append(Content.styled(f"【{sc}】", "bold"))
            scope = sc
        from rich.cells import cell_len

        pad = " " * max(1, KEY_COLUMN - 2 - cell_len(key))
        column = max(KEY_COLUMN, cell_len(key) + 3)
        rows = Content(desc).wrap(width - column) if width and width > column + 10 else [Content(desc)]
        indent = "\n" + " " * column
        lines.append(Content.assemble(("  " + key, "bold $accent"), pad, Content(indent).join(r.rstrip() for r in rows)))
    lines.append(Content(""))
    lines.append(Content("点击 ▶ 运行 按钮也能运行代码块；鼠标滚轮滚动正文。"))
    from torchcourse.progress.reading import HOW_IT_COUNTS, reading_pace

    lines.append(Content(""))
    lines.append(Content.styled("【已读的分钟怎么算】", "bold"))
    lines.append(Content(HOW_IT_COUNTS.format(cpm=reading_pace(cpm), est=cpm)))
    return Content("\n").join(lines)


STATUS_NAMES = {
    "match": "一致",
    "mismatch": "不一致",
    "error": "出错",
    "timeout": "超时",
    "skipped": "未实跑（需要 GPU）",
    "cancelled": "已取消",
}


class RunSummaryScreen(Dialog):
    BINDINGS = Dialog.BINDINGS + [Binding("enter", "dismiss_dialog", "关闭", show=False)]

    def __init__(self, chapter, counts: dict[str, int], failed: list[str], total: int) -> None:
        super().__init__()
        self.chapter = chapter
        self.counts = counts
        self.failed = failed
        self.total = total

    def compose(self) -> ComposeResult:
        with Vertical(id="summary-box", classes="dialog-box"):
            yield Label(f"{self.chapter.id} 全部代码块运行完毕（Esc 关闭）", classes="dialog-title")
            yield Static(summary_text(self.counts, self.failed, self.total), id="run-summary")


def summary_text(counts: dict[str, int], failed: list[str], total: int) -> str:
    parts = [f"{STATUS_NAMES.get(k, k)} {v} 个" for k, v in counts.items() if v]
    text = f"共 {total} 个代码块：" + ("，".join(parts) if parts else "没有运行任何代码块")
    if failed:
        text += "\n需要看一眼：" + "、".join(failed)
    elif counts.get("match", 0) == total and total:
        text += "\n全部和预期输出一致。"
    return text
