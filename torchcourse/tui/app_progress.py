"""Progress writes, never on the UI thread: each goes through the app's one
:class:`torchcourse.tui.writer.ProgressWriter` queue; reads see what is queued at once (the
reading place, the route). A mixin of :class:`torchcourse.tui.app.TorchCourseApp`."""

from __future__ import annotations


class ProgressWrites:
    def save_progress(self, what: str, fn, done=None, *, key: tuple | None = None) -> None:
        """Queue the write ``fn(store)`` (``what`` names it if it fails); from any thread."""
        try:
            self.writer.submit(what, fn, done, key=key)
        except RuntimeError:  # the app is closing: the writer has made its last try
            pass

    def save_place(self, chapter_id: str, part: int, line: int | None, offset: int, digest: str | None) -> None:
        """The exact reading place for 继续; reads see it at once, the store when it lands."""
        route = self.store.get_route() or ""  # the route it was read on (a queued switch included)
        self.store.pending_place = {"chapter": chapter_id, "part": part, "line": line,
                                    "offset": max(0, offset) if line is not None else 0,
                                    "digest": digest if line is not None else None, "route": route}
        self.save_progress(f"阅读位置（{chapter_id} 章）",
                           lambda s: s.set_position(chapter_id, part, line=line, offset=offset, digest=digest, route=route),
                           key=("place", chapter_id))  # per chapter: leaving one for another keeps both

    def _writes_landed(self) -> None:
        """Everything queued is written: the home screen, when on top, shows the stored state."""
        screen = self.screen_stack[0] if self.screen_stack else None
        refresh = getattr(screen, "refresh_data", None)
        if refresh is not None and screen is self.screen and screen.is_mounted:
            refresh()

    def set_route(self, route_id: str) -> None:
        route = self.course.route(route_id)
        if route is None:
            return
        self.store.pending_route = route_id
        self.save_progress(f"路线切换（{route.id} {route.name}）", lambda s: s.set_route(route_id), key=("route",))
        self.notify(f"已切换到路线 {route.id}：{route.name}（已读的章节照样算数）")
        home = self.screen_stack[0]
        refresh = getattr(home, "refresh_data", None)
        if refresh is not None and home.is_mounted:
            refresh()

    def after_progress(self, chapter_id: str, done=None) -> None:
        """A break point was reached or a quiz ended: let the quiz rules mark completion."""
        try:
            from torchcourse.quiz.completion import update_completion
        except ImportError:
            return
        course = self.course
        self.save_progress(f"{chapter_id} 章的完成状态", lambda s: update_completion(course, s, chapter_id), done)
