"""The app's one write path to the progress store: a queue served by a dedicated thread.

Every progress write the reader and home make (a break reached, the reading place, a part read,
a snippet run, an edit, the route, a chapter's completion) is queued here and done in order on
a thread with its own store connection, never on the UI thread: a database locked by another
process, a full disk or a read-only file never freezes the screen (issue 12, item 2).

A write that fails stays at the head of the queue, in memory, with everything queued after it;
the learner gets a notification naming what was not saved and why, and the thread tries again
every few seconds (and at once when a new write arrives). The screens show what the learner did
without waiting; :class:`PendingView` lets the app's reads see the route and the reading place
still waiting to be written. On exit :meth:`ProgressWriter.close` makes one last try and returns
the descriptions of what is still unsaved.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any, Callable

RETRY_S = 3.0


class _Job:
    __slots__ = ("what", "fn", "done", "key")

    def __init__(self, what: str, fn: Callable[[Any], Any], done: Callable[[Any], None] | None, key: tuple | None):
        self.what, self.fn, self.done, self.key = what, fn, done, key


class ProgressWriter:
    """Queue writes with :meth:`submit` (from any thread); they run in order on one thread."""

    def __init__(self, store, *, notify: Callable[..., None] | None = None,
                 landed: Callable[[], None] | None = None) -> None:
        self.store = store
        self._notify = notify
        self._landed = landed
        self._jobs: deque[_Job] = deque()
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._writer = None  # the thread's own Store
        self._closing = False
        self._running = False  # a job is being written right now
        self._failed = False  # the head of the queue has failed at least once
        self._loop: asyncio.AbstractEventLoop | None = None
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            pass

    # -- the UI side ----------------------------------------------------------------------

    def attach(self) -> None:
        """Called on the UI thread once its event loop runs: callbacks are posted to it."""
        self._loop = asyncio.get_running_loop()

    def submit(self, what: str, fn: Callable[[Any], Any], done: Callable[[Any], None] | None = None,
               *, key: tuple | None = None) -> None:
        """Queue ``fn(store)``; ``what`` (Chinese) names it in a failure notice; ``done(result)``
        runs on the UI thread once it is written. A queued job with the same ``key`` that has
        not started is replaced (the reading place: only the latest one matters)."""
        if self._loop is None:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                pass
        job = _Job(what, fn, done, key)
        with self._cv:
            if self._closing:
                raise RuntimeError("the progress writer is closed")
            if key is not None:
                start = 1 if (self._running or self._failed) and self._jobs else 0
                for i in range(len(self._jobs) - 1, start - 1, -1):
                    if self._jobs[i].key == key:
                        del self._jobs[i]
            self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="torchcourse-progress-writer", daemon=True)
                self._thread.start()
            self._cv.notify_all()

    def idle(self) -> bool:
        """Nothing waits to be written."""
        with self._cv:
            return not self._jobs

    def pending(self, key_prefix: str) -> list[tuple]:
        """Keys of the queued jobs whose key starts with ``key_prefix`` (oldest first)."""
        with self._cv:
            return [j.key for j in self._jobs if j.key and j.key[0] == key_prefix]

    def unsaved(self) -> list[str]:
        with self._cv:
            return [j.what for j in self._jobs]

    def close(self) -> list[str]:
        """One last try for what is queued (on exit); returns what is still unsaved."""
        with self._cv:
            self._closing = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()
        writer, self._writer = self._writer, None
        if writer is not None and writer is not self.store:
            try:
                writer.close()
            except Exception:  # noqa: BLE001
                pass
        return self.unsaved()

    # -- the writer thread --------------------------------------------------------------------

    def _post(self, fn: Callable[..., None], *args) -> None:
        """Run ``fn(*args)`` on the UI thread without waiting for it (never blocks this thread)."""
        loop = self._loop
        if loop is None or self._closing:
            return
        try:
            loop.call_soon_threadsafe(lambda: fn(*args))
        except RuntimeError:  # the loop is closed: the app has gone
            pass

    def _store(self):
        if self._writer is None:
            path = getattr(self.store, "path", None)
            if path is None:  # a store without a file (tests): write through it
                self._writer = self.store
            else:
                from torchcourse.progress import open_store

                self._writer, _ = open_store(path, course_id=self.store.course_id)
        return self._writer

    def _serve(self) -> None:
        while True:
            with self._cv:
                while not self._jobs and not self._closing:
                    self._cv.wait()
                if not self._jobs:
                    return
                job = self._jobs[0]
                self._running = True
            try:
                result = job.fn(self._store())
            except Exception as exc:  # noqa: BLE001 - StoreError or an OS error: say it, keep it, retry
                with self._cv:
                    self._running = False
                    self._failed = True
                    closing = self._closing
                    waiting = [j.what for j in self._jobs]
                if closing:
                    return
                self._post(self._say_failed, waiting, exc)
                with self._cv:
                    self._cv.wait(RETRY_S)  # a new write or close() wakes it early
                continue
            with self._cv:
                self._jobs.popleft()
                self._running = False
                recovered, self._failed = self._failed, False
                drained = not self._jobs
            if recovered:
                self._post(self._say_saved)
            if job.done is not None:
                self._post(job.done, result)
            if drained and self._landed is not None:
                self._post(self._landed)

    def _say_failed(self, waiting: list[str], exc: Exception) -> None:
        if self._notify is None:
            return
        head = waiting[0] if waiting else "进度"
        more = f"（连同之后的 {len(waiting) - 1} 项）" if len(waiting) > 1 else ""
        self._notify(f"{head}{more}没有保存：{exc}。这些进度先留在内存里，程序会自动再试。",
                     title="进度没有保存", severity="error", timeout=15)

    def _say_saved(self) -> None:
        if self._notify is not None:
            self._notify("之前没保存的进度现在已经保存了。", title="进度已保存")


class PendingView:
    """The app's store for reads, with the route and the reading place still queued in the
    writer seen as already written; everything else goes to the real store."""

    def __init__(self, store, writer: ProgressWriter) -> None:
        self._store = store
        self._writer = writer
        self.pending_route: str | None = None
        self.pending_place: dict | None = None

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def get_route(self) -> str | None:
        if self.pending_route is not None and self._writer.pending("route"):
            return self.pending_route
        return self._store.get_route()

    def reading_place(self) -> dict | None:
        if self.pending_place is not None and self._writer.pending("place"):
            return dict(self.pending_place)
        return self._store.reading_place()

    def last_position(self) -> tuple[str, int] | None:
        if self.pending_place is not None and self._writer.pending("place"):
            return self.pending_place["chapter"], self.pending_place["part"]
        return self._store.last_position()

    def placed_chapters(self) -> set[str]:
        placed = self._store.placed_chapters()
        if self.pending_place is not None and self._writer.pending("place"):
            placed.add(self.pending_place["chapter"])
        return placed

    def position_route(self) -> str | None:
        if self.pending_place is not None and self._writer.pending("place"):
            return self.pending_place.get("route", "")
        return self._store.position_route()

    def chapter_place(self, chapter_id: str) -> dict | None:
        pending = self.pending_place
        if pending is not None and pending["chapter"] == chapter_id and self._writer.pending("place"):
            return {k: pending[k] for k in ("part", "line", "offset", "digest")}
        return self._store.chapter_place(chapter_id)
