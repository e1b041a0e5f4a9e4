"""A focusable, clickable action line (Enter or a click runs it) — a light stand-in for Button.

It wraps rather than cut its label when the terminal is narrow.

Button's CSS and rendering cost ~10 ms before the home screen's first frame; this is a Static.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Static


class ActionLine(Static, can_focus=True):
    DEFAULT_CSS = """
    ActionLine {
        height: auto;
        padding: 0 1;
        background: $boost;
        text-style: bold;
    }
    ActionLine:focus {
        background: $primary;
        color: $text;
    }
    ActionLine:disabled {
        color: $text-disabled;
    }
    """
    BINDINGS = [
        Binding("enter", "press", "打开", show=False),
        # ↑↓ move between the home's lines and lists, as the help screen promises
        Binding("down", "step(1)", show=False),
        Binding("up", "step(-1)", show=False),
    ]

    def __init__(self, label: str, action: str, **kwargs) -> None:
        super().__init__(label, **kwargs)
        self.action = action  # an action of the screen, e.g. "continue"

    @property
    def label(self) -> str:
        return str(self.content)

    @label.setter
    def label(self, value: str) -> None:
        self.update(value)

    async def action_press(self) -> None:
        if not self.disabled:
            await self.screen.run_action(self.action)

    def action_step(self, step: int) -> None:
        # the scrolling body around this line is focusable too: step over it, to a line or list
        chain = [w for w in self.screen.focus_chain if w not in self.ancestors]
        if self in chain:
            i = chain.index(self) + step
            if 0 <= i < len(chain):  # no wrapping: ↑ on the first line stays there
                chain[i].focus()

    async def on_click(self) -> None:
        await self.action_press()
