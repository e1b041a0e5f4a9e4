"""The reader's and home's own progress writes never run on the UI thread: while another process
really holds an exclusive lock on the database, reaching a break, running a snippet and switching
the route all show at once and the app keeps answering keys; the writes wait in memory, in order,
and land once the lock is released. A write that fails names what was not saved and why, and is
retried."""

from __future__ import annotations

import torchcourse.progress.store as store_module
from test_quiz_locked_store import Lock
from tui_support import build_app, screen_text, sync, wait_for, widget_text
from torchcourse.tui.screens.home import HomeScreen
from torchcourse.tui.reader import ReaderScreen
from torchcourse.tui.widgets.snippet import SnippetView

SIZE = (120, 30)


async def open_01(pilot, app) -> ReaderScreen:
    app.open_chapter("01")
    await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen) and app.screen.loaded, what="the reader")
    await pilot.pause()
    return app.screen


@sync
async def test_reader_and_home_keep_answering_while_the_database_is_locked(tmp_path):
    db = tmp_path / "p.sqlite3"
    app, store = build_app(db, cache=tmp_path / "cache")
    lock = None
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = await open_01(pilot, app)
            view = next(v for v in screen.query(SnippetView) if v.snippet.id == "hello")
            lock = Lock(db)
            await pilot.press("x")  # the run's record waits behind the lock
            await wait_for(pilot, lambda: view.state == "done", what="the run")
            await pilot.press("n")  # break 1: its write waits behind the lock
            await wait_for(pilot, lambda: "已记下" in widget_text(screen.banner(1)), what="break 1 shown")
            await pilot.press("n")  # the next key answers at once too
            await wait_for(pilot, lambda: "已记下" in widget_text(screen.banner(2)), what="break 2 shown")
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")
            await pilot.press("r", "up", "enter")  # route A, while the lock is held
            await wait_for(pilot, lambda: "▶ A 只想知道为什么报错" in screen_text(app), what="route A shown")
            assert lock.held()
            assert store.chapter_progress("01").furthest_break == 0  # nothing written yet
            assert store.get_route() is None
            lock.release()
            await wait_for(pilot, lambda: app.writer.idle(), what="the queued writes", timeout=120)
            assert store.chapter_progress("01").furthest_break >= 2
            assert [r.snippet_id for r in store.runs("01")] == ["hello"]
            assert store.get_route() == "A"
            assert store.last_position()[0] == "01"
            await wait_for(pilot, lambda: "▶ A 只想知道为什么报错" in screen_text(app), what="home after the writes")
    finally:
        if lock is not None:
            lock.release()
        store.close()


@sync
async def test_a_failed_write_is_named_kept_and_retried(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2)  # fail fast instead of after 30 s
    db = tmp_path / "p.sqlite3"
    app, store = build_app(db)
    lock = None
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = await open_01(pilot, app)
            lock = Lock(db)
            await pilot.press("n")
            await wait_for(pilot, lambda: any("断点 1" in n.message and "没有保存" in n.message for n in app._notifications),
                           what="the failure notice", timeout=120)
            notice = next(n.message for n in app._notifications if "没有保存" in n.message)
            assert "locked" in notice  # why
            assert "已记下" in widget_text(screen.banner(1))  # the screen shows what the learner did
            assert app.writer.unsaved()  # kept in memory
            lock.release()
            await wait_for(pilot, lambda: app.writer.idle(), what="the retry", timeout=120)
            assert store.chapter_progress("01").furthest_break >= 1
            await wait_for(pilot, lambda: any("已经保存" in n.message for n in app._notifications), what="the saved notice")
            assert app.is_running
    finally:
        if lock is not None:
            lock.release()
        store.close()


def test_writes_queued_when_the_app_closes_are_written_by_close(tmp_path):
    """Writes still queued behind a slow one when close() starts (the learner pressed q) are all
    written before close() returns, and close() reports nothing unsaved: the reading place and
    the answers just given survive q."""
    import threading
    import time

    from torchcourse.progress import open_store
    from torchcourse.tui.writer import ProgressWriter

    db = tmp_path / "p.sqlite3"
    store, _ = open_store(db)
    writer = ProgressWriter(store)
    started, release = threading.Event(), threading.Event()

    def slow(st):
        started.set()
        release.wait(60)
        st.reach_break("01", 1)

    try:
        writer.submit("第 1 个停顿点", slow)
        assert started.wait(60)
        writer.submit("第 2 个停顿点", lambda st: st.reach_break("01", 2))
        writer.submit("答案", lambda st: st.record_answer("01", "q1", "B", True))
        writer.submit("阅读位置", lambda st: st.set_position("01", 2), key=("place",))
        out: dict = {}
        closer = threading.Thread(target=lambda: out.setdefault("unsaved", writer.close()))
        closer.start()
        deadline = time.monotonic() + 60
        while not writer._closing:  # close() has begun, the three writes still queued
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert len(writer.unsaved()) == 4
        release.set()
        closer.join(60)
        assert not closer.is_alive()
        assert out["unsaved"] == []
        store.close()
        store, _ = open_store(db)  # what the next start reads
        assert store.chapter_progress("01").furthest_break >= 2
        assert [(a.question_id, a.answer) for a in store.answers("01")] == [("q1", "B")]
        assert store.last_position()[0] == "01" and store.last_position()[1] >= 2  # the last break: past the end
    finally:
        release.set()
        store.close()
