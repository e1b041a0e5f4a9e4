"""The "terminal too small" notice: covers whatever screen is showing, never replaces it.

Below :data:`MIN_WIDTH` × :data:`MIN_HEIGHT` the app marks every screen ``-too-small`` and lays a
:class:`TooSmall` over the current one (see ``TorchCourseApp.guard_size``). The screen's own
widgets are made invisible, not removed or hidden from layout, so they keep their state (scroll
position, focus, a running snippet) and are simply visible again once the terminal is larger.
(Invisible rather than merely covered: wide characters of an overlay break where the widgets
under it begin.)
"""

from __future__ import annotations

from textual.geometry import Size
from textual.widgets import Static

MIN_WIDTH = 60
MIN_HEIGHT = 16


def too_small(size: Size) -> bool:
    return size.width < MIN_WIDTH or size.height < MIN_HEIGHT


def too_small_message(size: Size) -> str:
    return (
        f"终端窗口太小（当前 {size.width}×{size.height}）\n"
        f"请放大到至少 {MIN_WIDTH}×{MIN_HEIGHT}，放大后回到原处\n"
        "进度已保存 · 按 q 退出"
    )


class TooSmall(Static):
    DEFAULT_CSS = """
    TooSmall {
        display: none;  /* shown by app.tcss while the screen is -too-small */
        position: absolute;
        overlay: screen;
        offset: 0 0;
        width: 100vw;
        height: 100vh;
        padding: 0 1;
        content-align: center middle;
        text-align: center;
        text-style: bold;
        background: $panel;
        color: $text;
    }
    """

    def __init__(self, size: Size) -> None:
        super().__init__(too_small_message(size), id="too-small")

    def show_size(self, size: Size) -> None:
        self.update(too_small_message(size))
