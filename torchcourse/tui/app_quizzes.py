"""The checkpoint quizzes and the review of due questions, opened from anywhere in the app; a
quiz that ends updates the chapter's completion and may jump to the section to re-read. A mixin
of :class:`torchcourse.tui.app.TorchCourseApp`."""

from __future__ import annotations


class Quizzes:
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
