"""Expected and actual output side by side only while both fit; a table never wraps (walk M3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

from tests.tui_support import screen_text, sync, wait_for
from torchcourse.course.model import Snippet
from torchcourse.runner.core import RunResult
from torchcourse.tui.widgets.snippet import SnippetView

CSS = Path(__file__).resolve().parents[1] / "torchcourse" / "tui" / "reader.tcss"

# chapter 04's freeze / optimizer table, as the book prints it (60 cells a row)
TABLE = "\n".join([
    "                              zero_grad()  set_to_none=False              never",
    "SGD                                0.0000             2.7000             2.7000",
    "SGD(momentum=0.9)                  0.0000             4.7520             4.7520",
    "Adam                               0.0000             1.0000             1.0000",
])
CJK = "\n".join(["no_grad 里 w.mul_(2)          放行", "不要梯度的 plain.add_(1)      放行", "张" * 30])
SHORT = "tensor([1., 2.])\nTrue"


class OneSnippet(App):
    CSS_PATH = str(CSS)

    def __init__(self, expected: str) -> None:
        super().__init__()
        self.snippet = Snippet("tbl", "04", "print('x')\n", expected + "\n", line=1)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield SnippetView(self.snippet)


async def shown(expected: str, width: int):
    app = OneSnippet(expected)
    async with app.run_test(size=(width, 40)) as pilot:
        view = app.query_one(SnippetView)
        await wait_for(pilot, lambda: bool(view.query(".expected")), what="the snippet composed")
        view.show_running()
        view.show_result(RunResult("match", actual=expected + "\n", expected=expected + "\n", seconds=0.01))
        await wait_for(pilot, lambda: "✅" in screen_text(app), what="the verdict")
        await pilot.pause()
        return view.has_class("-stacked"), screen_text(app)


@pytest.mark.parametrize("text, width, stacks", [
    (TABLE, 100, True), (TABLE, 140, True),  # 80 cells a row: wider than a column of 140
    (CJK, 100, True), (CJK, 120, True),  # 30 CJK characters: 60 cells, not 30
    (CJK, 140, False),  # fits a column: side by side, still whole
], ids=["table-100", "table-140", "cjk-100", "cjk-120", "cjk-140"])
def test_every_output_line_is_shown_whole_side_by_side_only_when_it_fits(text, width, stacks):
    @sync
    async def body():
        stacked, screen = await shown(text, width)
        rows = [r.rstrip() for r in screen.splitlines()]
        for line in text.splitlines():
            # each line appears whole on one row, once as expected and once as actual
            assert sum(row.count(line.strip()) for row in rows) == 2, (line, screen)
        assert stacked == stacks

    body()


def test_short_output_stays_side_by_side():
    @sync
    async def body():
        stacked, screen = await shown(SHORT, 100)
        assert not stacked
        assert any("预期输出" in row and "实际输出" in row for row in screen.splitlines()), screen

    body()


def test_every_row_of_a_wrapped_removed_line_is_marked():
    """An edited run's diff: a removed line that wraps keeps its mark (background) on every row (walk L4)."""
    long = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed)"

    @sync
    async def body():
        app = OneSnippet(long)
        async with app.run_test(size=(80, 40)) as pilot:
            view = app.query_one(SnippetView)
            await wait_for(pilot, lambda: bool(view.query(".expected")), what="the snippet composed")
            view.show_running()
            result = RunResult("mismatch", actual="done\n", expected=long + "\n", seconds=0.01)
            result.edited = True
            view.show_result(result)
            await wait_for(pilot, lambda: "done" in screen_text(app), what="the marked pair")
            await pilot.pause()
            strips = app.screen._compositor.render_update(full=True).strips
            marked = {}  # row → background of its cells that belong to the removed line
            panel = set()  # background of the unmarked heading in the same panel
            for y, strip in enumerate(strips):
                for seg in (seg for chop in strip for seg in chop):
                    if "书上的预期输出" in seg.text:
                        panel.add(seg.style.bgcolor)
                    text = seg.text.strip().removeprefix("- ")
                    if len(text) > 3 and text in long and seg.style is not None:
                        marked.setdefault(y, set()).add(seg.style.bgcolor)
            assert len(marked) >= 2, marked  # the line wrapped
            backgrounds = set().union(*marked.values())
            assert len(backgrounds) == 1, marked  # every row: the same marked background
            assert panel and backgrounds != panel, (marked, panel)  # …and it is a mark, not the panel's

    body()


@pytest.mark.parametrize("message, says", [
    ("💥 代码块声明了 raises=RuntimeError，运行却没有抛出异常", "书上这段代码应该以 RuntimeError 报错结束，这次运行却没有报错"),
    ("💥 代码块声明了 raises=RuntimeError，运行抛出的却是 ValueError", "这次抛出的却是 ValueError"),
    ("💥 运行抛出了 RuntimeError，代码块却没有声明 raises=RuntimeError", "这次运行以 RuntimeError 报错结束，书上这段代码本不该报错"),
])
def test_the_verdict_never_shows_the_authors_fence_attributes(message, says):
    """Walk L5: `raises=RuntimeError` is author jargon."""
    from torchcourse.tui.widgets.snippet import verdict_text

    text = verdict_text(RunResult("error", message=message))
    assert "raises=" not in text and says in text, text
