"""The Textual app: :func:`make_app` builds it from injected objects, :func:`run_app` is ``torchcourse``.

The app process never imports torch: snippets run through :class:`torchcourse.runner.Runner`,
which drives separate processes, and it is created lazily on the first run.
"""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import Callable

from textual import events, work
from textual.app import App
from textual.geometry import Size
from textual.screen import Screen

from torchcourse.course import Course
from torchcourse.tui import gcpolicy, keys, nocolor, warmup
from torchcourse.tui.lazyrunner import LazyRunner, default_runner_factory
from torchcourse.tui.widgets.toosmall import TooSmall, too_small

INSTALL_TORCH = "pip install torch==2.13.0"


def _course_commands():
    """The palette provider, imported only when the palette opens (textual.command is slow to import)."""
    from torchcourse.tui.commands import CourseCommands

    return CourseCommands


class TorchCourseApp(App):
    CSS_PATH = Path(__file__).parent / "app.tcss"
    TITLE = "torchcourse"
    BINDINGS = keys.bindings("全局")
    COMMANDS = App.COMMANDS | {_course_commands}
    COMMAND_PALETTE_BINDING = "ctrl+p"
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, course: Course, store, runner=None, *, notice: str | None = None,
                 runner_factory: Callable[[], object] | None = None, today: date | None = None,
                 css_cache_dir: Path | None = None) -> None:
        gcpolicy.keep_startup()
        if css_cache_dir is not None:  # parsed Textual CSS from the last run (~12 ms of the first frame)
            from torchcourse.tui import csscache

            csscache.install(css_cache_dir)
        super().__init__()
        nocolor.use_terminal_colours(self)  # NO_COLOR: no painted grey background (walk L10)
        self.course = course
        self._problems_at_start = len(course.problems)  # a lazy load finds the rest later (prewarm)
        from torchcourse.tui.writer import PendingView, ProgressWriter

        # every progress write goes through one queue served off the UI thread, in order
        self.writer = ProgressWriter(store, notify=self.notify, landed=self._writes_landed)
        self.store = PendingView(store, self.writer)  # reads see the queued route and place
        # views left by a jump (search, lookup, a link, the TOC, 回看): Esc goes back to them
        self.back_stack: list[dict] = []
        self.search_hits: list = []  # the active search's hits (n / N step through them), its index
        self.search_index = 0
        self.search_term = ""
        self.unsaved_at_exit: list[str] = []
        self.quiz_seed: int | None = None  # None: each quiz attempt shuffles its choices afresh (tests fix it)
        if runner is None:
            runner = LazyRunner(runner_factory or (lambda: default_runner_factory(course.id, course.preload, getattr(course, "data", ()),
                                                                                  getattr(course, "recorded", None))))
        self.runner = runner
        self.notice = notice
        self._today = today
        self.too_small = False  # the terminal is below the minimum size: TooSmall covers the screen
        import os

        self.learner = os.environ.get("TORCHCOURSE_LEARNER", "")  # set by serve --users for each learner's app
        if course.title:
            self.title = f"{course.title} · {self.learner}" if self.learner else course.title

    def get_system_commands(self, screen: Screen):
        """Textual's own palette entries (Theme, Keys, Maximize, Screenshot…) are English and lead
        to English screens: the palette offers quit only (help is among the course's commands)."""
        from textual.app import SystemCommand

        yield SystemCommand("退出", "退出程序（进度随时已保存）", self.action_quit)

    def action_command_palette(self) -> None:
        from torchcourse.tui.commands import CoursePalette

        if self.use_command_palette and not CoursePalette.is_open(self):
            self.push_screen(CoursePalette(id="--command-palette", placeholder="输入章节名或它讲什么、测验、路线、报错反查…（阅读页外也可以直接按 e 反查报错）"))

    def today(self) -> date:
        return self._today or date.today()

    def get_default_screen(self) -> Screen:
        from torchcourse.tui.screens.home import HomeScreen

        return HomeScreen(id="home")

    def on_mount(self) -> None:
        self.writer.attach()
        self._end_on_hangup()
        if self.notice:
            self.notify(self.notice, severity="warning", timeout=15)
        self.screen_change_signal.subscribe(self, lambda _screen: self.call_later(self.guard_size))
        self.guard_size()

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

    # -- a terminal below the minimum size ----------------------------------------------------

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

    def on_ready(self) -> None:
        gcpolicy.started()  # the first frame is out: the collector is back (start_app paused it)
        self.prewarm()

    @work(thread=True, exit_on_error=False, group="prewarm")
    def prewarm(self) -> None:
        """While the learner looks at the home screen: parse the chapters a first start left for
        later (the home screen needs none of their blocks), import the reader, warm Pygments."""
        from torchcourse.course import parse_pending

        parse_pending(self.course)
        if len(self.course.problems) > self._problems_at_start:  # found since: the start-up notice again
            msg = problems_notice(self.course)
            if msg:
                self.call_from_thread(self.notify, msg, severity="warning", timeout=15)
        from textual.highlight import highlight

        import torchcourse.tui.reader  # noqa: F401

        highlight("import torch\nprint(1)", language="python")
        warmup.warm_rendering(self.course, max(40, self.size.width - 8))
        self.call_from_thread(warmup.preload_reader_css, self)
        from torchcourse.tui import csscache

        csscache.save()  # what this run parsed (the reader's stylesheet included), for the next start

    # -- navigation ---------------------------------------------------------------------------

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

    # -- progress writes (never on the UI thread) ---------------------------------------------

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

    # -- global actions -----------------------------------------------------------------------

    def action_help(self) -> None:
        from torchcourse.tui.screens.dialogs import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_search(self) -> None:
        from torchcourse.tui.screens.search import SearchScreen

        if not isinstance(self.screen, SearchScreen):
            self.push_screen(SearchScreen())

    def action_lookup(self) -> None:
        from torchcourse.tui.screens.lookup import LookupScreen

        if not isinstance(self.screen, LookupScreen):
            self.push_screen(LookupScreen())

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

    def action_review(self) -> None:
        try:
            from torchcourse.tui.screens.quiz import ReviewScreen
        except ImportError:
            self.notify("复习功能还没装好。", severity="warning")
            return
        self.push_screen(ReviewScreen(self.course, self.store, self.runner, today=self.today(), seed=self.quiz_seed), self._quiz_done)

    def has_quiz(self, chapter_id: str) -> bool:
        """The chapter is written and its checkpoint file exists."""
        ch = self.course.chapter(chapter_id)
        return ch is not None and ch.available and ch.checkpoint is not None and ch.checkpoint.is_file()

    def open_quiz(self, chapter_id: str) -> None:
        ch = self.written_chapter(chapter_id, "，还没有检查点测验。")
        if ch is None:
            return
        if not self.has_quiz(chapter_id):
            self.notify(f"{ch.id} {ch.title} 没有检查点测验。")
            return
        try:
            from torchcourse.tui.screens.quiz import QuizScreen
        except ImportError:
            self.notify("测验界面还没装好。", severity="warning")
            return
        self.push_screen(QuizScreen(self.course, chapter_id, self.store, self.runner, seed=self.quiz_seed), self._quiz_done)

    def _quiz_done(self, outcome) -> None:
        if outcome is None:
            return
        cid = getattr(outcome, "chapter_id", None)
        if cid:
            self.after_progress(cid)
        goto = getattr(outcome, "goto", None)
        if goto:
            self.jump_to(goto[0], anchor=goto[1] or None)

    async def action_quit(self) -> None:
        self.save_reading_place()
        self.exit(0)

    def on_unmount(self) -> None:
        """Every way out (q, Ctrl+C, a closed terminal) ends here: kill running snippets now.

        A snippet blocks its worker thread, and asyncio waits for those threads before
        ``app.run()`` returns; closing the runner ends them, so quitting never waits for a
        snippet and leaves no process behind.
        """
        close = getattr(self.runner, "close", None)
        if close is not None:
            close()
        self.unsaved_at_exit = self.writer.close()  # one last try for what is still queued


def problems_notice(course: Course) -> str | None:
    """What the app says when the course has content problems (the count `torchcourse check` gives)."""
    from torchcourse.check import all_problems

    problems = all_problems(course)
    if not problems:
        return None
    extra = f"（另有 {len(problems) - 1} 处）" if len(problems) > 1 else ""
    return f"课程内容有问题：{problems[0]}{extra}；运行 torchcourse check 查看全部。"


def make_app(course: Course, store, runner=None, *, notice: str | None = None,
             runner_factory: Callable[[], object] | None = None, today: date | None = None,
             css_cache_dir: Path | None = None) -> TorchCourseApp:
    """Build the app from injected objects; tests build the identical app with a tmp store."""
    return TorchCourseApp(course, store, runner, notice=notice, runner_factory=runner_factory, today=today,
                          css_cache_dir=css_cache_dir)


def run_app(args) -> int:
    """``torchcourse`` with no subcommand: load the course, open the store, run the app."""
    from torchcourse import paths
    from torchcourse.course import CourseError, load_course
    from torchcourse.progress import StoreError, open_store

    root = paths.content_dir(getattr(args, "content", None))
    try:
        # lazy: on a first start the chapters' blocks are parsed after the home screen is up
        course = load_course(root, cache_dir=paths.cache_dir(), lazy=True)
    except CourseError as exc:
        print(f"torchcourse: {exc}", file=sys.stderr)
        return 2
    try:
        from torchcourse.course.loader import course_aliases_of

        store, notice = open_store(course_id=course.id, aliases=course_aliases_of(course.root), root=course.root)
    except StoreError as exc:
        print(f"torchcourse: {exc}", file=sys.stderr)
        return 1
    if course.problems:  # only then is the whole check worth its time at start-up
        msg = problems_notice(course)
        if msg:
            notice = f"{notice}\n{msg}" if notice else msg
    app = make_app(course, store, notice=notice, css_cache_dir=paths.cache_dir())
    try:
        app.run()
    finally:
        try:
            app.runner.close()
        finally:
            try:
                unsaved = app.unsaved_at_exit or app.writer.close()
            finally:
                store.close()
    if unsaved:
        print(f"torchcourse: 以下进度没能保存：{'；'.join(unsaved)}", file=sys.stderr)
    return int(app.return_code or 0)
