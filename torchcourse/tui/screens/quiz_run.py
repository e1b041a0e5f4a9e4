"""A predict question's real run: the snippet runs in a thread worker after the guess, its
output (or why there is none) is shown under the verdict, and a run still going when the
learner moves on is cancelled. A mixin of :class:`torchcourse.tui.screens.quiz.QuizScreen`.
"""

from __future__ import annotations

import threading

from rich.text import Text
from textual import work
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from torchcourse.tui.screens import quiz_view as view
from torchcourse.tui.screens.quiz_view import FEEDBACK

RUN_GROUP = "quiz-predict"


class RunOutput(Static):
    """The real output's box. It grows when the output lands, a layout after the update: only
    then can the screen scroll all of it (and the hint under it) into view."""

    def on_resize(self, event) -> None:
        if self.display and getattr(self.screen, "phase", None) == FEEDBACK:
            # after the next refresh: by then the scroll container knows its new height too
            self.call_after_refresh(self.screen._reveal_feedback)


class PredictRun:
    """Needs ``runner``, ``session``, ``phase``, ``_token``, ``_cancel``, ``_show_text`` and
    ``_reveal_feedback`` from the screen."""

    def _start_run(self, snippet) -> None:
        if self.runner is None:
            self._show_run_text(snippet.expected or "", "（没有运行器：下面是书中记录的输出）")
            return
        self._show_text("run", Text(f"⏳ 正在运行片段 {snippet.key} ……（不用等，回车可以先进入下一题）", style="italic"))
        self._cancel = threading.Event()
        self._run_worker(self._token, snippet, self._cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group=RUN_GROUP)
    def _run_worker(self, token: int, snippet, cancel: threading.Event):
        from torchcourse.quiz.session import run_output

        result = self.runner.run(snippet, cancel=cancel)
        text, note = run_output(result)
        # a cached result's seconds are those of the run that made it: its note says so instead
        return token, text, note, 0.0 if getattr(result, "cached", False) else getattr(result, "seconds", 0.0)

    def _run_done(self, event: Worker.StateChanged) -> None:
        """The screen's Worker.StateChanged handler calls this."""
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
        self._show_text("run", view.run_text(text, note, seconds))
        if self.session is not None:
            self._show_text("hint", view.next_hint(self.session.done))
        self.call_after_refresh(self._reveal_feedback)

    def _cancel_run(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
            self._cancel = None


__all__ = ["PredictRun", "RunOutput", "RUN_GROUP"]
