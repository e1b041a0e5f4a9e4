"""``NO_COLOR``: the terminal's own colours, light or dark (walk L10).

Textual honours ``NO_COLOR`` by turning every colour into a grey (its ``Monochrome`` filter),
which paints a near-black background (``48;5;233``) on every row: on a light terminal the app
forces a dark look. The learner who sets ``NO_COLOR`` asked for no colour at all, so the grey
filter is swapped for Textual's ``NoColor`` one: no foreground or background is sent, the
terminal's defaults show through, and bold, underline and reverse still mark what they mark.
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
    app._filters = [NoColor() if isinstance(f, Monochrome) else f for f in filters]
    return True
