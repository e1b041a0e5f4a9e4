"""Small modal screens: help (every key), run-all summary, plain messages."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from torchcourse.tui import keys


class Dialog(ModalScreen):
    CSS_PATH = Path(__file__).resolve().parent.parent / "dialogs.tcss"
    BINDINGS = [Binding("escape", "dismiss_dialog", "关闭", key_display="Esc"), Binding("q", "dismiss_dialog", "关闭", show=False)]

    def action_dismiss_dialog(self) -> None:
        self.dismiss(None)


class HelpScreen(Dialog):
    """Every key of the app, rendered from :mod:`torchcourse.tui.keys`."""

    BINDINGS = Dialog.BINDINGS + [Binding("question_mark", "dismiss_dialog", "关闭", show=False)]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box", classes="dialog-box"):
            yield Label("按键一览（Esc 关闭）", classes="dialog-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(help_content(), id="help-table")


def help_content() -> Content:
    lines: list[Content] = []
    scope = None
    for sc, key, desc in keys.key_table():
        if sc != scope:
            if scope is not None:
                lines.append(Content(""))
            lines.append(Content.styled(f"【{sc}】", "bold"))
            scope = sc
        pad = " " * max(1, 14 - len(key))
        lines.append(Content.assemble(("  " + key, "bold $accent"), pad, desc))
    lines.append(Content(""))
    lines.append(Content("点击 ▶ 运行 按钮也能运行代码块；鼠标滚轮滚动正文。"))
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
