"""The reader's snippets: choosing, running, editing and cancelling them.

Owns: which snippet ``x`` / ``X`` / ``e`` mean (the selected one on screen, else the first on
screen), Tab / Shift+Tab, a run in a worker thread through the app's runner (fresh with ``X``,
the learner's edit with ``e``) and its verdict, ``a`` (run all, then a summary), ``z`` (cancel),
keeping or forgetting an edit and ``u`` (restore the book's code). The screen forwards the
snippets' and editor's messages here.

May call: :class:`~.positions.Positions` (snippet tops, what is on screen); the
widgets (``SnippetView``, the editor); the host screen's Textual API (``app`` for the runner,
the progress queue and dialogs, ``focused``, ``notify``, ``run_worker``, ``query``) and its
``chapter`` and ``loaded_event``. Never the screen module, the reading place or navigation
(``tests/test_layers.py``).
"""

from __future__ import annotations

import threading
from functools import partial
from types import SimpleNamespace

from textual.widget import Widget

from torchcourse.tui.reader.positions import Positions
from torchcourse.tui.widgets.snippet import SnippetView

RUN_ALL_GROUP = "run-all"


def _snippet_of(widget: Widget | None) -> SnippetView | None:
    """The snippet holding ``widget`` (itself, or an ancestor such as its editor's text area)."""
    while widget is not None and not isinstance(widget, SnippetView):
        widget = widget.parent  # type: ignore[assignment]
    return widget if isinstance(widget, SnippetView) else None


class Snippets:
    """The open chapter's snippet runs and edits (see the module docstring)."""

    def __init__(self, screen, positions: Positions) -> None:
        self.screen = screen  # the host: its Textual API, chapter and ``loaded_event``
        self.positions = positions
        self.chapter = positions.chapter
        self._cancels: dict[int, threading.Event] = {}
        self._run_all_cancel: threading.Event | None = None

    # -- which snippet ------------------------------------------------------------------------

    def focused_or_visible(self) -> SnippetView | None:
        """The snippet x runs: the selected one while it is on screen, else the first on screen
        (never one selected earlier and scrolled away: the learner reads what is in view)."""
        focused = self.screen.focused
        if isinstance(focused, SnippetView) and self.positions.on_screen(focused):
            return focused
        top, bottom = self.positions.view_range()
        for view, y in self.positions.snippet_tops():
            if y >= bottom:
                break
            if view.snippet.runnable and y + view.outer_size.height > top:
                return view
        return None

    def step(self, step: int) -> None:
        """Tab / Shift+Tab: the next / previous snippet from the selected one when it is on
        screen, else from where the learner is reading (the top of the view)."""
        tops = self.positions.snippet_tops()
        views = [v for v, _y in tops]
        focused = self.screen.focused if isinstance(self.screen.focused, SnippetView) else None
        if focused is not None and focused in views and self.positions.on_screen(focused):
            i = views.index(focused) + step
        else:
            top = self.positions.body.scroll_y
            if step > 0:
                i = next((j for j, (_v, y) in enumerate(tops) if y >= top), len(views))
            else:
                i = max((j for j, (_v, y) in enumerate(tops) if y < top), default=-1)
        if not 0 <= i < len(views):
            self.screen.notify("后面没有代码块了。" if step > 0 else "前面没有代码块了。")
            return
        views[i].focus()
        views[i].scroll_visible(animate=False)

    # -- running ------------------------------------------------------------------------------

    def run(self, *, fresh: bool = False) -> None:
        """``x`` (``X``: again without the cache, in a brand-new interpreter) on the snippet in view."""
        view = self.focused_or_visible()
        if view is None:
            self.screen.notify("屏幕上没有可以运行的代码块。按 Tab 选一个。")
            return
        if fresh and view.state != "running":
            view.fresh_run = True
        view.request_run()

    def run_requested(self, view: SnippetView) -> None:
        if id(view) in self._cancels:
            return
        cancel = threading.Event()
        self._cancels[id(view)] = cancel
        view.show_running()
        self.screen.call_after_refresh(self._reveal, view)  # the spinner: x on a block near the bottom
        self.screen.run_worker(partial(self._run_one, view, cancel), name="_run_one", group="run", thread=True,
                               exit_on_error=False)

    def _reveal(self, view: SnippetView) -> None:
        """Scroll just enough that the block's verdict line (spinner or result) is on screen."""
        found = view.query(".verdict")
        if found and view.is_attached:
            found.first().scroll_visible(animate=False)
        view.result_revealed = view.state == "done"  # tests wait for this state, not for time

    def _run_one(self, view: SnippetView, cancel: threading.Event) -> None:  # in a worker thread
        result = self._run_blocking(view, cancel)
        app = self.screen.app
        app.call_from_thread(self._finish, view, result)
        app.call_from_thread(lambda: self.screen.call_after_refresh(self._reveal, view))

    def _runner_is_warm(self) -> bool:
        runner = self.screen.app.runner
        get = getattr(runner, "get", None)
        real = get() if get is not None else runner
        return bool(getattr(real, "warm", False))

    def _queued(self, view: SnippetView, place: int) -> None:  # from the runner's thread
        # posted, not called from the thread: the class runner's client keeps reading its socket
        # whatever the screen does (a frozen screen left a class runner's worker waiting on it)
        view.post_message(SnippetView.QueuePlace(place))

    def _runner_reports_queue(self) -> bool:
        runner = self.screen.app.runner
        get = getattr(runner, "get", None)
        try:
            real = get() if get is not None else runner
        except Exception:
            return False
        import inspect

        try:  # the class runner's client takes on_queue= (torchcourse.runner.classroom); a Runner does not
            return "on_queue" in inspect.signature(real.run).parameters
        except (TypeError, ValueError):
            return False

    def _run_blocking(self, view: SnippetView, cancel: threading.Event):
        app = self.screen.app
        snippet = view.effective_snippet()  # the learner's edit runs under the same runner and isolation
        edited = snippet is not view.snippet
        fresh, view.fresh_run = getattr(view, "fresh_run", False), False  # X: no cache, a new interpreter
        kwargs = {"use_cache": False} if edited else {}
        if fresh:
            kwargs = {"use_cache": False, "cold": True}
        if self._runner_reports_queue():  # a class: the shared runner's queue, on the verdict line
            kwargs["on_queue"] = partial(self._queued, view)
        try:
            result = app.runner.run(snippet, cancel=cancel, **kwargs)
        except Exception as exc:  # never crash the UI; show what happened
            result = SimpleNamespace(status="error", actual=None, expected=view.snippet.expected, diff=None,
                                     seconds=None, message=f"{type(exc).__name__}: {exc}", cached=False, truncated=False)
        try:  # which mode ran, for the verdict line (a cached result names none)
            result.mode = "cold" if (fresh or snippet.cold or snippet.gpu or not self._runner_is_warm()) else "warm"
        except Exception:
            pass
        if edited:
            result.edited = True  # the verdict says the code was changed (not a failure of the book)
        cid, sid = self.chapter.id, view.snippet.id
        verdict = f"edited-{result.status}" if edited else result.status
        app.save_progress(f"#{sid} 的运行记录", lambda s: s.record_run(cid, sid, verdict))  # queued
        return result

    def _finish(self, view: SnippetView, result) -> None:
        self._cancels.pop(id(view), None)
        view.show_result(result)

    def toggle_frames(self) -> None:
        """``o``: the real traceback frames of the selected snippet's run, else of the first on
        screen that has some (walk L6: the actual output shows them as ``  ...``)."""
        focused = _snippet_of(self.screen.focused)
        top, bottom = self.positions.view_range()
        views = [focused] if focused is not None and self.positions.on_screen(focused) else []
        views += [v for v, y in self.positions.snippet_tops() if y < bottom and y + v.outer_size.height > top]
        for view in views:
            if view.toggle_frames():
                return
        self.screen.notify("屏幕上没有可以展开的调用栈：运行一个报错的代码块（x）后再按 o。")

    def toggle_proof(self) -> None:
        """``p``: open or fold the selected proof snippet, else the first proof on screen."""
        focused = _snippet_of(self.screen.focused)
        top, bottom = self.positions.view_range()
        views = [focused] if focused is not None and self.positions.on_screen(focused) else []
        views += [v for v, y in self.positions.snippet_tops() if y < bottom and y + v.outer_size.height > top]
        for view in views:
            if view.toggle_proof():
                return
        self.screen.notify("屏幕上没有折起来的证明（「🔎 证明」那一行）。")

    def cancel(self) -> None:
        events = list(self._cancels.values())
        if self._run_all_cancel is not None:
            events.append(self._run_all_cancel)
        if not events:
            self.screen.notify("现在没有在运行的代码块。")
            return
        for ev in events:
            ev.set()
        self.screen.notify("已请求取消运行。")

    def run_all(self) -> None:
        if self._run_all_cancel is not None:
            self.screen.notify("已经在运行本章全部代码块了（z 取消）。")
            return
        self._run_all_cancel = threading.Event()
        self.screen.notify("开始依次运行本章所有代码块……")
        self.screen.run_worker(partial(self._run_all, self._run_all_cancel), name="_run_all", group=RUN_ALL_GROUP,
                               thread=True, exclusive=True, exit_on_error=False)

    def _run_all(self, cancel: threading.Event) -> None:  # in a worker thread
        from torchcourse.tui.screens.dialogs import STATUS_NAMES

        screen, app = self.screen, self.screen.app
        screen.loaded_event.wait(30)
        views = app.call_from_thread(lambda: [v for v in screen.query(SnippetView) if v.snippet.runnable])
        counts: dict[str, int] = {}
        failed: list[str] = []
        for view in views:
            if cancel.is_set():
                counts["cancelled"] = counts.get("cancelled", 0) + 1
                continue
            self._cancels[id(view)] = cancel
            app.call_from_thread(view.show_running)
            result = self._run_blocking(view, cancel)
            app.call_from_thread(self._finish, view, result)
            counts[result.status] = counts.get(result.status, 0) + 1
            if result.status in ("mismatch", "error", "timeout"):
                changed = "，代码已改动" if getattr(result, "edited", False) else ""
                failed.append(f"#{view.snippet.id}（{STATUS_NAMES.get(result.status, result.status)}{changed}）")
        app.call_from_thread(self._run_all_done, counts, failed, len(views))

    def _run_all_done(self, counts: dict[str, int], failed: list[str], total: int) -> None:
        self._run_all_cancel = None
        from torchcourse.tui.screens.dialogs import RunSummaryScreen

        self.screen.app.push_screen(RunSummaryScreen(self.chapter, counts, failed, total))

    def worker_failed(self, group: str) -> None:
        """A worker of the screen ended in an error: a failed run-all may be started again."""
        if group == RUN_ALL_GROUP:
            self._run_all_cancel = None

    # -- editing (改一改再跑) --------------------------------------------------------------------

    def edit(self) -> None:
        """``e``: open the snippet in view (as ``x`` chooses) in an editor, in place."""
        view = self.focused_or_visible()
        if view is None:
            view = _snippet_of(self.screen.focused)
        if view is None:
            self.screen.notify("屏幕上没有可以改的代码块（阅读页里 e 是改代码）：按 Tab 选一个。要反查报错，按 Ctrl+P 选「报错反查」。")
            return
        if view.snippet.norun:
            self.screen.notify(f"#{view.snippet.id} 只供阅读（不运行），不能改。")
            return
        from torchcourse.tui.widgets.editor import live_editor, open_editor

        editor = live_editor(view)  # not one still being removed after u or Esc: a new one then
        if editor is not None:
            editor.focus_area()
            return
        open_editor(view, view.code)

    def _keep_edit(self, view: SnippetView, code: str) -> None:
        """Store the learner's version (or forget it when it is the book's again); show it."""
        cid, sid, app = self.chapter.id, view.snippet.id, self.screen.app
        if code == view.snippet.code:
            app.save_progress(f"#{sid} 恢复原文", lambda s: s.delete_edit(cid, sid))
        else:
            app.save_progress(f"#{sid} 改过的代码", lambda s: s.save_edit(cid, sid, code))
        view.set_edited(code)

    def run_edited(self, view: SnippetView, code: str) -> None:
        """Ctrl+R in the editor: keep the edit and run it."""
        self._keep_edit(view, code)
        if view.state == "running":
            self.screen.notify("这个代码块还在运行（z 取消）。")
            return
        view.request_run()

    def leave_editor(self, view: SnippetView, code: str) -> None:
        """Esc in the editor: keep the edit, close the editor, select the snippet."""
        from torchcourse.tui.widgets.editor import close_editor

        self._keep_edit(view, code)
        close_editor(view)
        view.focus()

    def restore(self) -> None:
        """``u``: the book's version again, after a confirmation."""
        focused = _snippet_of(self.screen.focused)
        view = focused if focused is not None and focused.edited_code is not None else None
        if view is None:
            top, bottom = self.positions.view_range()
            for v in self.screen.query(SnippetView):
                y = self.positions.y(v)
                if v.edited_code is not None and y + v.outer_size.height > top and y < bottom:
                    view = v
                    break
        if view is None:
            self.screen.notify("屏幕上没有改过的代码块（改过的标着 ✏️）。")
            return
        from torchcourse.tui.widgets.editor import ConfirmRestore, close_editor

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            cid, sid = self.chapter.id, view.snippet.id
            self.screen.app.save_progress(f"#{sid} 恢复原文", lambda s: s.delete_edit(cid, sid))
            close_editor(view)
            view.set_edited(None)
            view.clear_result()  # the edited run's panel and verdict go with the edit (walk L3)
            view.focus()
            self.screen.notify(f"#{view.snippet.id} 已恢复成书上的原文。")

        self.screen.app.push_screen(ConfirmRestore(view.snippet.id), answered)
