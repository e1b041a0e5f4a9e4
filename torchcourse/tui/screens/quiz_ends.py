"""The quiz's two ends: the offer to continue a chapter quiz left half-way (or start again),
and the summary with the missed questions, plus leaving. A mixin of
:class:`torchcourse.tui.screens.quiz.QuizScreen`.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from torchcourse.quiz.completion import PASS_RATIO
from torchcourse.progress.model import score_words
from torchcourse.quiz.session import QuizOutcome, QuizSession, chapter_label, limit_to_wrong
from torchcourse.tui.screens import quiz_view as view
from torchcourse.tui.screens.quiz_save import forget_left, remember_left, save_in_background
from torchcourse.tui.screens.quiz_view import RESUME, SUMMARY


class QuizEnds:
    """Needs the screen's widgets (``_w``, ``_show_text``, ``_head``, ``_hide_all``), ``session``,
    ``offer``, ``phase``/``_set_phase`` and ``_show_question``."""

    def _show_resume(self) -> None:
        offer = self.offer
        assert offer is not None
        self._hide_all()
        self._head(f"{self._title()}   上次停在第 {offer.next_number}/{offer.total} 题")
        self._show_text("summary", view.resume_text(offer))
        choices = self.query_one("#quiz-resume", OptionList)
        choices.clear_options()
        choices.add_options([Option(f"从第 {offer.next_number} 题继续", id="resume"), Option("重新开始", id="restart")])
        choices.highlighted = 0
        choices.display = True
        choices.focus()
        self._set_phase(RESUME)

    def _show_retake(self) -> None:
        """A failed checkpoint opened again: its score, what is missing, and a retake of all of
        it or only of the questions answered wrong (``torchcourse quiz --wrong`` asks the same)."""
        right, total, wrong = self.retake
        self._hide_all()
        self._head(f"{self._title()}   上次 {score_words(right, total)}")
        self._show_text("summary", view.retake_text(right, total, wrong, PASS_RATIO))
        choices = self.query_one("#quiz-resume", OptionList)
        choices.clear_options()
        choices.add_options([Option(f"只重做答错的 {wrong} 题", id="wrong"), Option(f"重做全部 {total} 题", id="all")])
        choices.highlighted = 0
        choices.display = True
        choices.focus()
        self._set_phase(RESUME)

    def _resume_selected(self, event: OptionList.OptionSelected) -> None:
        if self.phase != RESUME:
            return
        if event.option_id in ("wrong", "all"):  # the retake offer (_show_retake)
            self.retake = None
            if event.option_id == "wrong" and self.session is not None:
                limit_to_wrong(self.session, self.store)
            self._show_question()
            return
        offer, self.offer = self.offer, None
        assert self.session is not None
        if event.option_id == "resume" and offer is not None:
            if offer.session is not None:  # left in this run of the app: the same session goes on
                self.session = offer.session
                for r in self.session.results:
                    r.earlier = True
            else:
                self.session = QuizSession.for_chapter(self.course, self.store, self.session.chapter_id,
                                                       clock=self.clock, resume=offer)
            self.session.autosave = False
        else:
            forget_left(self.store, self.session.chapter_id)
        self._show_question()

    def _completion_known(self, completed: list[str]) -> None:
        s = self.session
        if s is None or self.phase != SUMMARY or s.chapter_id not in completed:
            return
        self._summary_lines.insert(1, f"🎉 {chapter_label(self.course, s.chapter_id)}已完成。")
        self._w("summary").update(Text("\n".join(self._summary_lines)))

    def _show_summary(self) -> None:
        s = self.session
        assert s is not None
        self._cancel_run()
        self._token += 1
        self._hide_all()
        save_in_background(self, finish=True, on_completed=self._completion_known)  # "已完成" once stored
        self._head(f"{self._title()}   结果")
        self._summary_lines = view.summary_lines(s, PASS_RATIO, chapter_quiz=s.chapter_id is not None)
        self._show_text("summary", "\n".join(self._summary_lines))
        missed = self.query_one("#quiz-missed", OptionList)
        missed.clear_options()
        if s.missed:
            missed.add_options(view.missed_options(s))
            missed.display = True
            missed.highlighted = 0
            missed.focus()
        else:
            self.body.focus()
        self.body.scroll_home(animate=False)
        self._set_phase(SUMMARY)

    def _missed_selected(self, event: OptionList.OptionSelected) -> None:
        s = self.session
        if s is None or event.option_id is None:
            return
        r = s.missed[int(event.option_id)]
        review = getattr(self.app, "review_section", None)
        if review is not None:  # the section opens over the results: Esc comes back to this list
            review(r.chapter_id, r.question.section or None)
            return
        self._dismiss(goto=(r.chapter_id, r.question.section or ""))

    def action_leave(self) -> None:
        self._dismiss()

    def _dismiss(self, goto: tuple[str, str] | None = None) -> None:
        self._cancel_run()
        s = self.session
        if s is None:
            self.dismiss(QuizOutcome(None, 0, 0, None))
            return
        if self.phase != SUMMARY and s.answered > s.earlier:
            save_in_background(self, finish=True)  # a half-done quiz still counts what was answered
        if self.phase != RESUME:
            remember_left(self.store, s)
        self.dismiss(s.outcome(goto))


__all__ = ["QuizEnds"]
