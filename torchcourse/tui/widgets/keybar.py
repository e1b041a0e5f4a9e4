"""A one-line key bar built from :mod:`torchcourse.tui.keys` (clickable; never recomposes).

Textual's Footer recomposes whenever bindings change (every focus change, every mounted
focusable widget); a single Static keeps the reader's first screen cheap.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from torchcourse.tui import keys


def _item(k: keys.Key, ns: str) -> Content:
    return Content.from_markup(
        f"[@click={ns}.{k.action}][bold $accent]$key[/] $label[/]", key=keys.display_key(k), label=k.label
    )


def keybar_content(scope: str) -> Content:
    """The screen's own keys, then (home only) search/lookup/review, then help and quit."""
    items = [_item(k, "screen") for k in keys.KEYS if k.scope == scope and k.show]
    if scope == "首页":
        items += [_item(k, "app") for k in keys.KEYS if k.action in keys.HOME_FOOTER_EXTRA]
    items += [_item(k, "app") for k in keys.KEYS if k.scope == "全局" and k.show]
    return Content("  ").join(items)


class KeyBar(Static):
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

    def __init__(self, scope: str, **kwargs) -> None:
        super().__init__(keybar_content(scope), **kwargs)
