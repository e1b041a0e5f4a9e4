"""The Textual app: :func:`make_app` builds it from injected objects, :func:`run_app` is ``torchcourse``.

Its parts by role: the terminal (app_terminal), moving between views (app_navigation), progress
writes (app_progress) and the quizzes (app_quizzes); this module starts, ends and wires them.

The app process never imports torch: snippets run through :class:`torchcourse.runner.Runner`,
which drives separate processes, and it is created lazily on the first run.
"""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import Callable

from textual import work
from textual.app import App
from textual.screen import Screen

from torchcourse.course import Course
from torchcourse.tui import gcpolicy, keys, nocolor, warmup
from torchcourse.tui.app_navigation import Navigation
from torchcourse.tui.app_progress import ProgressWrites
from torchcourse.tui.app_quizzes import Quizzes
from torchcourse.tui.app_terminal import TerminalWatch
from torchcourse.tui.lazyrunner import LazyRunner, default_runner_factory

INSTALL_TORCH = "pip install torch==2.13.0"


def _course_commands():
    """The palette provider, imported only when the palette opens (textual.command is slow to import)."""
    from torchcourse.tui.commands import CourseCommands

    return CourseCommands


class TorchCourseApp(TerminalWatch, Navigation, ProgressWrites, Quizzes, App):
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
