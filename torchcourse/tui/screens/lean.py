"""A screen that does not lay itself out twice for one size.

Textual posts a ``Resize`` to a screen when its first layout shows it, and its handler lays the
screen out again at the same size, and every background screen too (the home screen under the
reader). That second pass repeats the whole first one. A terminal that really changed size
still gets its new layout: only a ``Resize`` to the size the screen is already laid out at is
dropped.
"""

from __future__ import annotations

from textual import events
from textual.screen import Screen


class LeanScreen(Screen):
    async def _on_resize(self, event: events.Resize) -> None:
        if self.is_attached and self._compositor.size == event.size:
            event.stop()
            event.prevent_default()  # Screen._on_resize would lay it all out again
            return
        await super()._on_resize(event)
        event.prevent_default()  # done: the MRO walk must not run Screen._on_resize a second time
