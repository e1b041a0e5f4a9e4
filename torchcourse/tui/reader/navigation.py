"""The reader's ways elsewhere: links, the table of contents, neighbouring chapters, home, the quiz.

Owns: following a course link (here or in another chapter, at its section), the links on
screen and ``l``'s list of them, ``t`` (the TOC), ``[`` / ``]`` (the route's neighbours), ``m``
(the quiz) and Esc (home).

May call: :class:`~.layout.ChapterLayout` (jumps, ``part_view``) and :class:`~.positions.Positions`
(the view, the part at its top); the host
screen's Textual API (``app`` for ``open_chapter`` / ``open_quiz`` / ``go_home`` and dialogs,
``notify``, ``run_worker``). Never the screen module, the reading place or snippets
(``tests/test_layers.py``).
"""

from __future__ import annotations

from torchcourse.tui.links import Link, course_link
from torchcourse.tui.reader.blocks import Prose
from torchcourse.tui.reader.layout import ChapterLayout
from torchcourse.tui.reader.positions import Positions
from torchcourse.tui.summary import neighbour


class Navigation:
    """Links and moves out of (or across) the open chapter (see the module docstring)."""

    def __init__(self, screen, layout: ChapterLayout, positions: Positions) -> None:
        self.screen = screen  # the host: its Textual API
        self.layout = layout
        self.positions = positions
        self.chapter = layout.chapter

    def _jump(self, job) -> None:
        self.screen.run_worker(job, group="jump", exclusive=True)

    def back(self) -> None:
        """Esc: back to the view a jump was made from (the app's back stack), else home."""
        self.screen.app.action_back()

    def toc(self) -> None:
        from torchcourse.tui.screens.toc import TocScreen

        def chosen(target) -> None:
            if target is None:
                return
            kind, value = target
            self.screen.app.push_back()  # a jump: Esc comes back here, the place stays
            if kind == "break":
                self.screen.visit(part=value)
            else:
                self.screen.visit(line=value)

        self.screen.app.push_screen(TocScreen(self.chapter), chosen)

    def absent_actions(self) -> frozenset[str]:
        """Keys the key bar leaves out in this chapter: the quiz without a checkpoint, ] at the
        route's end (walk L7: the appendix offered both and each only said no)."""
        app = self.screen.app
        absent = set()
        if not app.has_quiz(self.chapter.id):
            absent.add("quiz")
        if neighbour(app.course, app.store, self.chapter.id, 1) is None:
            absent.add("next_chapter")
        return frozenset(absent)

    def open_neighbour(self, step: int) -> None:
        from torchcourse.tui.summary import current_route, unwritten_in_route

        app = self.screen.app
        ch = neighbour(app.course, app.store, self.chapter.id, step)
        if ch is None:
            route = current_route(app.course, app.store)
            name = f"路线 {route.id} 上" if route is not None else "这份课程里"  # a space after the id (review-00)
            skipped = "（还没写好的章节会跳过）" if unwritten_in_route(app.course, route) else ""
            self.screen.notify(f"{name}没有" + ("下一章" if step > 0 else "上一章") + f"了{skipped}。")
            return
        app.open_chapter(ch.id)

    def quiz(self) -> None:
        self.screen.app.open_quiz(self.chapter.id)

    def follow_link(self, href: str) -> None:
        """A course link was clicked or picked: open its chapter at its section (or jump here)."""
        screen, app = self.screen, self.screen.app
        link = course_link("", href)
        if link is None:
            screen.notify(f"这个链接不在教程里：{href}")
            return
        if link.chapter is None or link.chapter == self.chapter.id:
            if link.anchor is None:
                self.positions.body.scroll_home(animate=False, immediate=True)
                return
            line = self.chapter.anchor_line(link.anchor)
            if line is None:
                screen.notify(f"本章没有 #{link.anchor} 这一节。", severity="warning")
                return
            app.jump_to(self.chapter.id, line=line)
            return
        ch = app.written_chapter(link.chapter)
        if ch is None:
            return
        anchor = link.anchor
        if anchor is not None and ch.anchor_line(anchor) is None:
            screen.notify(f"第 {ch.id} 章里没有 #{anchor} 这一节，从本章开头打开。", severity="warning")
            anchor = None
        app.jump_to(ch.id, anchor=anchor)  # a jump: Esc comes back here, the place stays

    def visible_links(self) -> list[Link]:
        """Course links of the prose on screen, top to bottom (the whole visible part if none is on screen)."""
        top, bottom = self.positions.view_range()
        out: list[Link] = []
        for prose in self.positions.body.query(Prose):
            if not prose.links:
                continue
            y = self.positions.y(prose)
            if y < bottom and y + prose.outer_size.height > top:
                out.extend(prose.links)
        if not out:
            pv = self.layout.part_view(self.positions.part_at_top())
            for prose in pv.query(Prose):
                out.extend(prose.links)
        return out

    def links(self) -> None:
        from torchcourse.tui.screens.toc import LinksScreen

        links = self.visible_links()
        if not links:
            self.screen.notify("这一屏没有可以打开的链接。")
            return

        def chosen(link: Link | None) -> None:
            if link is not None:
                self.follow_link(link.href)

        self.screen.app.push_screen(LinksScreen(links, self.screen.app.course, self.chapter), chosen)
