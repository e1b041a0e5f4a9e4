"""``NO_COLOR``: the terminal's own colours, light or dark (walk L10).

Textual honours ``NO_COLOR`` by turning every colour into a grey (its ``Monochrome`` filter),
which paints a near-black background (``48;5;233``) on every row: on a light terminal the app
forces a dark look. The learner who sets ``NO_COLOR`` asked for no colour at all, so the grey
filter is swapped for Textual's ``NoColor`` one: no foreground or background is sent, the
terminal's defaults show through, and bold, underline and reverse still mark what they mark.
A list's cursor row is marked only by its colour (the theme's ``block-cursor-background``), so a
segment painted in that colour is sent in reverse video instead (walk L1: the route picker's
cursor was invisible).
"""

from __future__ import annotations


def use_terminal_colours(app) -> bool:
    """Under ``NO_COLOR``, replace the app's grey filter by one that sends no colour. True if done."""
    if not getattr(app, "no_color", False):
        return False
    try:
        from textual.filter import Monochrome, NoColor
    except ImportError:  # pragma: no cover  (a Textual without them: its own NO_COLOR handling stays)
        return False
    filters = getattr(app, "_filters", None)
    if not isinstance(filters, list):
        return False
    app._filters = [terminal_colours(app, NoColor) if isinstance(f, Monochrome) else f for f in filters]
    return True


CURSOR_DISTANCE = 48  # RGB distance (sum of the three) within which a background is the cursor's colour


def terminal_colours(app, no_color_class):
    """A ``NoColor`` filter that sends the cursor's colour as reverse video."""
    from rich.style import Style
    from textual.color import Color

    reverse = Style(reverse=True)

    class TerminalColours(no_color_class):
        def __init__(self) -> None:
            super().__init__()
            self._theme: str | None = None
            self._cursor: tuple[int, int, int] | None = None

        def cursor_colour(self) -> tuple[int, int, int] | None:
            theme = getattr(app, "theme", None)
            if theme != self._theme:
                self._theme = theme
                try:
                    self._cursor = Color.parse(app.theme_variables["block-cursor-background"]).rgb
                except Exception:  # a theme without it, or a value Textual cannot parse: bold alone marks the cursor
                    self._cursor = None
            return self._cursor

        def apply(self, segments, background):
            cursor = self.cursor_colour()
            if cursor is not None:
                marked = []
                for segment in segments:
                    style = segment.style
                    if style is not None and style.bgcolor is not None and not style.bgcolor.is_default:
                        r, g, b = style.bgcolor.get_truecolor()
                        if abs(r - cursor[0]) + abs(g - cursor[1]) + abs(b - cursor[2]) <= CURSOR_DISTANCE:
                            segment = segment.__class__(segment.text, style + reverse, segment.control)
                    marked.append(segment)
                segments = marked
            return super().apply(segments, background)

    return TerminalColours()
