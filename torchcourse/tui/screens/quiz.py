"""The checkpoint quiz and the review, as Textual screens.

``QuizScreen(course, chapter_id, store, runner)`` asks one question at a time and dismisses
with a :class:`QuizOutcome` (``goto`` set when the learner picked a missed question to read
its section again). ``ReviewScreen(course, store, runner)`` does the same for the questions
due for review today. Every answer is stored the moment it is given (see
:class:`torchcourse.quiz.session.QuizSession`); predict questions run their snippet in a
thread worker, so the UI never waits for it.
"""

from __future__ import annotations

import threading
from datetime import date

from rich.syntax import Syntax
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Markdown, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from torchcourse.quiz.completion import PASS_RATIO
from torchcourse.quiz.grading import correct_answer_text
from torchcourse.quiz.review import INTERVALS, next_review_day
from torchcourse.quiz.session import QuizError, QuizOutcome, QuizSession, Result, chapter_label

__all__ = ["QuizScreen", "ReviewScreen", "QuizOutcome"]

def _refresh_current(app) -> None:
    screen = app.screen
    if not isinstance(screen, QuizScreen) and hasattr(screen, "refresh_data"):
        screen.refresh_data()


RUN_GROUP = "quiz-predict"
SAVE_GROUP = "quiz-save"
_WRITER_LOCK = threading.Lock()

# phases
class HangingChoices:
    """The choices of a question: each wrapped line of a choice starts under its text, not under
    its ``❯ (•) 1)`` marker (a two-column grid). ``str()`` is the plain text, one choice a line."""

    def __init__(self, rows: list[tuple[Text, Text]]) -> None:
        self.rows = rows

    def __str__(self) -> str:
        return "\n".join(mark.plain + body.plain for mark, body in self.rows)

    def _grid(self):
        from rich.table import Table

        grid = Table.grid()
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        for mark, body in self.rows:
            grid.add_row(mark, body)
        return grid

    def __rich_console__(self, console, options):
        yield self._grid()

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement.get(console, options, self._grid())


ANSWER = "answer"  # choosing / typing / thinking (open, before the reveal)
JUDGE = "judge"  # open: reference shown, waiting for y / n
FEEDBACK = "feedback"  # verdict and explanation shown; Enter goes on
SUMMARY = "summary"  # score and missed questions
EMPTY = "empty"  # nothing to ask (no due reviews, or the quiz could not start)


def _number_bindings() -> list[Binding]:
    out = [Binding("1", "pick(0)", "选择", key_display="1-9")]
    out += [Binding(str(i + 1), f"pick({i})", "选择", show=False) for i in range(1, 9)]
    return out


class QuizScreen(Screen[QuizOutcome]):
    CSS_PATH = "quiz.tcss"

    BINDINGS = [
        *_number_bindings(),
        Binding("up", "cursor(-1)", "上", show=False),
        Binding("down", "cursor(1)", "下", show=False),
        Binding("space", "toggle", "勾选", key_display="空格"),
        Binding("r", "reveal", "看参考答案"),
        Binding("y", "self_grade(True)", "我答对了"),
        Binding("n", "self_grade(False)", "没答对"),
        Binding("enter", "submit", "提交/继续", key_display="回车"),
        Binding("escape", "leave", "离开测验", key_display="Esc"),
    ]

    def __init__(self, course, chapter_id: str | None, store, runner, *, clock=None, name: str | None = None):
        super().__init__(name=name)
        self.course = course
        self.store = store
        self.runner = runner
        self.clock = clock
        self.error: str | None = None
        self.session: QuizSession | None = None
        try:
            self.session = self._make_session(chapter_id)
        except QuizError as exc:
            self.error = str(exc)
        if self.session is not None:
            self.session.autosave = False  # writes run off the UI thread: _save_in_background
        self._summary_lines: list[str] = []
        self.phase = EMPTY
        self.picked: set[int] = set()
        self.cursor = 0
        self.last: Result | None = None
        self._cancel: threading.Event | None = None
        self._token = 0  # which question a running snippet belongs to

    def _make_session(self, chapter_id: str | None) -> QuizSession:
        assert chapter_id is not None
        return QuizSession.for_chapter(self.course, self.store, chapter_id, clock=self.clock)

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="quiz-head")
        with VerticalScroll(id="quiz-body"):
            yield Markdown(id="quiz-prompt")
            yield Static(id="quiz-code")
            yield Static(id="quiz-choices")
            yield Input(id="quiz-fill", placeholder="输入答案，回车提交（不会就输入 ?）")
            yield Markdown(id="quiz-reference")
            yield Static(id="quiz-verdict")
            yield Markdown(id="quiz-explain")
            yield Static(id="quiz-where")
            yield Static(id="quiz-run")
            yield Static(id="quiz-hint")
            yield Static(id="quiz-summary")
            yield OptionList(id="quiz-missed")
        # without the Ctrl+P entry (it still works) the keys fit 80 columns; compact below that
        yield Footer(compact=self.app.size.width < 80, show_command_palette=False)

    def on_resize(self, event) -> None:
        self.query_one(Footer).compact = event.size.width < 80

    def on_mount(self) -> None:
        if self.session is None:
            self._show_empty(self.error or "没有题目。")
        elif self.session.total == 0:
            self._show_empty(self._nothing_due())
        else:
            self._show_question()

    def _nothing_due(self) -> str:
        return "没有题目。"

    # -- helpers --------------------------------------------------------------------------

    def _title(self) -> str:
        s = self.session
        assert s is not None
        chapter = self.course.chapter(s.chapter_id) if s.chapter_id else None
        return f"✅ {chapter_label(self.course, s.chapter_id)}检查点 · {chapter.title if chapter else ''}"

    def _set_visible(self, **shown: bool) -> None:
        for wid, on_ in shown.items():
            self.query_one(f"#quiz-{wid}").display = on_

    def _hide_all(self) -> None:
        self._set_visible(
            prompt=False, code=False, choices=False, fill=False, hint=False, reference=False,
            verdict=False, explain=False, where=False, run=False, summary=False, missed=False,
        )

    def _set_phase(self, phase: str) -> None:
        self.phase = phase
        self.refresh_bindings()

    def _show_empty(self, message: str) -> None:
        self._hide_all()
        self.query_one("#quiz-head", Static).update(Text(self._empty_title()))
        summary = self.query_one("#quiz-summary", Static)
        summary.update(Text(message + "\n\n按回车或 Esc 返回。"))
        summary.display = True
        self._set_phase(EMPTY)

    def _empty_title(self) -> str:
        return "✅ 检查点"

    # -- one question ---------------------------------------------------------------------

    def _show_question(self) -> None:
        s = self.session
        assert s is not None and s.current is not None
        chapter_id, q = s.current
        self._cancel_run()
        self._token += 1
        self.picked = set()
        self.cursor = 0
        self.last = None
        self._hide_all()
        where = f" · {chapter_label(self.course, chapter_id)}" if s.chapter_id is None else ""
        self.query_one("#quiz-head", Static).update(Text(f"{self._title()}   第 {s.index + 1}/{s.total} 题{where} · {q.kind_name}"))
        prompt = self.query_one("#quiz-prompt", Markdown)
        prompt.update(q.prompt)
        prompt.display = True
        snippet = s.snippet_for(chapter_id, q)
        if snippet is not None:
            code = self.query_one("#quiz-code", Static)
            code.update(Syntax(snippet.code.rstrip("\n"), "python", theme="ansi_dark", background_color="default"))
            code.border_title = f"片段 {snippet.key}"
            code.display = True
        hint = self.query_one("#quiz-hint", Static)
        if q.has_choices:
            self._render_choices()
            self.query_one("#quiz-choices").display = True
            if q.multiple:
                hint.update(Text("多选：按数字键或空格勾选/取消所有正确的选项，回车提交。"))
            else:
                hint.update(Text("单选：按数字键选择（↑↓ 移动），回车提交。"))
            self.query_one("#quiz-body").focus()
        elif q.kind == "open":
            hint.update(Text("简答：先在心里（或纸上）答一遍，再按 r 或回车看参考答案，然后自己评分。"))
            self.query_one("#quiz-body").focus()
        else:
            fill = self.query_one("#quiz-fill", Input)
            fill.value = ""
            fill.disabled = False
            fill.display = True
            hint.update(Text("输入答案后按回车。大小写、空格、全角半角都不计较。" if q.kind == "fill" else "写下你预测的输出，回车后会真的运行它。"))
            fill.focus()
        hint.display = True
        self.query_one("#quiz-body", VerticalScroll).scroll_home(animate=False)
        self._set_phase(ANSWER)

    def _render_choices(self, result: Result | None = None) -> None:
        s = self.session
        assert s is not None and s.current is not None or result is not None
        q = result.question if result is not None else s.current[1]  # type: ignore[index]
        right = set(q.answer_indexes)
        rows: list[tuple[Text, Text]] = []
        for i, choice in enumerate(q.choices):
            chosen = i in self.picked
            if q.multiple:
                mark = "[x]" if chosen else "[ ]"
            else:
                mark = "(•)" if chosen else "( )"
            pointer = "❯ " if (result is None and i == self.cursor) else "  "
            style = ""
            suffix = ""
            if result is not None:
                if i in right:
                    style = "bold green"
                    suffix = "  ✓"
                elif chosen:
                    style = "bold red"
                    suffix = "  ✗"
                else:
                    style = "dim"
            elif chosen:
                style = "bold"
            rows.append((Text(f"{pointer}{mark} {i + 1}) ", style=style), Text(choice + suffix, style=style)))
        self.query_one("#quiz-choices", Static).update(HangingChoices(rows))

    def _current(self):
        s = self.session
        if s is None or s.current is None:
            return None
        return s.current[1]

    # -- actions --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        q = self._current()
        choosing = self.phase == ANSWER and q is not None and q.has_choices
        if action in ("pick", "cursor"):
            if not choosing:
                return False
            if action == "pick":
                return int(parameters[0]) < len(q.choices)  # type: ignore[arg-type, union-attr]
            return True
        if action == "toggle":
            return choosing
        if action == "reveal":
            return self.phase == ANSWER and q is not None and q.kind == "open"
        if action == "self_grade":
            return self.phase == JUDGE
        if action == "submit":
            return self.phase != JUDGE
        return True

    def action_pick(self, index: int) -> None:
        q = self._current()
        if q is None or self.phase != ANSWER or not q.has_choices or index >= len(q.choices):
            return
        self.cursor = index
        self._toggle(index)

    def action_cursor(self, delta: int) -> None:
        q = self._current()
        if q is None or not q.has_choices:
            return
        self.cursor = (self.cursor + delta) % len(q.choices)
        self._render_choices()

    def action_toggle(self) -> None:
        self._toggle(self.cursor)

    def _toggle(self, index: int) -> None:
        q = self._current()
        if q is None or self.phase != ANSWER:
            return
        if q.multiple:
            self.picked ^= {index}
        else:
            self.picked = {index}
        self._render_choices()

    def action_reveal(self) -> None:
        q = self._current()
        if q is None or self.phase != ANSWER or q.kind != "open":
            return
        ref = self.query_one("#quiz-reference", Markdown)
        ref.update(f"**参考答案**\n\n{q.reference or ''}")
        ref.display = True
        self.query_one("#quiz-hint", Static).update(Text("对照参考答案：答对了按 y，没答对按 n。"))
        self._set_phase(JUDGE)

    def action_self_grade(self, right: bool) -> None:
        if self.phase != JUDGE or self.session is None:
            return
        self._after_answer(self.session.answer(bool(right)))

    def action_submit(self) -> None:
        if self.phase == ANSWER:
            q = self._current()
            if q is None:
                return
            if q.kind == "open":
                self.action_reveal()
            elif q.has_choices:
                if not self.picked:
                    self.notify("先选一个选项（按数字键）。", severity="warning")
                    return
                self._after_answer(self.session.answer(sorted(self.picked)))  # type: ignore[union-attr]
            else:
                self._submit_text(self.query_one("#quiz-fill", Input).value)
        elif self.phase == FEEDBACK:
            self._next()
        elif self.phase == SUMMARY:
            missed = self.query_one("#quiz-missed", OptionList)
            if missed.display and missed.option_count and missed.highlighted is not None and self.focused is missed:
                return  # the option list handles its own Enter
            self._dismiss()
        elif self.phase == EMPTY:
            self._dismiss()

    @on(Input.Submitted, "#quiz-fill")
    def _fill_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.phase == ANSWER:
            self._submit_text(event.value)

    def _submit_text(self, value: str) -> None:
        if not value.strip():
            self.notify("答案是空的：请输入答案，不会就输入 ?", severity="warning")
            return
        assert self.session is not None
        self._after_answer(self.session.answer(value))

    def _save_in_background(self, finish: bool = False) -> None:
        """Store the answers given (``finish``: and the chapter's completion) on a thread, never
        the UI's: a locked, full or read-only database must not freeze the screen. A failure is
        a notification saying what was not saved and why; the answers stay in the session and
        the next answer or the end of the quiz tries again."""
        s = self.session
        if s is None:
            return
        app, store = self.app, self.store

        def job():
            try:
                with _WRITER_LOCK:
                    if s.writer is None:  # its own connection: UI reads never queue behind it
                        from torchcourse.progress import open_store

                        s.writer, _ = open_store(store.path, course_id=store.course_id)
                if not finish:
                    s.save()
                    return
                completed = s.finish()
                if self.is_attached:
                    app.call_from_thread(self._completion_known, completed)
                else:  # the quiz is closed: the screen below (home) shows the stored state again
                    app.call_from_thread(_refresh_current, app)
            except Exception as exc:  # noqa: BLE001 - StoreError or an OS error: say it, keep going
                n = len(s.unsaved)
                what = f"{n} 题的作答" if n else "本章的完成状态"
                app.call_from_thread(
                    app.notify, f"{what}没有保存：{exc}。答案先留在内存里，下次作答或结束测验时会再试。",
                    title="进度没有保存", severity="error", timeout=15,
                )

        app.run_worker(job, thread=True, group=SAVE_GROUP, exit_on_error=False)

    def _completion_known(self, completed: list[str]) -> None:
        s = self.session
        if s is None or self.phase != SUMMARY or s.chapter_id not in completed:
            return
        self._summary_lines.insert(1, f"🎉 {chapter_label(self.course, s.chapter_id)}已完成。")
        self.query_one("#quiz-summary", Static).update(Text("\n".join(self._summary_lines)))

    def _after_answer(self, result: Result) -> None:
        self._save_in_background()
        q = result.question
        self.last = result
        fill = self.query_one("#quiz-fill", Input)
        if fill.display:
            fill.disabled = True
        if q.has_choices:
            self._render_choices(result)
        verdict = self.query_one("#quiz-verdict", Static)
        if result.grade.correct:
            # an open question is graded by the learner: say what was recorded, not a judgement
            verdict.update(Text("已记为答对" if q.kind == "open" else "✓ 正确", style="bold green"))
            verdict.set_class(True, "-right")
            verdict.set_class(False, "-wrong")
        else:
            msg = "已记为答错" if q.kind == "open" else f"✗ 不对。正确答案：{correct_answer_text(q)}"
            verdict.update(Text(msg, style="bold red"))
            verdict.set_class(False, "-right")
            verdict.set_class(True, "-wrong")
        verdict.display = True
        explain = self.query_one("#quiz-explain", Markdown)
        explain.update(f"**解释**：{q.explain}")
        explain.display = True
        where = self.query_one("#quiz-where", Static)
        where.update(Text(f"出处：{self.session.where(result)}"))  # type: ignore[union-attr]
        where.display = True
        last = self.session is not None and self.session.done
        self.query_one("#quiz-hint", Static).update(Text("按回车看结果。" if last else "按回车进入下一题。"))
        snippet = self.session.snippet_for(result.chapter_id, q) if self.session else None
        if snippet is not None:
            self._start_run(snippet)
        self.query_one("#quiz-body").focus()
        self._set_phase(FEEDBACK)

    def _next(self) -> None:
        assert self.session is not None
        if self.session.done:
            self._show_summary()
        else:
            self._show_question()

    # -- predict: the real run ---------------------------------------------------------------

    def _start_run(self, snippet) -> None:
        run = self.query_one("#quiz-run", Static)
        run.display = True
        if self.runner is None:
            self._show_run_text(snippet.expected or "", "（没有运行器：下面是书中记录的输出）")
            return
        run.update(Text(f"⏳ 正在运行片段 {snippet.key} ……（不用等，回车可以先进入下一题）", style="italic"))
        self._cancel = threading.Event()
        self._run_worker(self._token, snippet, self._cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group=RUN_GROUP)
    def _run_worker(self, token: int, snippet, cancel: threading.Event):
        from torchcourse.quiz.session import run_output

        result = self.runner.run(snippet, cancel=cancel)
        text, note = run_output(result)
        return token, text, note, getattr(result, "seconds", 0.0)

    @on(Worker.StateChanged)
    def _run_done(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group != RUN_GROUP:
            return
        if event.state == WorkerState.SUCCESS and worker.result is not None:
            token, text, note, seconds = worker.result
            if token == self._token and self.phase == FEEDBACK:
                self._show_run_text(text, note, seconds)
        elif event.state == WorkerState.ERROR and self.phase == FEEDBACK:
            self._show_run_text("", f"（运行失败：{worker.error}）")

    def _show_run_text(self, text: str, note: str | None, seconds: float | None = None) -> None:
        head = "实际输出"
        if seconds:
            head += f"（{seconds:.2f} 秒）"
        body = Text(head + "：" + (f" {note}" if note else "") + "\n", style="bold")
        body.append(text.rstrip("\n") or "（没有输出）", style="")
        run = self.query_one("#quiz-run", Static)
        run.update(body)
        run.display = True

    def _cancel_run(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
            self._cancel = None

    # -- the end ------------------------------------------------------------------------------

    def _show_summary(self) -> None:
        s = self.session
        assert s is not None
        self._cancel_run()
        self._hide_all()
        self._save_in_background(finish=True)  # "已完成" is added when the store has answered
        self.query_one("#quiz-head", Static).update(Text(f"{self._title()}   结果"))
        lines = [f"得分：{s.score}/{s.total}（{round(100 * s.score / s.total) if s.total else 0}%）"]
        self._summary_lines = lines
        if s.chapter_id is not None:
            if s.total and s.score < PASS_RATIO * s.total:
                lines.append("达到 80% 才算通过本章检查点：回看下面的小节后再测一次。")
        if s.missed:
            days = "、".join(str(d) for d in INTERVALS)
            lines.append(f"答错的题会进入复习（按 {days} 天的间隔再出现）。")
            lines.append("")
            lines.append("答错的题：选中一题按回车，跳到讲它的小节；Esc 返回。")
        else:
            lines.append("")
            lines.append("全部答对！按回车或 Esc 返回。")
        summary = self.query_one("#quiz-summary", Static)
        summary.update(Text("\n".join(lines)))
        summary.display = True
        missed = self.query_one("#quiz-missed", OptionList)
        missed.clear_options()
        if s.missed:
            missed.add_options(
                Option(Text(f"✗ {_first_line(r.question.prompt)}\n   回看：{s.where(r)}"), id=str(i)) for i, r in enumerate(s.missed)
            )
            missed.display = True
            missed.highlighted = 0
            missed.focus()
        else:
            self.query_one("#quiz-body").focus()
        self._set_phase(SUMMARY)

    @on(OptionList.OptionSelected, "#quiz-missed")
    def _missed_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        s = self.session
        if s is None or event.option_id is None:
            return
        r = s.missed[int(event.option_id)]
        anchor = r.question.section or ""
        self._dismiss(goto=(r.chapter_id, anchor))

    def action_leave(self) -> None:
        self._dismiss()

    def _dismiss(self, goto: tuple[str, str] | None = None) -> None:
        self._cancel_run()
        s = self.session
        if s is None:
            self.dismiss(QuizOutcome(None, 0, 0, None))
            return
        if self.phase != SUMMARY and s.answered:
            self._save_in_background(finish=True)  # a half-done quiz still counts what was answered
        self.dismiss(s.outcome(goto))

    def on_unmount(self) -> None:
        self._cancel_run()


class ReviewScreen(QuizScreen):
    """Today's due questions (answered wrong before), across all chapters."""

    BINDINGS = [Binding("escape", "leave", "离开复习", key_display="Esc")]

    def __init__(self, course, store, runner, *, today: date | None = None, clock=None, name: str | None = None):
        self.today = today
        super().__init__(course, None, store, runner, clock=clock, name=name)

    def _make_session(self, chapter_id: str | None) -> QuizSession:
        return QuizSession.for_review(self.course, self.store, today=self.today, clock=self.clock)

    def _title(self) -> str:
        return "🔁 复习"

    def _empty_title(self) -> str:
        return "🔁 复习"

    def _nothing_due(self) -> str:
        nxt = next_review_day(self.course, self.store, after=self.today)
        tail = f"下一次有题到期是 {nxt.isoformat()}。" if nxt else "答错过的题会在这里按间隔重复出现。"
        return f"今天没有到期的复习题。{tail}"


def _first_line(text: str, width: int = 60) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"
