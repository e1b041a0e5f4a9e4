"""Chinese prose wraps between characters in the app: full lines, no line starting with '，'."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.cells import cell_len
from textual.app import App
from textual.widgets import Static

from torchcourse.tui import cjkwrap

PARA = (
    "后面的章大多要 70 到 140 分钟左右：每个知识点都跟着真跑过的代码和原样的输出，删哪段都少一块证据。"
    "所以它本来就不打算让你一次读完，长章中间有断点，停在那里下次接着读。`storage_offset()` 也算在说明书里。"
)
CLOSING = tuple("，。、；：！？）」』》")


def test_words_cover_every_chapter_character_exactly():
    for path in sorted((Path(__file__).parents[1] / "content").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            assert "".join(w for _, _, w in cjkwrap.words(line)) == line, f"{path.name}: {line!r}"


def test_static_paragraph_fills_its_lines():
    asyncio.run(_paragraph_fills_its_lines())


async def _paragraph_fills_its_lines():
    class One(App):
        CSS = "Static { width: 40; }"

        def compose(self):
            yield Static(PARA.replace("`", ""))

    app = One()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        strips = app.screen._compositor.render_update(full=True).strips
        lines = ["".join(seg.text for seg in strip)[:40].rstrip() for strip in strips]
        lines = [ln for ln in lines if ln]
    assert len(lines) >= 4
    for ln in lines[:-1]:
        assert cell_len(ln) >= 37, f"ragged line ({cell_len(ln)} cells): {ln!r}"
        assert not ln.startswith(CLOSING), ln


def test_a_glued_phrase_is_never_broken_inside():
    """Issue 13 item 15: 「断点 1/2 之后」 written with no-break spaces wraps as one word."""
    from rich.text import Text

    from torchcourse.tui.cjkwrap import glued, install

    install()
    label = "▶ 继续 (c)：02 autograd：图什么时候建，什么时候没的 · " + glued("断点", "1/2", "之后")
    from rich.console import Console

    console = Console(width=200)
    for width in range(20, 70):
        lines = [ln.plain.strip() for ln in Text(label).wrap(console, width)]
        assert any(ln.endswith(glued("断点", "1/2", "之后")) for ln in lines), (width, lines)
    # without glue, CJK text still breaks between any two characters
    assert len(Text("一二三四五六七八九十").wrap(console, 10)) == 2


def test_inline_code_with_spaces_stays_on_one_line():
    # issue 13 item 15: `x.view(4, 3)` broke at its inner space (e.g. at width 20, 21, 39)
    import io

    from rich.console import Console
    from rich.markdown import Markdown

    from torchcourse.tui import cjkwrap

    cjkwrap.install()
    text = "先看这一行：转置之后再调用一次`x.view(4, 3)`会报错，因为每个新维度。"
    for width in range(16, 60):
        md = Markdown(text)
        cjkwrap.glue_inline_code(md.parsed)
        console = Console(width=width, file=io.StringIO(), color_system=None)
        console.print(md)
        shown = console.file.getvalue()
        assert "x.view(4,\xa03)" in shown, (width, shown)  # whole, on one line
        assert "会报错" in shown.replace("\n", "").replace(" ", "")  # the sentence around it still wraps freely
    long_code = Markdown("很长的代码 `" + " ".join(["torch.ones(2)"] * 6) + "` 照常折行。")
    cjkwrap.glue_inline_code(long_code.parsed)
    console = Console(width=30, file=io.StringIO(), color_system=None)
    console.print(long_code)
    assert "\xa0" not in console.file.getvalue()  # longer than 40 cells: left to wrap


def test_the_chinese_after_a_glued_code_span_and_its_punctuation_wraps_freely():
    """Walk L1: `torchcourse quiz 01。四道要你先预测…` was one word up to the next space, leaving
    a half-empty line before it (content/01-tensor-memory.md:671 at 100 columns)."""
    import io

    from rich.console import Console
    from rich.markdown import Markdown

    cjkwrap.install()
    text = "检查点在应用里做，或运行 `torchcourse quiz 01`。四道要你先预测某段代码的输出再真跑：先别翻回去，凭规则推一推。"
    width = 100  # the run after the code (~90 cells) fits a line, so without the fix it moves whole
    md = Markdown(text)
    cjkwrap.glue_inline_code(md.parsed)
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(md)
    lines = [ln.rstrip() for ln in console.file.getvalue().splitlines() if ln.strip()]
    assert any("torchcourse\xa0quiz\xa001。" in ln for ln in lines), lines  # the code and its 。 together
    for ln in lines[:-1]:
        assert cell_len(ln) >= width - 3, f"ragged line ({cell_len(ln)} cells): {lines!r}"
