"""Home: course title, overall progress, 继续, 复习 (count due today), the routes, the chapter map
(Enter opens a chapter, m its checkpoint quiz), the check-in calendar."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Region
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from torchcourse.course import chapter_minutes
from torchcourse.tui import keys
from torchcourse.tui.screens.lean import LeanScreen
from torchcourse.tui.widgets.actionline import ActionLine
from torchcourse.tui.widgets.keybar import KeyBar
from torchcourse.tui.cjkwrap import glued
from torchcourse.tui.summary import (
    STATE_ICON,
    all_statuses,
    continue_target,
    current_route,
    due_review_count,
    nothing_to_continue,
    resume_place,
    resume_where,
    unwritten_in_route,
    review_line,
    route_progress,
    total_minutes,
)
from torchcourse.tui.widgets.calendar import CheckinCalendar

class HomeList(OptionList):
    """An option list whose ↑ on the first / ↓ on the last option moves to the previous / next
    line or list of the home screen (routes ↔ chapter map) instead of wrapping around.

    The list takes its full height inside the home's one scrolling body (no scrollbar of its
    own): moving the highlight scrolls the page so the highlighted entry stays on screen."""

    # Options below the first frame, added right after it (a course of 46 chapters made the home
    # screen's first frame grow with it: OptionList wraps every option to know its height).
    _pending: tuple[Option, ...] = ()

    def defer(self, options: list[Option]) -> None:
        self._pending = tuple(options)

    def add_pending(self, upto: int | None = None) -> None:
        """Add the options left out (up to option index ``upto``, exclusive, when given)."""
        if self._pending:
            take = len(self._pending) if upto is None else max(0, upto - self.option_count)
            added, self._pending = self._pending[:take], self._pending[take:]
            self.add_options(added)

    def _update_lines(self) -> None:
        # OptionList wraps its options once and clears that only on a resize; its own scrollbar
        # appearing (a long list in a short terminal) narrows the lines without a resize, and the
        # wrapped-again options were then cut (「不搬数」 for 「不搬数据」). Rewrap on a new width.
        width = self.scrollable_content_region.width
        if width != getattr(self, "_wrapped_width", width):
            self._option_render_cache.clear()
            self._line_cache.clear()
        self._wrapped_width = width
        super()._update_lines()

    def scroll_to_highlight(self, top: bool = False) -> None:
        super().scroll_to_highlight(top)
        if self.has_focus:  # not at start-up: the highlighted target chapter must not scroll 继续 away
            self._scroll_page_to_highlight(top)

    def on_focus(self, event) -> None:
        self.add_pending()
        # focusing scrolls the whole (tall) list into view, i.e. its top: show the highlight instead
        self.call_after_refresh(self._scroll_page_to_highlight)

    def _scroll_page_to_highlight(self, top: bool = False) -> None:
        body = self.parent
        highlighted = self.highlighted
        if highlighted is None or not isinstance(body, VerticalScroll) or not self.is_mounted:
            return
        self._update_lines()
        try:
            y = self._index_to_line[highlighted]
            height = self._heights[highlighted]
        except KeyError:
            return
        box = self.virtual_region
        if not box:
            return  # not laid out yet
        inner = self.content_region.y - self.region.y  # border and padding above the lines
        region = Region(box.x, box.y + inner + y - round(self.scroll_y), box.width, height)
        body.scroll_to_region(region, animate=False, force=True, top=top, immediate=True)

    def _leave(self, step: int) -> bool:
        chain = [w for w in self.screen.focus_chain if w not in self.ancestors]
        i = chain.index(self) + step if self in chain else -1
        if 0 <= i < len(chain):
            chain[i].focus()
            return True
        return False

    # the route list keeps its cursor to itself: ↓ past its last route does not slip into the
    # chapter map (r ↓↓↓ Enter opened a chapter instead of switching route); Tab moves on
    keeps_cursor = False

    def action_cursor_down(self) -> None:
        self.add_pending()
        if self.keeps_cursor and self.highlighted is not None and self.highlighted >= self.option_count - 1:
            return
        if self.highlighted is not None and self.highlighted >= self.option_count - 1 and self._leave(1):
            return
        super().action_cursor_down()

    def action_cursor_up(self) -> None:
        self.add_pending()
        if self.highlighted is not None and self.highlighted <= 0 and self._leave(-1):
            return
        super().action_cursor_up()


NARROW = 90  # below this width the calendar grid does not fit beside the summary


class HomeView:
    """Everything the home screen shows, computed once from the course and the store."""

    def __init__(self, app) -> None:
        course, store = app.course, app.store
        statuses = all_statuses(course, store)
        route = current_route(course, store)
        self.route = route

        counted = [s for s in statuses.values() if s.counts_in_totals]  # the chapters the minutes count (walk B L3)
        done = sum(1 for s in counted if s.status == "done")
        read, total = total_minutes(statuses)  # the appendix is consulted, not read: not counted
        planned = any(s.status == "unavailable" for s in statuses.values())
        # a planned chapter's minutes are its target, not measured text: say so
        from torchcourse.progress.reading import home_note, reading_pace

        # what 已读 means, beside it (walk L8: "4/4 章 · 9/406 分钟" after quick paging read like a bug)
        self.overall = f"已完成 {done}/{len(counted)} 章 · 已读约 {read}/{total} 分钟" + home_note(reading_pace(course.chars_per_minute), planned)

        self.target = target = continue_target(course, store)
        if target is None:
            self.button = nothing_to_continue(course, store)
        else:
            place = resume_place(course, store)
            cid = place[0]
            ch = course.chapter(cid)
            verb = "继续" if store.last_position() else "开始"
            # the chapter and where in it (the same words on every visit); one phrase: at 100
            # columns the line must not break between 之 and 后 (cjkwrap.GLUE)
            where = resume_where(course, store, place)
            where = "" if where == "开头" and verb == "开始" else " · " + " · ".join(glued(*w.split(" ")) for w in where.split(" · "))
            self.button = f"▶ {verb} (c)：{cid} {ch.title}{where}"

        try:
            due = due_review_count(course, store, app.today())
        except Exception:  # a broken checkpoint file must not keep the home screen from showing
            due = 0
        self.review = review_line(due)

        self.route_line = ""
        if route is not None:
            d, n, mins = route_progress(route, statuses)
            unwritten = unwritten_in_route(course, route)
            goal = f"（{len(unwritten)} 章未写，按目标计）" if unwritten else ""
            self.route_line = f"当前路线 {route.id}：{route.name} · {d}/{n} 章 · 已读 {mins}/{route.minutes} 分钟{goal}"

        self.routes: list[Option] = []
        for r in course.routes:
            d, n, mins = route_progress(r, statuses)
            mark = "▶ " if route is not None and r.id == route.id else "  "
            chain = " → ".join(glued(*step.split(" ")) for step in course.route_steps(r))  # 附录 A on one line
            unwritten = len(unwritten_in_route(course, r))
            goal = "（目标）" if unwritten == n else f"（含 {unwritten} 章目标）" if unwritten else ""
            prompt = Content.assemble(
                (f"{mark}{r.id} {r.name}", "bold"),
                f"  ⏱ {r.minutes} 分钟{goal} · 已完成 {d}/{n} 章\n",
                (f"    适合：{r.audience} · {chain}", "$text-muted"),
            )
            self.routes.append(Option(prompt, id=f"route-{r.id}"))
        self.route_index = [r.id for r in course.routes].index(route.id) if route is not None else None

        self.chapters: list[Option] = []
        on_route = set(route.chapters) if route else set()
        for ch in course.chapters:
            st = statuses[ch.id]
            status = st.words  # the one progress model's words (torchcourse progress prints the same)
            dot = "•" if ch.id in on_route else " "
            style = "$text-muted" if not ch.available else ""
            prompt = Content.assemble(
                (f"{dot}{STATE_ICON[st.state]} {ch.id:>2} {ch.title}", f"bold {style}".strip()),
                (f"  ⏱ {chapter_minutes(ch)} 分钟 · {status}\n", style),
                (f"      {ch.promise}", "$text-muted"),
            )
            self.chapters.append(Option(prompt, id=f"chapter-{ch.id}"))
        self.chapter_index = [c.id for c in course.chapters].index(target[0]) if target is not None else None


class HomeScreen(LeanScreen):
    BINDINGS = keys.bindings("首页")
    # No auto focus: None would mean the app's "*", which focuses the scrolling body first and
    # then on_mount moves focus to 继续 (two focus changes, a Blur and a restyle before Ready).
    AUTO_FOCUS = ""

    def compose(self) -> ComposeResult:
        # The first frame is built with its content: no second layout pass after mounting.
        app = self.app
        view = HomeView(app)
        self._view = view
        self._fit_width(app.size.width)  # the class is right from the first frame
        calendar = CheckinCalendar(*self._activity(), id="calendar")
        title = Content.styled(app.course.title or "torchcourse", "bold")
        if getattr(app, "learner", ""):  # a class served with --users: whose progress this is
            title = Content.assemble(title, f"  · 学员：{app.learner}")
        yield Static(title, id="home-title")
        with VerticalScroll(id="home-body"):
            with Horizontal(id="home-top"):
                with Vertical(id="home-summary"):
                    yield Static(view.overall, id="overall")
                    if self.has_class("-narrow"):  # else mounted on the first narrowing: one widget less to paint
                        yield Static(calendar.streak_line(), id="streak")
                    yield ActionLine(view.button, "continue", id="continue", disabled=view.target is None)
                    yield Static(view.route_line, id="route-current")
                    yield ActionLine(view.review, "review", id="review")
                yield calendar
            yield Label("路线（r 选择，回车切换；换路线不会丢进度）", classes="home-heading")
            routes = HomeList(*view.routes, id="routes")
            routes.keeps_cursor = True
            yield routes
            yield Label("章节地图（回车打开，m 做这一章的测验）", classes="home-heading")
            # the first frame holds the chapters a screen can show (two lines each at least); the
            # rest are added once it is painted, so a longer course does not slow the start
            shown = max(1, app.size.height // 2)
            chapters = HomeList(*view.chapters[:shown], id="chapters")
            chapters.defer(view.chapters[shown:])
            yield chapters
        yield KeyBar("首页")

    def _fit_width(self, width: int) -> None:
        """Below :data:`NARROW` columns the calendar grid gives way to a one-line streak."""
        narrow = width < NARROW
        self.set_class(narrow, "-narrow")
        if narrow and self.is_mounted and not self.query("#streak"):
            streak = Static(self.query_one("#calendar", CheckinCalendar).streak_line(), id="streak")
            self.query_one("#home-summary").mount(streak, after=self.query_one("#overall"))

    def on_resize(self, event) -> None:
        self._fit_width(event.size.width)

    def _activity(self):
        store, today = self.app.store, self.app.today()
        try:
            return store.activity(), store.streak(today), today
        except Exception:
            return {}, 0, today

    def on_mount(self) -> None:
        view = self._view
        if self._surely_overflows(view):
            # The scrollbar is there from the first layout: found only after it, it would narrow
            # every line and cost a second full layout (and re-wrap) before the first frame.
            self.query_one("#home-body", VerticalScroll).show_vertical_scrollbar = True
        if view.route_index is not None:
            self.query_one("#routes", OptionList).highlighted = view.route_index
        chapters = self.query_one("#chapters", HomeList)
        index = view.chapter_index
        if index is not None:
            chapters.add_pending(upto=index + 1)  # the chapter to continue is listed from the start
            chapters.highlighted = index
        button = self.query_one("#continue", ActionLine)
        (button if not button.disabled else chapters).focus()
        self.call_after_refresh(chapters.add_pending)

    def _surely_overflows(self, view: HomeView) -> bool:
        """True when the body cannot fit on screen even if no line wraps (a lower bound)."""
        # wide: the calendar's margin and lines (the summary is shorter); narrow: the summary's lines
        top = 9 if self.has_class("-narrow") else 1 + CheckinCalendar.HEIGHT
        lines = top + 2 * 2 + 2 * len(view.routes) + 2 * len(view.chapters)
        return lines > self.app.size.height - 2  # title and key bar

    def on_screen_resume(self) -> None:
        self._fit_width(self.app.size.width)  # resized while another screen was on top
        if self.is_mounted and getattr(self, "_shown_once", False):
            self.refresh_data()  # back from the reader or a quiz: progress may have changed
        self._shown_once = True

    def refresh_data(self) -> None:
        view = HomeView(self.app)
        self._view = view
        self.query_one("#overall", Static).update(view.overall)
        button = self.query_one("#continue", ActionLine)
        button.label = view.button
        button.disabled = view.target is None
        if view.route is not None:
            self.query_one("#route-current", Static).update(view.route_line)
        self.query_one("#review", ActionLine).label = view.review
        calendar = self.query_one("#calendar", CheckinCalendar)
        calendar.set_activity(*self._activity())  # reading just now counts for today
        for streak in self.query("#streak").results(Static):
            streak.update(calendar.streak_line())
        for list_id, options, default in (("#routes", view.routes, view.route_index),
                                          ("#chapters", view.chapters, view.chapter_index)):
            ol = self.query_one(list_id, HomeList)
            highlighted = ol.highlighted
            ol.defer([])  # the whole list follows
            ol.clear_options()
            ol.add_options(options)
            if highlighted is not None:
                ol.highlighted = highlighted
            elif default is not None:
                ol.highlighted = default

    # -- actions ----------------------------------------------------------------------------

    def action_continue(self) -> None:
        app = self.app
        place = resume_place(app.course, app.store)
        if place is None:
            self.notify(nothing_to_continue(app.course, app.store) + "，或者从章节地图里挑一章。")
            return
        cid, part, line, offset = place
        app.back_stack = []
        app.open_chapter(cid, part=part, line=line, offset=offset)

    def action_review(self) -> None:
        self.app.action_review()

    def action_chapter_quiz(self) -> None:
        chapters = self.query_one("#chapters", OptionList)
        if chapters.highlighted is None:
            self.notify("先在章节地图里用 ↑↓ 选中一章，再按 m。")
            return
        self.app.open_quiz(self.app.course.chapters[chapters.highlighted].id)

    def action_choose_route(self) -> None:
        self.query_one("#routes", OptionList).focus()
        self.notify("用 ↑↓ 选一条路线，按回车切换。")

    def action_open_chapter(self) -> None:
        chapters = self.query_one("#chapters", OptionList)
        if chapters.highlighted is not None:
            self._open_index(chapters.highlighted)

    @on(OptionList.OptionSelected, "#chapters")
    def _chapter_selected(self, event: OptionList.OptionSelected) -> None:
        self._open_index(event.option_index)

    def _open_index(self, index: int) -> None:
        ch = self.app.course.chapters[index]
        self.app.back_stack = []
        self.app.open_chapter(ch.id)

    @on(OptionList.OptionSelected, "#routes")
    def _route_selected(self, event: OptionList.OptionSelected) -> None:
        route = self.app.course.routes[event.option_index]
        self.app.set_route(route.id)
