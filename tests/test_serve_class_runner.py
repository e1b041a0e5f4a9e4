"""A class's one shared runner, seen from ``serve --users``: the queue line, cancel, and hostile
snippets (each stopped with a clear verdict while the server and the other learner keep working).

Real server, real websockets, real app processes, the real class runner service in its real
sandbox (bubblewrap; a machine without it cannot start a class, and these tests say so). The test
also speaks to the service directly with the client the apps use (its socket is read from an app's
environment), as a learner's app would, to hold the run slots busy or send a hostile snippet.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from serve_support import alive, descendants, serve, wait_for  # noqa: F401 (serve is a fixture)
from test_serve_class import TOKENS, Learner, environ_of, users_file
from torchcourse.course.loader import course_id_of
from torchcourse.course.model import Snippet
from torchcourse.progress import open_store

_sandbox_missing = None
try:
    from torchcourse.runner.sandbox import sandbox_problem

    _sandbox_missing = sandbox_problem()
except ImportError as exc:  # pragma: no cover
    _sandbox_missing = str(exc)
pytestmark = pytest.mark.skipif(bool(_sandbox_missing), reason=f"no sandbox here: {_sandbox_missing}")


def make_course(tmp_path: Path, bob_db: Path) -> Path:
    """Two snippets: one that tries to read bob's database (what a learner could edit any snippet
    into), one that is fine."""
    root = tmp_path / "course"
    root.mkdir()
    (root / "course.toml").write_text(
        'title = "课堂课"\nchars_per_minute = 170\n'
        '[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "邻座"\npromise = "看不到别人"\n'
        '[[routes]]\nid = "A"\nname = "唯一路线"\naudience = "测试"\nchapters = ["01"]\n', encoding="utf-8")
    (root / "01.md").write_text(
        "# 01 · 邻座\n\n🎯 看不到别人。\n\n"
        f"```python {{#peek}}\nprint(open({str(bob_db)!r}, 'rb').read(16))\n```\n\n```output\nb'SQLite format 3\\x00'\n```\n\n"
        "一段说明。\n\n"
        "```python {#fine}\nprint(6 * 7)\n```\n\n```output\n42\n```\n\n<!-- break: 完 -->\n", encoding="utf-8")
    return root


def client_for(served, name: str):
    from torchcourse.runner.classroom import ENV_SOCKET, ClassroomClient

    socket = environ_of(served.session_pids()[-1])[ENV_SOCKET]
    return ClassroomClient(socket, name)


def snippet(code: str, sid: str = "hostile") -> Snippet:
    return Snippet(id=sid, chapter_id="01", code=code, expected="", line=1)


def hold_slots(client, n: int) -> tuple[list[threading.Event], list[threading.Thread], list]:
    """``n`` runs that sleep until cancelled: the service's run slots are busy (each run of
    another holder: one learner holds at most all slots but one)."""
    from torchcourse.runner.classroom import ClassroomClient

    cancels, threads, results = [], [], []
    for i in range(n):
        ev = threading.Event()
        holder = ClassroomClient(client.socket_path, f"{client.learner}-hold{i}")
        t = threading.Thread(target=lambda ev=ev, i=i, holder=holder: results.append(
            holder.run(snippet("import time\ntime.sleep(600)", f"hold{i}"), use_cache=False, cancel=ev)), daemon=True)
        t.start()
        cancels.append(ev)
        threads.append(t)
    wait_for(lambda: len(client.status().get("running", [])) >= n, f"{n} runs hold the slots")
    return cancels, threads, results


def test_a_class_shares_one_runner_and_a_queued_run_says_so_and_can_be_cancelled(tmp_path, serve):
    import aiohttp

    path = users_file(tmp_path)
    root = tmp_path / "class-data"
    course = make_course(tmp_path, root / "bob" / "data" / "progress.sqlite3")
    served = serve("--content", str(course), serve_args=("--users", str(path)))
    assert "全班共用一个预热运行器" in served.log()

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            a = await Learner(http, served, TOKENS["alice"]).open()
            await a.wait_text("学员：alice")
            await a.press("c")
            await a.wait_text("01 · 邻座")
            await a.tab(2)  # the second snippet (#fine)
            await a.press("x")
            await a.wait_text("✅ 一致")  # through the class runner (its zygote loads torch first)
            pid_a = served.session_pids()[-1]
            # the app runs no runner of its own: nothing under it (no zygote, no snippet process)
            assert not descendants(pid_a), descendants(pid_a)

            b = await Learner(http, served, TOKENS["bob"]).open()
            await b.wait_text("学员：bob")
            await b.press("c")
            await b.wait_text("01 · 邻座")

            client = client_for(served, "teacher")
            jobs = client.start() or client.status().get("jobs") or 2
            cancels, threads, held = hold_slots(client, int(jobs))
            try:
                await b.tab(2)
                await b.press("x")
                await b.wait_text("排队中，马上轮到你（z 取消）")
                await b.press("z")
                await b.wait_text("已取消")
                await a.press("X")  # alice again: fresh, also queued
                await a.wait_text("排队中，马上轮到你（z 取消）")
            finally:
                for ev in cancels:
                    ev.set()
                for t in threads:
                    t.join(60)
            assert [r.status for r in held] == ["cancelled"] * len(held)
            text = await a.wait_text("全新解释器")  # the slot freed: alice's queued run ran
            assert "排队中" not in text
            await a.close()
            await b.close()

    asyncio.run(scenario())


HOSTILE = {
    # what the snippet tries → (a word its real output or verdict must carry)
    "read-other-db": ("print(open({bob_db!r}, 'rb').read(16))", ("FileNotFoundError", "PermissionError")),
    "write-outside": ("open({outside!r}, 'w').write('x')\nprint('wrote it')", ("FileNotFoundError", "PermissionError", "OSError")),
    "write-data-root": ("open({root!r} + '/alice/data/evil', 'w').write('x')\nprint('wrote it')", ("FileNotFoundError", "PermissionError")),
    "socket": ("import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=5)\nprint('connected')",
               ("PermissionError", "OSError", "ConnectionRefusedError")),
    "fork-bomb": ("import os\nwhile True:\n    os.fork()", ("BlockingIOError", "超时")),
    "allocate-3gb": ("b = bytearray(3 << 30)\nprint(len(b))", ("MemoryError",)),
    "print-200mb": ("import sys\nfor _ in range(200):\n    sys.stdout.write('x' * (1 << 20))", ("输出超过 1 MB",)),
    "kill-parent": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint('after')", ("PermissionError", "💥")),
}


def test_hostile_snippets_in_a_class_are_stopped_and_nobody_loses_anything(tmp_path, serve):
    import aiohttp

    path = users_file(tmp_path)
    root = tmp_path / "class-data"
    bob_db = root / "bob" / "data" / "progress.sqlite3"
    course = make_course(tmp_path, bob_db)
    served = serve("--content", str(course), serve_args=("--users", str(path)))
    port = served.base.rsplit(":", 1)[1].strip("/")
    outside = tmp_path / "escaped.txt"

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            b = await Learner(http, served, TOKENS["bob"]).open()
            await b.wait_text("学员：bob")
            await b.press("c")
            await b.wait_text("01 · 邻座")
            await b.tab(2)
            await b.press("x")
            await b.wait_text("✅ 一致")  # bob's run, recorded in his store before anything hostile runs
            pid_b = served.session_pids()[-1]
            wait_for(lambda: bob_runs() == [("fine", "match")], "bob's run is saved")

            a = await Learner(http, served, TOKENS["alice"]).open()
            await a.wait_text("学员：alice")
            await a.press("c")
            await a.wait_text("01 · 邻座")
            await a.tab()
            await a.press("x")  # the book's #peek, as alice's app runs it: bob's database is not there
            text = await a.wait_text("不一致：实际输出和预期输出不同")  # read, it would have been ✅ 一致
            assert "FileNotFoundError 报错结束" in text or "PermissionError 报错结束" in text, text

            client = client_for(served, "alice")
            verdicts = {}
            for name, (code, words) in HOSTILE.items():
                res = client.run(snippet(code.format(bob_db=str(bob_db), outside=str(outside), root=str(root), port=port),
                                         name), use_cache=False)
                said = f"{res.status} {res.message or ''} {res.actual or ''}"
                verdicts[name] = (res.status, res.message)
                assert res.status in ("mismatch", "error", "timeout"), (name, said[:500])
                assert any(w in said for w in words), (name, said[:800])
                assert "wrote it" not in (res.actual or "") and "connected" not in (res.actual or ""), name
                assert served.proc.poll() is None, f"serve died after {name}"
            assert not outside.exists()
            assert not (root / "alice" / "data" / "evil").exists()
            assert verdicts["print-200mb"][0] == "mismatch"

            # the other learner's app keeps working: bob runs a snippet again and sees its verdict
            assert alive(pid_b)
            await b.press("X")
            await b.wait_text("全新解释器")
            # and alice's app too
            await a.tab()
            await a.press("x")
            await a.wait_text("✅ 一致")
            await a.close()
            await b.close()
            wait_for(lambda: not alive(pid_b), "bob's app ended with his tab")

    def bob_runs(db: Path = bob_db) -> list[tuple[str, str]] | None:
        if not db.exists():
            return None
        store, notice = open_store(db, course_id=course_id_of(course))
        try:
            assert notice is None  # never moved aside as corrupt
            return [(r.snippet_id, r.verdict) for r in store.runs("01")]
        finally:
            store.close()

    asyncio.run(scenario())
    assert bob_runs() == [("fine", "match"), ("fine", "match")]  # nothing of bob's saved progress is lost
    assert bob_runs(root / "alice" / "data" / "progress.sqlite3") == [("peek", "mismatch"), ("fine", "match")]  # nor alice's
    assert served.proc.poll() is None
