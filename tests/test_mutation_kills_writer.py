"""The progress writer (tui/writer.py) on a real SQLite store, driven directly from an asyncio
loop (no Textual): what lands in the store, in which order, and what the learner is told when a
write fails. Cases the mutation run of the progress package (docs/mutation.md) showed no test
pinned; each test names the mutants it kills. The tests wait for states, never for time."""

from __future__ import annotations

import asyncio
import threading

import pytest

from torchcourse.progress import StoreError, open_store
from torchcourse.tui.writer import PendingView, ProgressWriter


@pytest.fixture
def store(tmp_path):
    s, _ = open_store(tmp_path / "p.sqlite3")
    yield s
    s.close()


async def until(what: str, pred, timeout: float = 20.0) -> None:  # 20 s: a broken writer fails the test before the mutation run's 30 s timeout
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pred():
        assert loop.time() < end, f"never happened: {what}"
        await asyncio.sleep(0.01)


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
        w = ProgressWriter(store, landed=lambda: landed.append(store.get_route()))
        w.submit("阅读位置（01 章）", head, done=done.append, key=("place", "01"))
        await until("the head write running", started.is_set)
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
        await until("every write landed and reported", lambda: w.idle() and len(done) == 2 and landed)
        assert w.close() == []
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
        await until("the first try running", started.is_set)
        w.submit("路线", lambda s: s.set_route("C"))
        w.submit("第 1 个停顿点", lambda s: s.reach_break("02", 1))
        gate.set()
        await until("the failure told", lambda: notices)
        assert store.answers("02") == [] and store.get_route() is None  # nothing behind it jumped the queue
        assert w.unsaved() == ["第 02 章的答案", "路线", "第 1 个停顿点"]
        w.submit("阅读位置", lambda s: s.set_position("02", 1), key=("place",))  # wakes the retry early
        await until("all written", lambda: w.idle() and len(notices) == 2)
        assert w.close() == []

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

    def broken(s):
        raise StoreError("数据库被锁住")

    async def main():
        w = ProgressWriter(store, notify=lambda msg, **kw: notices.append(msg))
        w.submit("第 03 章的答案", broken)
        await until("the failure told", lambda: notices)
        unsaved = await asyncio.to_thread(w.close)
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
            w = ProgressWriter(other)
            w.submit("路线", lambda s: (s is other, s.path, s.course_id, s.set_route("D")), done=seen.append)
            await until("written", lambda: w.idle() and seen)
            assert w.close() == []

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
        w = ProgressWriter(store)
        view = PendingView(store, w)
        assert view.get_route() == "A" and view.last_position() == ("01", 2)  # nothing pending: the store
        view.pending_route = "B"  # set, but no route job queued: the store still answers
        assert view.get_route() == "A"
        w.submit("慢", slow)
        await until("the slow write running", started.is_set)
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
        await until("written", w.idle)
        view.pending_place["part"], view.pending_place["route"] = 9, "X"  # no longer pending: the store's rows answer
        assert view.reading_place()["part"] == 5 and view.chapter_place("03")["part"] == 5
        assert view.position_route() == "B" and view.last_position() == ("03", 5)
        assert w.close() == []

    asyncio.run(main())


def test_a_writer_made_outside_the_loop_or_first_fed_from_a_thread_still_reports_back(store):
    # kills writer.py:50 (the loop not taken in __init__: a first submit from a worker thread
    # could not find it) and :65 (negated: a writer made before the loop ran never took it)
    done: list[str] = []
    early = ProgressWriter(store)  # no running loop yet: it takes the loop at its first submit

    async def main():
        late = ProgressWriter(store)  # made on the loop
        await asyncio.to_thread(late.submit, "路线", lambda s: s.set_route("E"), done=lambda r: done.append("late"))
        early.submit("位置", lambda s: s.set_position("02", 1), done=lambda r: done.append("early"))
        await until("both reported", lambda: sorted(done) == ["early", "late"], timeout=15)  # a mutant never posts: fail, not time out
        assert late.close() == [] and early.close() == []

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
    assert started.wait(60)
    w.submit("位置", lambda s: s.set_position("02", 1))
    gate.set()
    import time

    end = time.monotonic() + 20
    while not w.idle():  # the failed write is retried (RETRY_S later) and both land
        assert time.monotonic() < end, "the writer stopped after a failed write with no loop"
        time.sleep(0.02)
    assert w.close() == []
    assert store.get_route() == "F" and store.last_position() == ("02", 1)
    assert notices == []  # nowhere to show them without a loop

    async def main():
        shown: list[str] = []
        started.clear()
        gate.clear()
        tries["n"] = 0
        w2 = ProgressWriter(store, notify=lambda msg, **kw: shown.append(msg))
        w2.submit("路线", flaky)
        await until("the first try running", started.is_set)
        w2.submit("位置", lambda s: s.set_position("03", 1))
        gate.set()
        await until("the failure told", lambda: shown)
        assert w2.close() == []
        return shown

    assert asyncio.run(main())[0] == "路线（连同之后的 1 项）没有保存：磁盘已满。这些进度先留在内存里，程序会自动再试。"


# -- the progress writer (tui/writer.py) (issue 38, h38c) ------------------------------------------


def test_a_queued_place_not_yet_taken_by_the_writer_is_replaced_by_the_next_one(store):
    # kills writer.py:75 (`else 0` -> 1): while nothing is being written and nothing has failed,
    # a queued write with the same key is replaced even at the head of the queue (only the latest
    # reading place matters). The state "queued, not yet taken by the thread" is held, not timed:
    # the test holds the writer's condition lock (re-entrant, so submit() from this thread still
    # runs) and the thread cannot take the head until it is released.
    ran: list[str] = []

    async def main():
        w = ProgressWriter(store)
        with w._cv:
            w.submit("阅读位置（01 章）", lambda s: (ran.append("old"), s.set_position("01", 1)), key=("place", "01"))
            w.submit("阅读位置（01 章）", lambda s: (ran.append("new"), s.set_position("01", 5)), key=("place", "01"))
            assert w.pending("place") == [("place", "01")]
            assert w.unsaved() == ["阅读位置（01 章）"]
        assert w.close() == []

    asyncio.run(main())
    assert ran == ["new"]
    assert store.last_position()[:2] == ("01", 5)


def test_closing_the_writer_closes_its_own_connection_and_keeps_the_apps(store, tmp_path):
    # kills writer.py:108 (`writer is not self.store` -> `is`): close() closes the connection the
    # writer opened for itself (the store its jobs were given), and never the app's own store,
    # which the app still reads from after the writer is gone
    given: list = []

    async def main():
        w = ProgressWriter(store)
        w.submit("路线", lambda s: (given.append(s), s.set_route("D")))
        assert w.close() == []

    asyncio.run(main())
    assert len(given) == 1 and given[0] is not store
    with pytest.raises(StoreError, match="进度库已关闭"):
        given[0].get_route()
    assert store.get_route() == "D"

