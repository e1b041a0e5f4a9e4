"""A one-line key bar built from :mod:`torchcourse.tui.keys` (clickable; never recomposes).

Textual's Footer recomposes whenever bindings change (every focus change, every mounted
focusable widget); a single widget keeps the reader's first screen cheap. When the terminal is
narrow it leaves out the screen's last keys rather than cut the line: ``? 帮助`` and ``q 退出``
always show (the help screen lists every key).
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from torchcourse.tui import keys

GAP = Content("  ")


def _item(k: keys.Key, ns: str) -> Content:
    return Content.from_markup(
        f"[@click={ns}.{k.action}][bold $accent]$key[/] $label[/]", key=keys.display_key(k), label=k.label
    )


def keybar_items(scope: str, omit: frozenset[str] = frozenset()) -> tuple[list[Content], list[Content]]:
    """(the screen's keys, then home's search/lookup — left out from the end when narrow; help and
    quit). ``omit``: actions this screen has nothing for (the appendix has no quiz)."""
    optional = [_item(k, "screen") for k in keys.KEYS if k.scope == scope and k.show and k.action not in omit]
    if scope == "首页":
        optional += [_item(k, "app") for k in keys.KEYS if k.action in keys.HOME_FOOTER_EXTRA]
    always = [_item(k, "app") for k in keys.KEYS if k.scope == "全局" and k.show]
    return optional, always


def fit_items(optional: list[Content], always: list[Content], width: int) -> Content:
    """As many of ``optional`` (in order) as fit in ``width`` cells before ``always``."""
    room = width - sum(c.cell_length for c in always) - GAP.cell_length * (len(always) - 1)
    shown: list[Content] = []
    for item in optional:
        room -= item.cell_length + GAP.cell_length
        if room < 0:
            break
        shown.append(item)
    return GAP.join(shown + always)


class KeyBar(Widget):
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, scope: str, omit: frozenset[str] = frozenset(), **kwargs) -> None:
        super().__init__(**kwargs)
        self._optional, self._always = keybar_items(scope, omit)
        self._fitted: tuple[int, Content] | None = None

    def render(self) -> Content:
        width = self.content_region.width
        if self._fitted is None or self._fitted[0] != width:
            self._fitted = (width, fit_items(self._optional, self._always, width))
        return self._fitted[1]
