"""The app's terminal: a closed window (SIGHUP) saves before the process ends, SIGTERM quits
the way q does, and a terminal below the minimum size is covered by :class:`TooSmall` (keys do
nothing behind it except q and Ctrl+C). A mixin of :class:`torchcourse.tui.app.TorchCourseApp`."""

from __future__ import annotations

from textual import events
from textual.geometry import Size

from torchcourse.tui.widgets.toosmall import TooSmall, too_small


class TerminalWatch:
    def _end_on_hangup(self) -> None:
        """A closed terminal window (SIGHUP) saves what the learner did before the process ends.

        Its default ends the process on the spot: a break point reached a moment before the
        window closed showed 已记下 and could be lost while its write was still queued (a
        fresh-clone CI run lost one; the window is a few milliseconds). Textual's own exit cannot finish then (it waits to write
        to a terminal that is gone), so the handler writes the reading place and everything
        queued, stops the snippets and ends the process itself. SIGTERM (a ``kill``, the
        terminal still there) ends the app the way q does."""
        import asyncio
        import signal

        loop = asyncio.get_running_loop()
        handlers = ((signal.SIGHUP, self._terminal_gone), (signal.SIGTERM, lambda: self.call_later(self.action_quit)))
        for sig, handler in handlers:
            try:
                loop.add_signal_handler(sig, handler)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such signal
                pass

    def _terminal_gone(self) -> None:
        import os

        try:
            try:
                self.save_reading_place()
            finally:
                self.on_unmount()  # the end every way out has: snippets stopped, the queue written
        finally:
            os._exit(1 if self.unsaved_at_exit else 0)

    def on_resize(self, event: events.Resize) -> None:
        self.guard_size(event.size)  # runs before App._on_resize updates self.size

    def guard_size(self, size: Size | None = None) -> None:
        """Cover the current screen with :class:`TooSmall` while the terminal is too small.

        Nothing is popped or rebuilt: the screens underneath keep their state, and the notice
        goes as soon as the terminal is large enough again.
        """
        size = size or self.size
        self.too_small = small = too_small(size)
        for screen in self.screen_stack:
            screen.set_class(small, "-too-small")  # hides its widgets (their layout and state stay)
            for notice in screen.query_children(TooSmall):
                notice.show_size(size)
        if small and self.screen.is_attached and not self.screen.query_children(TooSmall):
            self.screen.mount(TooSmall(size))

    async def on_event(self, event: events.Event) -> None:
        """While the notice shows, keys do nothing behind it, except q and Ctrl+C, which quit."""
        if self.too_small and isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded:
            if isinstance(event, events.Key) and event.key in ("q", "ctrl+c"):
                await self.action_quit()
            return
        await super().on_event(event)

    def on_app_focus(self, event: events.AppFocus) -> None:
        """Back to this window (a browser tab, a terminal): the home screen reads the progress again,
        which another tab or terminal on the same progress may have moved (继续's label)."""
        refresh = getattr(self.screen, "refresh_data", None)
        if refresh is not None and self.screen.is_mounted and getattr(self.screen, "_shown_once", False):
            refresh()
