"""The checkpoint quiz and the review, as Textual screens: the grading flow.

``QuizScreen(course, chapter_id, store, runner)`` asks one question at a time and dismisses
with a :class:`QuizOutcome` (``goto`` set when the learner picked a missed question to read
its section again). ``ReviewScreen(course, store, runner)`` does the same for the questions
due for review today. Every answer is stored the moment it is given (see
:class:`torchcourse.quiz.session.QuizSession`); predict questions run their snippet in a
thread worker, so the UI never waits for it.

The choices are shown in this attempt's own order (``seed``; see ``quiz/order.py``). A chapter
quiz left half-way (Esc) offers, when opened again, to continue at its first unanswered
question or to start again. What is drawn lives in ``quiz_view``, what is stored in
``quiz_save``; this module is the flow between them. After each step the part the learner must
see next is scrolled into view: the options when a question opens, the verdict, explanation and
real output after an answer. The footer's Enter entry names what Enter does now.
"""

from __future__ import annotations

import threading
from datetime import date

from rich.syntax import Syntax
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Markdown, OptionList, Static
from textual.worker import Worker

from torchcourse.quiz.text import quiz_markdown
from torchcourse.quiz.review import next_review_day
from torchcourse.quiz.session import QuizError, QuizOutcome, QuizSession, Result, chapter_label
from torchcourse.tui.screens import quiz_view as view
from torchcourse.tui.screens.quiz_ends import QuizEnds
from torchcourse.tui.screens.quiz_run import PredictRun, RunOutput
from torchcourse.tui.screens.quiz_save import resume_offer, retake_offer, save_in_background
from torchcourse.tui.screens.quiz_view import ANSWER, EMPTY, FEEDBACK, JUDGE, RESUME, SUMMARY
from torchcourse.tui.screens.quiz_view import HangingChoices  # noqa: F401 - re-exported for callers
from torchcourse.tui.bindings import QUIZ_BINDINGS  # kept below the screens: the help screen reads them too

__all__ = ["QuizScreen", "ReviewScreen", "QuizOutcome"]

LAYOUT_GROUP = "quiz-layout"


class QuizScreen(PredictRun, QuizEnds, Screen[QuizOutcome]):
    CSS_PATH = "quiz.tcss"
    is_quiz = True  # quiz_save.refresh_below tells a quiz screen by this (it cannot import this module)

    BINDINGS = QUIZ_BINDINGS

    def __init__(self, course, chapter_id: str | None, store, runner, *, clock=None, seed: int | None = None,
                 name: str | None = None):
        super().__init__(name=name)
        self.course = course
        self.store = store
        self.runner = runner
        self.clock = clock
        self.seed = seed  # None: a fresh order for this attempt (tests fix it)
        self.error: str | None = None
        self.session: QuizSession | None = None
        try:
            self.session = self._make_session(chapter_id)
        except QuizError as exc:
            self.error = str(exc)
        if self.session is not None:
            self.session.autosave = False  # writes run off the UI thread: quiz_save
        self.offer = resume_offer(course, store, chapter_id) if self.session is not None and self.session.chapter_id else None
        self.retake = retake_offer(course, store, self.session) if self.offer is None else None
        self._summary_lines: list[str] = []
        self.phase = EMPTY
        self.picked: set[int] = set()  # shown positions
        self.cursor = 0
        self.last: Result | None = None
        self._cancel: threading.Event | None = None
        self._token = 0  # which question a running snippet (or a pending scroll) belongs to

    def _make_session(self, chapter_id: str | None) -> QuizSession:
        assert chapter_id is not None
        return QuizSession.for_chapter(self.course, self.store, chapter_id, clock=self.clock, seed=self.seed)

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="quiz-head")
        with VerticalScroll(id="quiz-body"):
            # a predict snippet first, the question right above its options: when the code is
            # taller than the screen, what scrolls away is the code's top, never the question
            yield Static(id="quiz-code")
            yield Markdown(id="quiz-prompt")
            yield Static(id="quiz-choices")
            yield Input(id="quiz-fill", placeholder="输入答案，回车提交（不会就输入 ?）")
            yield Markdown(id="quiz-reference")
            yield Static(id="quiz-verdict")
            yield Markdown(id="quiz-explain")
            yield Static(id="quiz-where")
            yield RunOutput(id="quiz-run")
            yield Static(id="quiz-hint")
            yield Static(id="quiz-summary")
            yield OptionList(id="quiz-resume")
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
        elif self.offer is not None:
            self._show_resume()
        elif self.retake is not None:
            self._show_retake()
        else:
            self._show_question()

    def _nothing_due(self) -> str:
        return "没有题目。"

    @property
    def body(self) -> VerticalScroll:
        return self.query_one("#quiz-body", VerticalScroll)

    def _w(self, wid: str):
        return self.query_one(f"#quiz-{wid}")

    def _title(self) -> str:
        s = self.session
        assert s is not None
        chapter = self.course.chapter(s.chapter_id) if s.chapter_id else None
        return f"✅ {chapter_label(self.course, s.chapter_id)}检查点 · {chapter.title if chapter else ''}"

    def _hide_all(self) -> None:
        for wid in ("prompt", "code", "choices", "fill", "hint", "reference", "verdict", "explain", "where", "run",
                    "summary", "resume", "missed"):
            self._w(wid).display = False

    def _set_phase(self, phase: str) -> None:
        self.phase = phase
        self.refresh_bindings()

    def _head(self, text: str) -> None:
        self.query_one("#quiz-head", Static).update(Text(text))

    def _show_text(self, wid: str, text) -> None:
        widget = self._w(wid)
        widget.update(Text(text) if isinstance(text, str) else text)
        widget.display = True

    def _show_empty(self, message: str) -> None:
        self._hide_all()
        self._head(self._empty_title())
        self._show_text("summary", message + "\n\n按回车或 Esc 返回。")
        self._set_phase(EMPTY)

    def _empty_title(self) -> str:
        return "✅ 检查点"

    def _after_layout(self, pending, then) -> None:
        """Run ``then`` once the Markdown updates in ``pending`` are mounted and laid out, unless
        the learner has moved to another question meanwhile."""
        token = self._token

        async def settle() -> None:
            for p in pending:
                await p
            self.call_after_refresh(lambda: token == self._token and self.is_attached and then())

        self.run_worker(settle(), group=LAYOUT_GROUP, exit_on_error=False)

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
        self._head(f"{self._title()}   第 {s.index + 1}/{s.total} 题{where} · {q.kind_name}")
        prompt = self.query_one("#quiz-prompt", Markdown)
        pending = [prompt.update(quiz_markdown(q.prompt))]  # __init__ as written
        prompt.display = True
        snippet = s.snippet_for(chapter_id, q)
        if snippet is not None:
            code = self._w("code")
            code.update(Syntax(snippet.code.rstrip("\n"), "python", theme="ansi_dark", background_color="default"))
            code.border_title = f"片段 {snippet.key}"
            code.display = True
        self._show_text("hint", view.answer_hint(q))
        if q.has_choices:
            self._render_choices()
            self._w("choices").display = True
            self.body.focus()
        elif q.kind == "open":
            self.body.focus()
        else:
            fill = self.query_one("#quiz-fill", Input)
            fill.value = ""
            fill.disabled = False
            fill.display = True
            fill.focus()
        self.body.scroll_home(animate=False)
        self._set_phase(ANSWER)
        self._after_layout(pending, self._reveal_question)

    def _reveal_question(self) -> None:
        """The question, its options (or the answer box) and the hint under them on screen: a
        long snippet scrolls up just enough, never the options below the screen."""
        if self._current() is not None:
            view.reveal(self.body, self._w("prompt"), self._w("hint"))

    def _reveal_feedback(self) -> None:
        """The verdict, the explanation and the real output on screen; the graded options too
        when everything fits."""
        last = self._w("run") if self._w("run").display else self._w("where")
        choices = self._w("choices")
        window = self.body.scrollable_content_region.height
        if choices.display:
            top = choices.virtual_region_with_margin.y
            if last.virtual_region_with_margin.bottom - top <= window:
                view.reveal(self.body, choices, last)
                return
        view.reveal(self.body, self._w("verdict"), last)

    def _render_choices(self, result: Result | None = None) -> None:
        s = self.session
        assert s is not None
        if result is not None:
            q, order = result.question, result.order or s.order(result.chapter_id, result.question)
        else:
            cid, q = s.current  # type: ignore[misc]
            order = s.order(cid, q)
        rows = view.choice_rows(q, order, self.picked, None if result is not None else self.cursor, graded=result is not None)
        self._w("choices").update(rows)

    def _current(self):
        s = self.session
        if s is None or s.current is None or self.phase == RESUME:
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
        if action in ("reveal", "reveal_enter"):
            return self.phase == ANSWER and q is not None and q.kind == "open"
        if action == "self_grade":
            return self.phase == JUDGE
        if action == "submit":
            return self.phase == ANSWER and q is not None and q.kind != "open"
        if action in ("next", "results"):
            last = self.session is not None and self.session.done
            return self.phase == FEEDBACK and (action == "results") == last
        if action == "choose":
            return self.phase == RESUME
        if action == "goto_missed":
            return self.phase == SUMMARY and self._w("missed").display
        if action == "back":
            return self.phase == EMPTY or (self.phase == SUMMARY and not self._w("missed").display)
        return True

    def action_page(self, direction: int) -> None:
        if direction > 0:
            self.body.scroll_page_down(animate=False)
        else:
            self.body.scroll_page_up(animate=False)

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
        pending = [ref.update(f"**参考答案**\n\n{quiz_markdown(q.reference or '')}")]
        ref.display = True
        self._show_text("hint", "对照参考答案：答对了按 y，没答对按 n。")
        self._set_phase(JUDGE)
        self._after_layout(pending, lambda: view.reveal(self.body, self._w("reference"), self._w("hint")))

    def action_reveal_enter(self) -> None:
        self.action_reveal()

    def action_self_grade(self, right: bool) -> None:
        if self.phase != JUDGE or self.session is None:
            return
        self._after_answer(self.session.answer(bool(right)))

    def action_submit(self) -> None:
        """Enter, whatever the phase (the phase-named bindings all come here)."""
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
            if missed.display and missed.option_count and missed.highlighted is not None:
                if self.focused is not missed:
                    missed.action_select()
                return  # the option list handles its own Enter
            self._dismiss()
        elif self.phase == RESUME:
            choices = self.query_one("#quiz-resume", OptionList)
            if self.focused is not choices:
                choices.action_select()
        elif self.phase == EMPTY:
            self._dismiss()

    action_next = action_results = action_choose = action_goto_missed = action_back = action_submit

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

    def _after_answer(self, result: Result) -> None:
        save_in_background(self)
        q = result.question
        self.last = result
        fill = self.query_one("#quiz-fill", Input)
        if fill.display:
            fill.disabled = True
        if q.has_choices:
            self._render_choices(result)
        text, right = view.verdict(result)
        verdict = self._w("verdict")
        verdict.set_class(right, "-right")
        verdict.set_class(not right, "-wrong")
        self._show_text("verdict", text)
        explain = self.query_one("#quiz-explain", Markdown)
        pending = [explain.update(f"**解释**：{quiz_markdown(q.explain)}")]
        explain.display = True
        self._show_text("where", f"出处：{self.session.where(result)}")  # type: ignore[union-attr]
        snippet = self.session.snippet_for(result.chapter_id, q) if self.session else None
        last = self.session is not None and self.session.done
        self._show_text("hint", view.next_hint(last, predict_running=snippet is not None and self.runner is not None))
        if snippet is not None:
            self._start_run(snippet)
        self.body.focus()
        self._set_phase(FEEDBACK)
        self._after_layout(pending, self._reveal_feedback)

    def _next(self) -> None:
        assert self.session is not None
        if self.session.done:
            self._show_summary()
        else:
            self._show_question()

    @on(OptionList.OptionSelected, "#quiz-resume")
    def _on_resume_choice(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._resume_selected(event)

    @on(OptionList.OptionSelected, "#quiz-missed")
    def _on_missed_choice(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._missed_selected(event)

    @on(Worker.StateChanged)
    def _on_worker(self, event: Worker.StateChanged) -> None:
        self._run_done(event)

    def on_unmount(self) -> None:
        self._cancel_run()


class ReviewScreen(QuizScreen):
    """Today's due questions (answered wrong before), across all chapters."""

    BINDINGS = [Binding("escape", "leave", "离开复习", key_display="Esc")]

    def __init__(self, course, store, runner, *, today: date | None = None, clock=None, seed: int | None = None,
                 name: str | None = None):
        self.today = today
        super().__init__(course, None, store, runner, clock=clock, seed=seed, name=name)

    def _make_session(self, chapter_id: str | None) -> QuizSession:
        return QuizSession.for_review(self.course, self.store, today=self.today, clock=self.clock, seed=self.seed)

    def _title(self) -> str:
        return "🔁 复习"

    def _empty_title(self) -> str:
        return "🔁 复习"

    def _nothing_due(self) -> str:
        nxt = next_review_day(self.course, self.store, after=self.today)
        tail = f"下一次有题到期是 {nxt.isoformat()}。" if nxt else "答错过的题会在这里按间隔重复出现。"
        return f"今天没有到期的复习题。{tail}"
