"""The reader screen: one chapter, mounted part by part (visible part first), with runnable snippets.

Owns: the keys (every ``action_*`` of the 阅读 scope), ``compose`` / ``on_mount`` / unmount, the
``loaded`` state and the benchmark's time stamps, and the wiring: it builds the parts, feeds
them the scroll watcher, the snippets' and editor's messages and worker errors, and runs the
loader. The parts are collaborator objects, each with its own state:

- :class:`~.positions.Positions` — where things are in the body (read-only);
- :class:`~.layout.ChapterLayout` (``chapter_layout``: Textual's ``layout`` is taken) — lazy
  mounting, rendering ahead, jumps;
- :class:`~.place.ReadingPlace` — reading credit, break points reached, the place for 继续;
- :class:`~.navigation.Navigation` — links, the TOC, neighbouring chapters, home, the quiz;
- :class:`~.snippets.Snippets` — choosing, running, editing and cancelling snippets;
- :class:`~.preview.Preview` — the chapter's file changed on disk: offer to reload it in place.

May call: every part of the package (it is the top of ``tests/test_layers.py``'s order: no part
imports it). The names tests, the app and ``readcredit`` use (``body``, ``part_tops``, ``_y``,
``banner``, ``save_place``, ``reading``…) are kept here as thin delegations.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from torchcourse.course.model import Chapter
from torchcourse.tui import gcpolicy, keys
from torchcourse.tui.links import Link
from torchcourse.tui.reader.blocks import PartView
from torchcourse.tui.reader.layout import ChapterLayout
from torchcourse.tui.reader.navigation import Navigation
from torchcourse.tui.reader.place import ReadingPlace
from torchcourse.tui.reader.positions import Positions
from torchcourse.tui.reader.preview import Preview
from torchcourse.tui.reader.snippets import Snippets
from torchcourse.tui.screens.lean import LeanScreen
from torchcourse.tui.widgets.banner import BreakBanner
from torchcourse.tui.widgets.keybar import KeyBar
from torchcourse.tui.widgets.snippet import SnippetHead, SnippetView

NARROW = 100  # below this width expected/actual outputs stack vertically (each column wraps)


class ReaderBody(VerticalScroll):
    """The chapter's scrolling body: its keys move the view at once, like ``less``.

    Textual animates a container's PgDn/PgUp, arrows and Home/End (50 rows a second: a 28-row page
    took 0.56 s, longer on a loaded machine, each frame a full repaint). A screen looked at while
    that scroll was under way stood between two pages, and the rows between it and the next page
    were on no screen: walk M7, seen with ``tmux capture-pane`` after each key, never headless
    (``Pilot.press`` waits for every animation to end). Now the screen a key leaves is its page."""

    def action_page_down(self) -> None:
        self.screen.read_on()
        self.scroll_page_down(animate=False)

    def action_page_up(self) -> None:
        self.scroll_page_up(animate=False)

    def action_scroll_down(self) -> None:
        self.screen.read_on()
        self.scroll_down(animate=False)

    def action_scroll_up(self) -> None:
        self.scroll_up(animate=False)

    def action_scroll_home(self) -> None:
        self.scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        self.scroll_end(animate=False)


class ReaderScreen(LeanScreen):
    CSS_PATH = Path(__file__).resolve().parent.parent / "reader.tcss"
    BINDINGS = keys.bindings("阅读")
    # focused after the first screen is painted: focusing restyles the body and all it holds
    AUTO_FOCUS = ""

    loaded: reactive[bool] = reactive(False)

    def __init__(self, chapter: Chapter, *, part: int = 0, line: int | None = None, anchor: str | None = None,
                 offset: int = 0, visiting: bool = False) -> None:
        super().__init__()
        self.chapter = chapter
        # opened by a jump (search, lookup, a link, 回看): the view moves, the saved place and the
        # breaks reached do not, until the learner reads on here (Space, PgDn, j, ↓) or presses s
        self.visiting = visiting
        self.positions = positions = Positions(self, chapter)
        self.chapter_layout = layout = ChapterLayout(self, positions, part=part, line=line, anchor=anchor, offset=offset)
        self.place = ReadingPlace(self, layout, positions)
        self.navigation = Navigation(self, layout, positions)
        self.snippets = Snippets(self, positions)
        self.preview = Preview(self)  # the chapter's file changed on disk: R reloads it in place
        self.loaded_event = threading.Event()  # set with ``loaded``: a worker thread can wait for it
        # perf_counter() stamps for benchmarks/bench_app.py: opened, first part painted, all mounted
        self.created_at = time.perf_counter()
        self.created_cpu = time.thread_time()  # CPU of the UI thread: robust on a busy machine
        self.loaded_at: float | None = None
        self.rendered_ahead = False  # every block's lines rendered after loading (see ChapterLayout.prerender)

    # -- the frame ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """The frame and the first screen only: the segments from where the learner lands, about a
        screen of them, in one layout. The rest of the chapter (other parts, their banners, the
        chapter's end) is mounted after the first paint, so its cost does not grow with the chapter."""
        self.chapter_layout.load_edits()
        self.set_class(self.app.size.width < NARROW, "-narrow")
        ch = self.chapter
        yield Static(f"{ch.id} · {ch.title} · ⏱ {ch.minutes} 分钟", id="reader-title")
        with ReaderBody(id="body"):
            yield from self.chapter_layout.first_parts()
        yield KeyBar("阅读", omit=self.navigation.absent_actions())

    def on_mount(self) -> None:
        self.watch(self.body, "scroll_y", self._scrolled, init=False)
        self.place.start()
        self.preview.start()
        self.load_parts()
        self._prestart_runner()

    RUNNER_NOTES = {"starting": "⏳ 运行环境预热中（torch 加载完，第一次运行就和以后一样快）", "ready": "⚡ 运行环境已就绪"}

    def _prestart_runner(self) -> None:
        """The warm runner starts in the background when a chapter with runnable snippets opens
        (``app.open_chapter`` starts it before building this screen; this covers a screen pushed
        otherwise); the run lines show its state."""
        runner = self.app.runner
        if getattr(runner, "prestart", None) is None or not any(s.runnable for s in self.chapter.snippets):
            return
        self.show_runner_state(getattr(runner, "state", "idle"))  # this app's state, not the last one's
        self.app.prestart_runner(self.chapter)

    def show_runner_state(self, state: str) -> None:
        note = self.RUNNER_NOTES.get(state, "")
        if SnippetHead.runner_note == note:
            return
        SnippetHead.runner_note = note
        for view in self.query(SnippetView):
            view.refresh_head()

    def on_screen_resume(self) -> None:
        if self.loaded:  # back from a quiz: the banners and the end panel say the new state
            self.place.show_state()

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")

    def on_unmount(self) -> None:
        gcpolicy.release_later(self)  # the chapter's widgets are garbage now

    @work(exclusive=True, group="load", exit_on_error=False)
    async def load_parts(self) -> None:
        await self.chapter_layout.mount_chapter()
        self.loaded = True
        self.loaded_at = time.perf_counter()
        self.loaded_event.set()
        self.place.chapter_loaded()
        await self.chapter_layout.prerender()
        gcpolicy.keep()  # the lines rendered ahead too
        self.rendered_ahead = True

    def _scrolled(self, old: float, new: float) -> None:
        self.chapter_layout.scrolled_at = time.monotonic()
        self.place.scrolled(new)

    # -- what the app, readcredit, the benchmark and the tests ask of the reader ---------------------

    @property
    def body(self) -> VerticalScroll:
        return self.positions.body

    @property
    def reading(self):
        return self.place.reading

    @property
    def first_paint_at(self) -> float | None:
        return self.chapter_layout.first_paint_at

    @property
    def first_paint_cpu(self) -> float | None:
        return self.chapter_layout.first_paint_cpu

    def part_view(self, index: int) -> PartView:
        return self.chapter_layout.part_view(index)

    def parts_mounted(self) -> list[PartView]:
        return self.positions.parts_mounted()

    def part_tops(self) -> list[tuple[PartView, int]]:
        return self.positions.part_tops()

    def snippet_tops(self) -> list[tuple[SnippetView, int]]:
        return self.positions.snippet_tops()

    def blocks_in(self, top: int, bottom: int):
        return self.positions.blocks_in(top, bottom)

    def banner(self, k: int) -> BreakBanner | None:
        return self.positions.banner(k)

    def visible_banners(self) -> list[BreakBanner]:
        return self.positions.visible_banners()

    def widget_for_line(self, line: int) -> Widget | None:
        return self.positions.widget_for_line(line)

    def _y(self, widget: Widget) -> int:
        return self.positions.y(widget)

    def _on_screen(self, widget: Widget) -> bool:
        return self.positions.on_screen(widget)

    async def jump_to_line(self, line: int) -> None:
        await self.chapter_layout.jump_to_line(line)

    async def jump_to_break(self, k: int) -> None:
        await self.chapter_layout.jump_to_break(k)

    def reach(self, k: int) -> None:
        self.place.reach(k)

    def current_place(self) -> tuple[int, int | None, int] | None:
        return self.place.current_place()

    def save_place(self) -> bool:
        """Called by the app on every way out of the reader (see ``save_reading_place``)."""
        return self.place.save_place()

    def visible_links(self) -> list[Link]:
        return self.navigation.visible_links()

    def focused_or_visible_snippet(self) -> SnippetView | None:
        return self.snippets.focused_or_visible()

    # -- keys -----------------------------------------------------------------------------------

    def visit(self, *, line: int | None = None, anchor: str | None = None, part: int = 0, offset: int = 0,
              visiting: bool = True) -> None:
        """Move the view here without reading it (a jump in this chapter; Esc back to a view)."""
        if anchor and line is None:
            line = self.chapter.anchor_line(anchor)
        self.place.save_place()  # the place read so far, before the view leaves it
        self.visiting = visiting
        self.run_worker(self.place.move_view(line=line, part=part, offset=offset), group="jump", exclusive=True)

    def read_on(self) -> None:
        """The learner reads on (Space, PgDn, j, ↓): a visited view becomes the reading place."""
        if self.visiting:
            self.visiting = False
            self.place.adopt()

    # less / vim scrolling: Space and b page, j and k move a line
    def action_page_down(self) -> None:
        self.read_on()
        self.body.scroll_page_down(animate=False)  # at once, as PgDn (see ReaderBody)

    def action_page_up(self) -> None:
        self.body.scroll_page_up(animate=False)

    def action_line_down(self) -> None:
        self.read_on()
        self.body.scroll_down(animate=False)

    def action_line_up(self) -> None:
        self.body.scroll_up(animate=False)

    async def action_next_part(self) -> None:
        if self.app.search_hits:  # while a search is active n is its next hit, like less
            self.step_hit(1)
            return
        await self.place.next_part()

    def action_prev_hit(self) -> None:
        if self.app.search_hits:
            self.step_hit(-1)
        else:
            self.notify("没有正在进行的搜索：按 / 搜索，之后 n、N 是下一处、上一处。")

    def step_hit(self, step: int) -> None:
        """n / N while a search is active: the next (previous) hit, in this chapter or another."""
        app = self.app
        hits = app.search_hits
        i = app.search_index + step
        if not 0 <= i < len(hits):
            self.notify("已经是最后一处了。" if step > 0 else "已经是第一处了。")
            return
        app.search_index = i
        hit = hits[i]
        self.notify(f"第 {i + 1}/{len(hits)} 处：{app.search_term}")
        app.jump_to(hit.chapter_id, line=hit.line, remember=False)  # one Esc: back to before the search

    def action_top(self) -> None:
        self.body.scroll_home(animate=False)

    def action_bottom(self) -> None:
        self.read_on()
        self.body.scroll_end(animate=False)

    def action_stop_here(self) -> None:
        self.place.stop_here()

    def action_back(self) -> None:
        self.navigation.back()

    def action_toc(self) -> None:
        self.navigation.toc()

    def action_next_chapter(self) -> None:
        self.navigation.open_neighbour(1)

    def action_prev_chapter(self) -> None:
        self.navigation.open_neighbour(-1)

    def action_quiz(self) -> None:
        self.navigation.quiz()

    def action_follow_link(self, href: str) -> None:
        """A course link was clicked (``links.link_action``) or picked from ``l``'s list."""
        self.navigation.follow_link(href)

    def action_links(self) -> None:
        self.navigation.links()

    def action_reload_chapter(self) -> None:
        self.preview.reload()

    def action_next_snippet(self) -> None:
        self.snippets.step(1)

    def action_prev_snippet(self) -> None:
        self.snippets.step(-1)

    def action_run_snippet(self) -> None:
        self.snippets.run()

    def action_rerun_fresh(self) -> None:
        """X: run the snippet in view again without the cache, in a brand-new interpreter."""
        self.snippets.run(fresh=True)

    def action_run_all(self) -> None:
        self.snippets.run_all()

    def action_cancel_run(self) -> None:
        self.snippets.cancel()

    def action_edit_snippet(self) -> None:
        self.snippets.edit()

    def action_toggle_frames(self) -> None:
        self.snippets.toggle_frames()

    def action_toggle_proof(self) -> None:
        self.snippets.toggle_proof()

    def action_restore_snippet(self) -> None:
        self.snippets.restore()

    # -- messages -------------------------------------------------------------------------------

    @on(SnippetView.RunRequested)
    def _run_requested(self, event: SnippetView.RunRequested) -> None:
        event.stop()
        self.snippets.run_requested(event.view)

    def on_snippet_editor_run_edited(self, event) -> None:
        event.stop()
        self.snippets.run_edited(event.editor.view, event.code)

    def on_snippet_editor_left(self, event) -> None:
        event.stop()
        self.snippets.leave_editor(event.editor.view, event.code)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.notify(f"出错了：{event.worker.error}", severity="error")
            self.snippets.worker_failed(event.worker.group)
