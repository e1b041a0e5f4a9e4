"""The progress writer (tui/writer.py) on a real SQLite store, driven directly from an asyncio
loop (no Textual): what lands in the store, in which order, which queued place wins, what the
learner is told when a write fails and when it is saved after all, and how the writer's thread
starts, waits and ends. The tests wait for states, never for time."""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import pytest

from torchcourse.progress import StoreError, open_store
from torchcourse.tui.writer import PendingView, ProgressWriter


@pytest.fixture
def store(tmp_path):
    s, _ = open_store(tmp_path / "p.sqlite3")
    yield s
    s.close()


LAST_RESORT_S = 120.0  # never what ends a broken writer's test: the state checks below end it first


def _in_untimed_wait(thread: threading.Thread) -> bool:
    """``thread`` is blocked in ``Condition.wait()`` with no timeout (read from its own frames)."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code is threading.Condition.wait.__code__:
            return frame.f_locals.get("timeout") is None
        frame = frame.f_back
    return False


def _in_join(thread: threading.Thread) -> bool:
    """``thread`` is inside ``Thread.join`` (close() got past its notify and waits for the writer)."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code is threading.Thread.join.__code__:
            return True
        frame = frame.f_back
    return False


def make(store, **kw) -> ProgressWriter:
    """A ProgressWriter for a test that expects no write to fail: without a ``notify`` of the
    test's own, its failure notices are kept in ``w.unexpected`` and :func:`stuck` reports the
    first one (a writer that fails every write retries forever: that is not waiting)."""
    unexpected: list[str] = []
    kw.setdefault("notify", lambda msg, **_: unexpected.append(msg))
    w = ProgressWriter(store, **kw)
    w.unexpected = unexpected
    return w


def stuck(w: ProgressWriter, closer: threading.Thread | None = None) -> str | None:
    """Why the writer can never make progress by itself from now on, or None.

    Read under the writer's own condition lock, so the writer's thread is either outside it or
    inside ``wait()`` having released it; a thread still among the condition's waiters has not
    been notified. The code only waits without a timeout when nothing is queued and close() has
    not begun, and every submit() and close() notifies in the same locked block: a thread that
    waits unnotified, without a timeout, with writes queued (or with close() already joining it)
    will wait forever. So will writes queued behind a thread that never started or has ended."""
    if getattr(w, "unexpected", None):
        return f"a write failed: {w.unexpected[0]}"
    with w._cv:
        queued = len(w._jobs)
        thread = w._thread
        if thread is None or not thread.is_alive():
            if queued and closer is None and not w._closing:
                return f"{queued} write(s) queued and the writer's thread {'was never started' if thread is None else 'has ended'}"
            return None  # close() of a writer whose thread has ended returns at once
        idle = bool(w._cv._waiters) and _in_untimed_wait(thread)
        if idle and queued:
            return f"the writer's thread waits without a timeout, unnotified, with {queued} write(s) queued"
        if idle and closer is not None and _in_join(closer):
            return "close() waits for the writer's thread, which waits without a timeout, unnotified"
    return None


def quiet(w: ProgressWriter) -> bool:
    """Nothing queued and the writer's thread waits unnotified with no timeout (or is gone): it
    has made every post to the event loop it will make until something new is submitted."""
    with w._cv:
        if w._jobs:
            return False
        thread = w._thread
        return thread is None or not thread.is_alive() or (bool(w._cv._waiters) and _in_untimed_wait(thread))


async def until(what: str, pred, w: ProgressWriter | None = None, never=None) -> None:
    """Wait for ``pred()``; fail as soon as the writer ``w`` is stuck (:func:`stuck`), or when
    ``pred()`` is still false one turn of the event loop after ``w`` was quiet (:func:`quiet`)
    or ``never()`` named a state the code cannot be in before ``pred()`` holds: that turn ran
    every callback the writer had posted by then."""
    loop = asyncio.get_running_loop()
    end = loop.time() + LAST_RESORT_S
    doomed = None
    while not pred():
        why = doomed or (stuck(w) if w is not None else None)
        assert not why, f"never happened: {what} ({why})"
        assert loop.time() < end, f"never happened: {what}"
        doomed = (never() if never is not None else None) or (
            w is not None and quiet(w) and "the writer has written everything and is idle; its callbacks have all run")
        await asyncio.sleep(0.01)


def until_sync(what: str, pred, w: ProgressWriter | None = None, never=None) -> None:
    """:func:`until` for a test with no event loop."""
    end = time.monotonic() + LAST_RESORT_S
    while not pred():
        why = (stuck(w) if w is not None else None) or (never() if never is not None else None)
        assert not why, f"never happened: {what} ({why})"
        assert time.monotonic() < end, f"never happened: {what}"
        time.sleep(0.01)


def close(w: ProgressWriter) -> list[str]:
    """``w.close()`` on a thread of its own, failing as soon as it can never return, and when
    the writer's thread ended with an exception (a traceback on the learner's terminal at exit:
    writer.py:144, the return of an empty queue at close deleted)."""
    out: dict = {}
    died: list[str] = []
    hook = threading.excepthook
    threading.excepthook = lambda a: died.append(f"{a.thread.name if a.thread else '?'}: {a.exc_type.__name__}: {a.exc_value}")
    try:
        closer = threading.Thread(target=lambda: out.setdefault("unsaved", w.close()), daemon=True)
        closer.start()
        end = time.monotonic() + LAST_RESORT_S
        while closer.is_alive():
            why = stuck(w, closer)
            assert not why, f"close() can never return: {why}"
            assert time.monotonic() < end, "close() never returned"
            closer.join(0.01)
    finally:
        threading.excepthook = hook
    assert not died, f"a thread ended with an exception: {died}"
    assert "unsaved" in out, "close() raised"
    return out["unsaved"]


def test_the_writers_thread_waits_for_work_instead_of_spinning(store):
    # First in the file: on its mutant every later test would block on the writer's lock.
    # kills writer.py:142 (`self._cv.wait()` deleted: with nothing queued the thread spins in
    # its inner loop holding the lock, and the next submit() blocks forever). Watched without
    # taking the lock: the thread seen at that loop's backward jump before it ever called wait()
    # is spinning (in the code the loop goes back only after a wait returned). The writer's
    # condition is counted (the writer's own class, its wait() counted) before the thread starts.
    import dis
    import inspect

    waits = {"n": 0}

    class Counted(threading.Condition):
        def wait(self, timeout=None):
            waits["n"] += 1
            return super().wait(timeout)

    w = make(store)
    w._cv = Counted()
    serve = ProgressWriter._serve.__code__
    lines, first = inspect.getsourcelines(ProgressWriter._serve)
    top = first + next(i for i, text in enumerate(lines) if "while not self._jobs" in text)
    at = {i.offset: i for i in dis.get_instructions(serve)}
    back = {o for o, i in at.items() if "JUMP_BACKWARD" in i.opname and i.positions.lineno == top}  # the loop's test, at its end
    assert back, "the inner loop's backward jump not found"
    w.submit("路线", lambda s: s.set_route("A"))
    end = time.monotonic() + LAST_RESORT_S
    while not (waits["n"] and _in_untimed_wait(w._thread)):  # the first write done, the thread waits for the next
        frame = sys._current_frames().get(w._thread.ident)
        assert not (frame is not None and frame.f_code is serve and frame.f_lasti in back and waits["n"] == 0), \
            "the writer's thread spins in its wait loop without waiting (holding the lock: the next submit blocks)"
        assert not w._failed, "the first write failed"  # a writer that cannot write retries forever (writer.py:38, :136)
        assert time.monotonic() < end and w._thread.is_alive(), "the writer never went idle"
        time.sleep(0.001)
    w.submit("阅读位置", lambda s: s.set_position("01", 2))
    until_sync("the second write landed", w.idle, w)
    assert close(w) == []
    assert store.get_route() == "A" and store.last_position() == ("01", 2)


def test_queued_writes_land_in_order_and_the_latest_place_wins(store, tmp_path):
    # kills submit's key replacement (writer.py:70-74: the start index, the loop bounds, the key
    # test, the deletion), _serve's order and pop (:145-176), done and landed (:173-176)
    ran: list[str] = []
    done: list[object] = []
    landed: list[str | None] = []
    started, gate = threading.Event(), threading.Event()

    def head(s):
        started.set()
        gate.wait(60)
        ran.append("head")
        s.set_position("01", 0)
        return "head-result"

    async def main():
        w = make(store, landed=lambda: landed.append(store.get_route()))
        w.submit("阅读位置（01 章）", head, done=done.append, key=("place", "01"))
        await until("the head write running", started.is_set, w)
        # the same key as the running head: queued behind it, the head is not replaced
        w.submit("阅读位置（01 章）", lambda s: (ran.append("p01"), s.set_position("01", 3)), key=("place", "01"))
        w.submit("阅读位置（02 章）", lambda s: (ran.append("p02a"), s.set_position("02", 1)), key=("place", "02"))
        w.submit("路线", lambda s: (ran.append("route"), s.set_route("B")), done=done.append, key=("route",))
        w.submit("阅读位置（02 章）", lambda s: (ran.append("p02b"), s.set_position("02", 4)), key=("place", "02"))  # replaces p02a
        assert w.pending("place") == [("place", "01"), ("place", "01"), ("place", "02")]
        assert w.pending("route") == [("route",)] and w.pending("answer") == []
        assert w.unsaved() == ["阅读位置（01 章）", "阅读位置（01 章）", "路线", "阅读位置（02 章）"]
        assert not w.idle() and not landed
        gate.set()
        await until("every write landed and reported", lambda: w.idle() and len(done) == 2 and landed, w,
                    never=lambda: len(ran) != len(set(ran)) and f"a write ran twice: {ran}")
        assert close(w) == []
        return w

    asyncio.run(main())
    assert ran == ["head", "p01", "route", "p02b"]
    assert done == ["head-result", (None, None)]
    assert landed == ["B"]  # once, when the queue ran dry, after the last write
    assert store.chapter_place("01")["part"] == 3 and store.chapter_place("02")["part"] == 4
    assert store.last_position() == ("02", 4) and store.get_route() == "B"


def test_a_failed_write_is_named_kept_retried_and_reported_saved(store):
    # kills _serve's failure path (writer.py:150-162), _say_failed (:178-184: the head's name, the
    # count of the writes behind it) and _say_saved (:186-188)
    notices: list[tuple[str, str | None]] = []
    started, gate = threading.Event(), threading.Event()
    tries = {"n": 0}

    def flaky(s):
        tries["n"] += 1
        if tries["n"] == 1:
            started.set()
            gate.wait(60)
            raise StoreError("磁盘已满")
        s.record_answer("02", "q1", "B", True)

    async def main():
        w = ProgressWriter(store, notify=lambda msg, title=None, **kw: notices.append((msg, title)))
        w.submit("第 02 章的答案", flaky)
        await until("the first try running", started.is_set, w, never=lambda: notices and f"a failure told before the first try: {notices[0][0]}")
        w.submit("路线", lambda s: s.set_route("C"))
        w.submit("第 1 个停顿点", lambda s: s.reach_break("02", 1))
        gate.set()
        await until("the failure told", lambda: notices, w, never=lambda: tries["n"] > 1 and "retried before the failure was told")
        assert store.answers("02") == [] and store.get_route() is None  # nothing behind it jumped the queue
        assert w.unsaved() == ["第 02 章的答案", "路线", "第 1 个停顿点"]
        w.submit("阅读位置", lambda s: s.set_position("02", 1), key=("place",))  # wakes the retry early
        await until("all written", lambda: w.idle() and len(notices) == 2, w,
                    never=lambda: tries["n"] > 2 and f"the write was tried {tries['n']} times")
        assert close(w) == []

    asyncio.run(main())
    assert notices[0] == ("第 02 章的答案（连同之后的 2 项）没有保存：磁盘已满。这些进度先留在内存里，程序会自动再试。", "进度没有保存")
    assert notices[1] == ("之前没保存的进度现在已经保存了。", "进度已保存")
    assert tries["n"] == 2
    assert [a.question_id for a in store.answers("02")] == ["q1"]
    assert store.get_route() == "C" and store.chapter_progress("02").furthest_break == 1


def test_a_lone_failed_write_names_only_itself_and_close_reports_it_unsaved(store, tmp_path):
    # kills _say_failed's "more" condition (writer.py:182: > 1 -> >= 1, 1 -> 2) and close()'s
    # return of what is still unsaved (:99-112); a closed writer takes no new write (:67-68)
    notices: list[str] = []

    tries = {"n": 0}

    def broken(s):
        tries["n"] += 1
        raise StoreError("数据库被锁住")

    async def main():
        w = ProgressWriter(store, notify=lambda msg, **kw: notices.append(msg))
        w.submit("第 03 章的答案", broken)
        await until("the failure told", lambda: notices, w, never=lambda: tries["n"] > 1 and "retried before the failure was told")
        unsaved = await asyncio.to_thread(close, w)
        with pytest.raises(RuntimeError):
            w.submit("路线", lambda s: s.set_route("A"))
        return unsaved

    assert asyncio.run(main()) == ["第 03 章的答案"]
    assert notices[0] == "第 03 章的答案没有保存：数据库被锁住。这些进度先留在内存里，程序会自动再试。"
    assert store.get_route() is None


def test_the_writer_writes_through_its_own_connection_to_the_same_file(store, tmp_path):
    # kills _store (writer.py:126-134): a file-backed store gets a Store of its own on the same
    # file and course (the app's reads never wait behind the writer's transaction lock)
    other, _ = open_store(tmp_path / "p.sqlite3", course_id="c2")
    seen: list[tuple] = []
    try:
        async def main():
            w = make(other)
            w.submit("路线", lambda s: (s is other, s.path, s.course_id, s.set_route("D")), done=seen.append)
            await until("written", lambda: w.idle() and seen, w)
            assert close(w) == []

        asyncio.run(main())
        assert seen == [(False, other.path, "c2", None)]
        assert other.get_route() == "D" and store.get_route() is None  # course c2's row, read back by c2
    finally:
        other.close()


def test_reads_see_the_queued_route_and_place_until_they_land(store):
    # kills PendingView (writer.py:197-229): while the route and the place wait behind a slow
    # write, the app's reads answer with them; once written, the store's own rows answer
    started, gate = threading.Event(), threading.Event()
    store.set_route("A")
    store.set_position("01", 2, line=7, offset=1, digest="d1", route="A")

    def slow(s):
        started.set()
        gate.wait(60)

    async def main():
        w = make(store)
        view = PendingView(store, w)
        assert view.get_route() == "A" and view.last_position() == ("01", 2)  # nothing pending: the store
        view.pending_route = "B"  # set, but no route job queued: the store still answers
        assert view.get_route() == "A"
        w.submit("慢", slow)
        await until("the slow write running", started.is_set, w)
        w.submit("路线", lambda s: s.set_route("B"), key=("route",))
        view.pending_place = {"chapter": "03", "part": 5, "line": 40, "offset": 2, "digest": "d3", "route": "B"}
        w.submit("阅读位置（03 章）", lambda s: s.set_position("03", 5, line=40, offset=2, digest="d3", route="B"), key=("place", "03"))
        assert view.get_route() == "B"
        assert view.reading_place() == view.pending_place and view.reading_place() is not view.pending_place
        assert view.last_position() == ("03", 5)
        assert view.placed_chapters() == {"01", "03"}
        assert view.position_route() == "B"
        assert view.chapter_place("03") == {"part": 5, "line": 40, "offset": 2, "digest": "d3"}
        assert view.chapter_place("01") == {"part": 2, "line": 7, "offset": 1, "digest": "d1"}  # another chapter: the store's
        assert view.answers() == []  # everything else: the real store
        assert store.get_route() == "A" and store.last_position() == ("01", 2)
        gate.set()
        await until("written", w.idle, w)
        view.pending_place["part"], view.pending_place["route"] = 9, "X"  # no longer pending: the store's rows answer
        assert view.reading_place()["part"] == 5 and view.chapter_place("03")["part"] == 5
        assert view.position_route() == "B" and view.last_position() == ("03", 5)
        assert close(w) == []

    asyncio.run(main())


def test_a_writer_made_outside_the_loop_or_first_fed_from_a_thread_still_reports_back(store):
    # kills writer.py:50 (the loop not taken in __init__: a first submit from a worker thread
    # could not find it) and :65 (negated: a writer made before the loop ran never took it)
    done: list[str] = []
    early = make(store)  # no running loop yet: it takes the loop at its first submit

    async def main():
        late = make(store)  # made on the loop
        await asyncio.to_thread(late.submit, "路线", lambda s: s.set_route("E"), done=lambda r: done.append("late"))
        early.submit("位置", lambda s: s.set_position("02", 1), done=lambda r: done.append("early"))
        await until("late reported", lambda: "late" in done, late)  # a mutant never posts: fails once the writer is idle
        await until("early reported", lambda: "early" in done, early)
        assert close(late) == [] and close(early) == []

    asyncio.run(main())
    assert store.get_route() == "E" and store.last_position() == ("02", 1)


def test_a_writer_without_a_loop_survives_a_failed_write_and_names_two(store):
    # kills _post's guard (writer.py:120 or -> and, :121 return deleted: with no loop to post
    # the notice to, the writer thread died and the queue was never written) and the count in
    # the notice for exactly two waiting writes (:177 > 1 -> > 2)
    notices: list[str] = []
    tries = {"n": 0}
    started, gate = threading.Event(), threading.Event()

    def flaky(s):
        tries["n"] += 1
        if tries["n"] == 1:
            started.set()
            gate.wait(60)
            raise StoreError("磁盘已满")
        s.set_route("F")

    w = ProgressWriter(store, notify=lambda msg, **kw: notices.append(msg))  # no event loop at all
    w.submit("路线", flaky)
    until_sync("the first try running", started.is_set, w, never=lambda: w._failed and "a write failed before the first try ran")
    w.submit("位置", lambda s: s.set_position("02", 1))
    gate.set()
    until_sync("the failed write retried (RETRY_S later) and both landed", w.idle, w,
               never=lambda: tries["n"] > 2 and f"the write was tried {tries['n']} times")
    assert close(w) == []
    assert store.get_route() == "F" and store.last_position() == ("02", 1)
    assert notices == []  # nowhere to show them without a loop

    async def main():
        shown: list[str] = []
        started.clear()
        gate.clear()
        tries["n"] = 0
        w2 = ProgressWriter(store, notify=lambda msg, **kw: shown.append(msg))
        w2.submit("路线", flaky)
        await until("the first try running", started.is_set, w2, never=lambda: shown and f"a failure told before the first try: {shown[0]}")
        w2.submit("位置", lambda s: s.set_position("03", 1))
        gate.set()
        await until("the failure told", lambda: shown, w2, never=lambda: tries["n"] > 1 and "retried before the failure was told")
        assert close(w2) == []
        return shown

    assert asyncio.run(main())[0] == "路线（连同之后的 1 项）没有保存：磁盘已满。这些进度先留在内存里，程序会自动再试。"


# -- the progress writer (tui/writer.py) ------------------------------------------


def test_a_queued_place_not_yet_taken_by_the_writer_is_replaced_by_the_next_one(store):
    # kills writer.py:75 (`else 0` -> 1): while nothing is being written and nothing has failed,
    # a queued write with the same key is replaced even at the head of the queue (only the latest
    # reading place matters). The state "queued, not yet taken by the thread" is held, not timed:
    # the test holds the writer's condition lock (re-entrant, so submit() from this thread still
    # runs) and the thread cannot take the head until it is released.
    ran: list[str] = []

    async def main():
        w = make(store)
        w.submit("路线", lambda s: s.set_route("A"))  # one write done first: its end clears "running" (writer.py:163)
        await until("the first write landed", lambda: quiet(w) and store.get_route() == "A", w)
        with w._cv:
            w.submit("阅读位置（01 章）", lambda s: (ran.append("old"), s.set_position("01", 1)), key=("place", "01"))
            w.submit("阅读位置（01 章）", lambda s: (ran.append("new"), s.set_position("01", 5)), key=("place", "01"))
            assert w.pending("place") == [("place", "01")]
            assert w.unsaved() == ["阅读位置（01 章）"]
        assert close(w) == []

    asyncio.run(main())
    assert ran == ["new"]
    assert store.last_position()[:2] == ("01", 5)


def test_closing_the_writer_closes_its_own_connection_and_keeps_the_apps(store, tmp_path):
    # kills writer.py:108 (`writer is not self.store` -> `is`): close() closes the connection the
    # writer opened for itself (the store its jobs were given), and never the app's own store,
    # which the app still reads from after the writer is gone
    given: list = []

    async def main():
        w = make(store)
        w.submit("路线", lambda s: (given.append(s), s.set_route("D")))
        assert close(w) == []

    asyncio.run(main())
    assert len(given) == 1 and given[0] is not store
    with pytest.raises(StoreError, match="进度库已关闭"):
        given[0].get_route()
    assert store.get_route() == "D"



# -- waking and replacing ----------------------------------------------------------


def test_a_write_submitted_to_an_idle_writer_wakes_it(store):
    # kills writer.py:83 (submit's notify_all deleted): once the first write has landed the
    # thread waits for the next one; a write submitted then must wake it. On the mutant the
    # thread waits unnotified with the write queued, which :func:`stuck` reports at once.
    async def main():
        w = make(store)
        w.submit("路线", lambda s: s.set_route("A"))
        await until("the writer idle after the first write", lambda: quiet(w) and store.get_route() == "A", w)
        w.submit("阅读位置", lambda s: s.set_position("01", 2))
        await until("the second write landed", w.idle, w)
        assert close(w) == []

    asyncio.run(main())
    assert store.get_route() == "A" and store.last_position() == ("01", 2)


def test_a_queued_place_right_behind_the_running_write_is_replaced(store):
    # kills writer.py:75 (`1 if running ... else 0` -> 2): behind a running write, the queued
    # place at index 1 (the first not yet taken) is still replaced by a newer one of its key
    ran: list[str] = []
    started, gate = threading.Event(), threading.Event()

    def slow(s):
        started.set()
        gate.wait(60)

    async def main():
        w = make(store)
        try:
            w.submit("慢", slow)
            await until("the slow write running", started.is_set, w)
            w.submit("阅读位置（01 章）", lambda s: (ran.append("old"), s.set_position("01", 1)), key=("place", "01"))
            w.submit("阅读位置（01 章）", lambda s: (ran.append("new"), s.set_position("01", 4)), key=("place", "01"))
            assert w.pending("place") == [("place", "01")]
        finally:
            gate.set()
        await until("written", w.idle, w)
        assert close(w) == []

    asyncio.run(main())
    assert ran == ["new"] and store.last_position() == ("01", 4)


def test_the_writers_thread_never_keeps_the_program_from_exiting(store):
    # kills writer.py:81 (daemon=True -> False): a program that ends without close() (a crash
    # path, a test) must not hang at exit joining an idle writer thread
    async def main():
        w = make(store)
        w.submit("路线", lambda s: s.set_route("A"))
        await until("written", w.idle, w)
        thread = w._thread
        assert close(w) == []  # first: a failing mutant must not leave a thread that blocks the exit
        assert thread.daemon

    asyncio.run(main())


def test_writes_still_queued_when_close_begins_are_all_written(store):
    # kills "the writer drops its queued writes when the app closes" (e.g. _serve
    # returning once _closing is set, writer.py:143): the learner pressed q while a slow write
    # ran and three more waited; close() must write them all and report nothing unsaved. The
    # moment is a state: close() is joining the writer's thread (past its notify) while the slow
    # write still holds — only then is the slow write let go.
    started, gate = threading.Event(), threading.Event()

    def slow(s):
        started.set()
        gate.wait(60)
        s.reach_break("01", 1)

    w = make(store)
    try:
        w.submit("第 1 个停顿点", slow)
        until_sync("the slow write running", started.is_set, w)
        w.submit("第 2 个停顿点", lambda s: s.reach_break("01", 2))
        w.submit("答案", lambda s: s.record_answer("01", "q1", "B", True))
        w.submit("阅读位置", lambda s: s.set_position("01", 2), key=("place",))
        out: dict = {}
        closer = threading.Thread(target=lambda: out.setdefault("unsaved", w.close()), daemon=True)
        closer.start()
        until_sync("close() waiting for the writer's thread", lambda: _in_join(closer) or not closer.is_alive())
        assert w.unsaved() == ["第 1 个停顿点", "第 2 个停顿点", "答案", "阅读位置"]
    finally:
        gate.set()
    until_sync("close() returned", lambda: not closer.is_alive(), never=lambda: stuck(w, closer))
    assert out["unsaved"] == []
    assert store.chapter_progress("01").furthest_break == 2
    assert [(a.question_id, a.answer) for a in store.answers("01")] == [("q1", "B")]
    assert store.last_position() == ("01", 2)


def test_a_store_without_a_file_is_written_through_and_left_open(store, tmp_path):
    # kills writer.py:131 (`self._writer = self.store` deleted: a store without a file got no
    # writer store at all) and :108 (`and` -> `or`: close() closed the app's own store when the
    # writer wrote through it)
    from torchcourse.progress.store import Store, _connect

    fileless = Store(_connect(tmp_path / "q.sqlite3"), None)
    try:
        async def main():
            w = make(fileless)
            w.submit("路线", lambda s: s.set_route("G"))
            await until("written", w.idle, w)
            assert close(w) == []

        asyncio.run(main())
        assert fileless.get_route() == "G"  # still open, and written
    finally:
        fileless.close()


def test_attach_on_the_loop_lets_a_writer_made_elsewhere_report_back(store):
    # kills writer.py:58 (attach's loop assignment deleted): the app makes its writer before its
    # event loop runs and attaches it once it does; a first write submitted from a worker thread
    # must then still report back on the loop
    done: list[str] = []
    w = make(store)

    async def main():
        w.attach()
        await asyncio.to_thread(w.submit, "路线", lambda s: s.set_route("H"), done=lambda r: done.append("H"))
        await until("reported on the loop", lambda: done, w)
        assert close(w) == []

    asyncio.run(main())
    assert done == ["H"] and store.get_route() == "H"


def test_a_failed_write_is_tried_again_within_a_few_seconds(store):
    # kills writer.py:23 (RETRY_S 3.0 -> 7.0): after a failure the thread waits "a few seconds"
    # (the module's promise), read from the thread's own wait, not timed
    started = threading.Event()

    def fails(s):
        started.set()
        raise StoreError("磁盘已满")

    w = ProgressWriter(store)
    w.submit("路线", fails)
    until_sync("the first try running", started.is_set, w)

    def waiting_timeout():
        frame = sys._current_frames().get(w._thread.ident)
        while frame is not None and frame.f_code is not threading.Condition.wait.__code__:
            frame = frame.f_back
        return None if frame is None else frame.f_locals.get("timeout")

    until_sync("the thread waiting to try again", lambda: waiting_timeout() is not None, w)
    assert 0 < waiting_timeout() <= 5.0
    assert close(w) == ["路线"]


def test_a_failed_write_with_no_one_to_tell_raises_nothing_on_the_loop(store):
    # kills writer.py:175 (`return` deleted when there is no notify: the failure notice called
    # None on the event loop, an error in the app's loop instead of a quiet retry)
    errors: list[str] = []
    tries = {"n": 0}

    def flaky(s):
        tries["n"] += 1
        if tries["n"] == 1:
            raise StoreError("磁盘已满")
        s.set_route("K")

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: errors.append(ctx.get("message", "?")))
        w = ProgressWriter(store)  # no notify
        w.submit("路线", flaky)
        await until("retried and written", lambda: w.idle() and tries["n"] == 2, w,
                    never=lambda: errors and f"an error on the loop: {errors[0]}")
        await asyncio.sleep(0)  # one more turn: the notices posted before the write landed have run
        assert close(w) == []

    asyncio.run(main())
    assert errors == [] and store.get_route() == "K"
