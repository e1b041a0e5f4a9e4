"""A screen that does not lay itself out, or style itself, twice for nothing.

- Textual posts a ``Resize`` to a screen when its first layout shows it, and its handler lays
  the screen out again at the same size, and every background screen too (the home screen under
  the reader). That second pass repeats the whole first one. A terminal that really changed size
  still gets its new layout: only a ``Resize`` to the size the screen is already laid out at is
  dropped.
- The first ``ScreenResume`` (the screen was just pushed) re-applies the stylesheet to every
  widget, which were styled a moment ago when they were mounted (~0.5 ms a widget). Later
  resumes (back from a dialog, after a theme change) still refresh the styles.
"""

from __future__ import annotations

from textual import events
from textual.screen import Screen


class LeanScreen(Screen):
    _resumed_before = False

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        if not self._resumed_before:
            self._resumed_before = True
            event.refresh_styles = False  # styled when mounted, a moment ago
        super()._on_screen_resume(event)
        event.prevent_default()  # done: the MRO walk must not run Screen's handler a second time

    async def _on_resize(self, event: events.Resize) -> None:
        if self.is_attached and self._compositor.size == event.size:
            event.stop()
            event.prevent_default()  # Screen._on_resize would lay it all out again
            return
        await super()._on_resize(event)
        event.prevent_default()  # done: the MRO walk must not run Screen._on_resize a second time
