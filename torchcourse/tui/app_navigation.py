"""Moving between views: opening a chapter where it was left, jumps (search, lookup, a link,
回看) that move the view and never the saved place, and Esc back to the view a jump was made
from. A mixin of :class:`torchcourse.tui.app.TorchCourseApp` (``course``, ``store``,
``runner``, ``back_stack`` and the search state are the app's)."""

from __future__ import annotations


class Navigation:
    def save_reading_place(self) -> None:
        """Every way out of the reader (home, another chapter, quit) keeps the exact place read."""
        for screen in self.screen_stack:
            save = getattr(screen, "save_place", None)
            if save is not None and screen.is_mounted:
                save()

    def go_home(self) -> None:
        self.save_reading_place()
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def written_chapter(self, chapter_id: str, planned: str = "。先读别的章节吧。"):
        """The chapter, when it exists and is written; otherwise say why (``planned`` ends that notice)."""
        ch = self.course.chapter(chapter_id)
        if ch is None:
            self.notify(f"没有第 {chapter_id} 章。", severity="error")
        elif not ch.available:
            self.notify(f"{ch.id} {ch.title} 暂未上线（还在写）{planned}", severity="warning")
        else:
            return ch
        return None

    def top_reader(self):
        """The reader under whatever dialog is on top (None: no chapter is open)."""
        from torchcourse.tui.reader import ReaderScreen

        return next((s for s in reversed(self.screen_stack) if isinstance(s, ReaderScreen)), None)

    def push_back(self) -> None:
        """Remember the open reader's view, so that Esc after a jump comes back to it."""
        reader = self.top_reader()
        if reader is None or not reader.is_mounted:
            self.back_stack.append({"home": True})
            return
        place = reader.current_place() if reader.loaded else None
        if place is None:
            place = (reader.chapter_layout.start_part, reader.chapter_layout.target_line, reader.chapter_layout.target_offset)
        self.back_stack.append({"chapter": reader.chapter.id, "place": place, "visiting": reader.visiting})

    def mark_search(self) -> None:
        """The active search's term is marked in the prose of every open reader (like less)."""
        from torchcourse.tui.reader.blocks import Prose, SearchMark

        term = self.search_term if self.search_hits else ""
        if SearchMark.term == term:
            return
        SearchMark.term = term
        for screen in self.screen_stack:
            for prose in screen.query(Prose) if getattr(screen, "chapter", None) is not None else ():
                prose.refresh()

    def jump_to(self, chapter_id: str, *, line: int | None = None, anchor: str | None = None,
                remember: bool = True) -> None:
        """A jump (search, lookup, a link, 回看): moves the view, never the saved place or a break
        reached; the chapter opens as a visit until the learner reads on there (see ReadingPlace).
        ``remember=False``: n/N between one search's hits, whose Esc goes back to before the search."""
        ch = self.written_chapter(chapter_id)
        if ch is None:
            return
        self.mark_search()
        if remember or not self.back_stack:
            self.push_back()
        reader = self.top_reader()
        if reader is not None and reader.chapter.id == chapter_id and reader.loaded:
            while self.screen is not reader:  # a dialog (search, lookup) over it
                self.pop_screen()
            reader.visit(line=line, anchor=anchor)
            return
        self.open_chapter(chapter_id, line=line, anchor=anchor, visiting=True)

    def review_section(self, chapter_id: str, anchor: str | None) -> None:
        """The quiz results' 回看: the section opens over the results (a visit, like any jump);
        Esc closes it and the results list is there again (walk M1)."""
        from torchcourse.tui.reader import ReaderScreen

        ch = self.written_chapter(chapter_id)
        if ch is None:
            return
        if anchor is not None and ch.anchor_line(anchor) is None:
            anchor = None
        self.back_stack.append({"pop": True})
        self.prestart_runner(ch)
        self.push_screen(ReaderScreen(ch, anchor=anchor, visiting=True))

    def open_chapter(self, chapter_id: str, *, part: int = 0, line: int | None = None, anchor: str | None = None,
                     offset: int = 0, visiting: bool = False) -> None:
        from torchcourse.tui.reader import ReaderScreen

        ch = self.written_chapter(chapter_id)
        if ch is None:
            return
        self.go_home()  # saves the place of the chapter left (which may be this one)
        if part == 0 and line is None and anchor is None:
            # opened without a place (the chapter map, the palette, ] and [): where it was left
            from torchcourse.tui.summary import saved_place

            part, line, offset = saved_place(ch, self.store)
        self.prestart_runner(ch)  # before the screen is built: torch loads while the chapter mounts
        self.push_screen(ReaderScreen(ch, part=part, line=line, anchor=anchor, offset=offset, visiting=visiting))

    def prestart_runner(self, chapter) -> None:
        """Start the warm runner in the background for a chapter with runnable snippets (home
        starts nothing); each reader on the stack shows its state changes in its run lines."""
        prestart = getattr(self.runner, "prestart", None)
        if prestart is None or not any(s.runnable for s in chapter.snippets):
            return

        def show(state: str) -> None:
            for screen in self.screen_stack:
                if hasattr(screen, "show_runner_state"):  # a reader
                    screen.show_runner_state(state)

        def changed(state: str) -> None:  # from the runner's thread
            try:
                self.call_from_thread(show, state)
            except Exception:  # the app is closing
                pass

        prestart(changed)

    def action_back(self) -> None:
        from torchcourse.tui.reader import ReaderScreen

        if isinstance(self.screen, ReaderScreen) and self.back_stack:
            # after a jump: back to the view it was made from (a browser's Back, less's '')
            back = self.back_stack.pop()
            if not self.back_stack:
                self.search_hits = []
                self.mark_search()
            if back.get("home"):
                self.go_home()
                return
            if back.get("pop"):  # a reader opened over another screen (the quiz results)
                self.pop_screen()
                return
            part, line, offset = back["place"]
            reader = self.screen
            if reader.chapter.id == back["chapter"] and reader.loaded:
                reader.visit(line=line, part=part, offset=offset, visiting=back["visiting"])
                return
            if self.course.chapter(back["chapter"]) is not None:
                stack = self.back_stack
                self.open_chapter(back["chapter"], part=part, line=line, offset=offset, visiting=back["visiting"])
                self.back_stack = stack
                return
        self.back_stack = []
        self.search_hits = []
        self.mark_search()
        if len(self.screen_stack) > 1:
            # Esc in the reader lands here (a global binding): the place read is saved first, or
            # a scroll less than a second old (the rest timer) was lost with the screen
            save = getattr(self.screen, "save_place", None)
            if save is not None and self.screen.is_mounted:
                save()
            self.pop_screen()
