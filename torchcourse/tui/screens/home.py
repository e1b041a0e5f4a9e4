"""Home: course title, overall progress, 继续, the four routes, the chapter map, the check-in calendar."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Button, Label, OptionList, Static
from textual.widgets.option_list import Option

from torchcourse.course import chapter_minutes
from torchcourse.tui import keys
from torchcourse.tui.widgets.keybar import KeyBar
from torchcourse.tui.summary import (
    STATUS_ICON,
    STATUS_TEXT,
    all_statuses,
    continue_target,
    current_route,
    route_progress,
)
from torchcourse.tui.widgets.calendar import CheckinCalendar


class HomeScreen(Screen):
    BINDINGS = keys.bindings("首页")

    def compose(self) -> ComposeResult:
        app = self.app
        yield Static(Content.styled(app.course.title or "torchcourse", "bold"), id="home-title")
        with VerticalScroll(id="home-body"):
            with Horizontal(id="home-top"):
                with Vertical(id="home-summary"):
                    yield Static("", id="overall")
                    yield Button("", id="continue", compact=True)
                    yield Static("", id="route-current")
                yield CheckinCalendar(*self._activity(), id="calendar")
            yield Label("路线（r 选择，回车切换；换路线不会丢进度）", classes="home-heading")
            yield OptionList(id="routes")
            yield Label("章节地图（回车打开）", classes="home-heading")
            yield OptionList(id="chapters")
        yield KeyBar("首页")

    def _activity(self):
        store, today = self.app.store, self.app.today()
        try:
            return store.activity(), store.streak(today), today
        except Exception:
            return {}, 0, today

    def on_mount(self) -> None:
        self.refresh_data()
        button = self.query_one("#continue", Button)
        (button if not button.disabled else self.query_one("#chapters", OptionList)).focus()

    def on_screen_resume(self) -> None:
        if self.is_mounted and getattr(self, "_shown_once", False):
            self.refresh_data()  # back from the reader or a quiz: progress may have changed
        self._shown_once = True

    def refresh_data(self) -> None:
        app = self.app
        course, store = app.course, app.store
        statuses = all_statuses(course, store)
        route = current_route(course, store)

        done = sum(1 for s in statuses.values() if s.status == "done")
        read = round(sum(s.read_minutes for s in statuses.values()))
        total = sum(s.minutes for s in statuses.values())
        self.query_one("#overall", Static).update(
            f"已完成 {done}/{len(statuses)} 章 · 已读约 {read}/{total} 分钟"
        )

        target = continue_target(course, store)
        button = self.query_one("#continue", Button)
        if target is None:
            button.label = "🎉 当前路线已全部读完 —— 按 r 换一条路线"
            button.disabled = True
        else:
            cid, part = target
            ch = course.chapter(cid)
            where = f" · 断点 {part}/{ch.break_points} 之后" if part > 0 else ""
            verb = "继续" if store.last_position() else "开始"
            button.label = f"▶ {verb} (c)：{cid} {ch.title}{where}"
            button.disabled = False

        if route is not None:
            d, n, mins = route_progress(route, statuses)
            self.query_one("#route-current", Static).update(
                f"当前路线 {route.id}：{route.name} · {d}/{n} 章 · {mins}/{route.minutes} 分钟"
            )

        routes = self.query_one("#routes", OptionList)
        highlighted = routes.highlighted
        routes.clear_options()
        for r in course.routes:
            d, n, mins = route_progress(r, statuses)
            mark = "▶ " if route is not None and r.id == route.id else "  "
            chain = " → ".join(r.chapters)
            prompt = Content.assemble(
                (f"{mark}{r.id} {r.name}", "bold"),
                f"  ⏱ {r.minutes} 分钟 · 已完成 {d}/{n} 章\n",
                (f"    适合：{r.audience} · {chain}", "$text-muted"),
            )
            routes.add_option(Option(prompt, id=f"route-{r.id}"))
        if highlighted is not None:
            routes.highlighted = highlighted
        elif route is not None:
            routes.highlighted = [r.id for r in course.routes].index(route.id)

        chapters = self.query_one("#chapters", OptionList)
        highlighted = chapters.highlighted
        chapters.clear_options()
        on_route = set(route.chapters) if route else set()
        for ch in course.chapters:
            st = statuses[ch.id]
            if st.status == "doing":
                status = f"{STATUS_TEXT['doing']} {st.furthest_break}/{ch.break_points}"
            else:
                status = STATUS_TEXT[st.status]
            dot = "•" if ch.id in on_route else " "
            style = "$text-muted" if not ch.available else ""
            prompt = Content.assemble(
                (f"{dot}{STATUS_ICON[st.status]} {ch.id:>2} {ch.title}", f"bold {style}".strip()),
                (f"  ⏱ {chapter_minutes(ch)} 分钟 · {status}\n", style),
                (f"      {ch.promise}", "$text-muted"),
            )
            chapters.add_option(Option(prompt, id=f"chapter-{ch.id}"))
        if highlighted is not None:
            chapters.highlighted = highlighted
        elif target is not None:
            chapters.highlighted = [c.id for c in course.chapters].index(target[0])

    # -- actions ----------------------------------------------------------------------------

    def action_continue(self) -> None:
        target = continue_target(self.app.course, self.app.store)
        if target is None:
            self.notify("当前路线已全部读完。按 r 换一条路线，或者从章节地图里挑一章。")
            return
        self.app.open_chapter(target[0], part=target[1])

    @on(Button.Pressed, "#continue")
    def _continue_pressed(self) -> None:
        self.action_continue()

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
        self.app.open_chapter(ch.id)

    @on(OptionList.OptionSelected, "#routes")
    def _route_selected(self, event: OptionList.OptionSelected) -> None:
        route = self.app.course.routes[event.option_index]
        self.app.set_route(route.id)
