"""Command palette (Ctrl+P) entries: chapters, checkpoint quizzes, routes, lookup, search, review, help."""

from __future__ import annotations

from functools import partial

from rich.align import Align
from rich.text import Text
from textual.command import CommandList, CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.widgets.option_list import Option


class CoursePalette(CommandPalette):
    """Textual's palette with its 'No matches found' line in Chinese."""

    def _start_no_matches_countdown(self, search_value: str) -> None:
        self._stop_no_matches_countdown()

        def show() -> None:
            if search_value:
                self.query_one(CommandList).add_option(
                    Option(Align.center(Text("没有匹配的命令", style="not bold")), disabled=True, id=self._NO_MATCHES)
                )
                self._list_visible = True
            else:
                self._list_visible = False

        self._no_matches_timer = self.set_timer(self._NO_MATCHES_COUNTDOWN, show)


class CourseCommands(Provider):
    def _commands(self):
        app = self.app
        course = app.course
        out = []
        for ch in course.chapters:
            label = f"打开章节 {ch.id} {ch.title}" + ("" if ch.available else "（暂未上线）")
            out.append((label, partial(app.open_chapter, ch.id), ch.promise))
        for ch in course.chapters:
            if app.has_quiz(ch.id):
                out.append((f"测验 {ch.id} {ch.title}", partial(app.open_quiz, ch.id), f"{ch.id} 章的检查点测验"))
        for r in course.routes:
            out.append((f"切换路线 {r.id} {r.name}", partial(app.set_route, r.id), f"适合：{r.audience}"))
        out.append(("报错反查", app.action_lookup, "粘贴报错原文，找到讲它的那一节"))
        out.append(("搜索全文", app.action_search, "搜索整套教程的正文"))
        out.append(("复习到期题目", app.action_review, "做今天到期的复习题"))
        out.append(("按键帮助", app.action_help, "显示所有按键"))
        out.append(("回到首页", app.go_home, "返回首页"))
        return out

    async def discover(self) -> Hits:
        for label, cb, help_text in self._commands():
            yield DiscoveryHit(label, cb, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for label, cb, help_text in self._commands():
            # a chapter is found by what it is about too (its promise), not only by its title
            score = max(matcher.match(label), 0.9 * matcher.match(help_text or ""))
            if score > 0:
                yield Hit(score, matcher.highlight(label), cb, help=help_text)
