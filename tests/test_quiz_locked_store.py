"""A progress write that fails (another process holds an exclusive lock) neither freezes nor
crashes the quiz, in the app or the plain terminal; the answers stay in memory and are saved by a
later try. Real SQLite locks from a real second process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from test_quiz_cli import SEED, shown
from test_quiz_tui import FIXTURE, QuizApp, num, sync, text, wait_for

from torchcourse.course import load_course
from torchcourse.progress import open_store
from torchcourse.tui.screens.quiz import QuizScreen

ROOT = Path(__file__).resolve().parent.parent

LOCKER = """\
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
c.execute("ROLLBACK")
"""


class Lock:
    """Another process holding an exclusive write lock on the database until release()."""

    def __init__(self, db: Path):
        self.proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def held(self) -> bool:
        return self.proc.poll() is None

    def release(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


def test_plain_quiz_survives_a_locked_store(tmp_path):
    home = tmp_path / "h"
    env = dict(os.environ, TORCHCOURSE_HOME=str(home))
    first = subprocess.run([sys.executable, "-m", "torchcourse", "--content", str(FIXTURE), "progress"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    lock = Lock(home / "data" / "progress.sqlite3")
    try:
        key = shown("sum-single", 1)  # the right choice's number as --seed shows it
        out = subprocess.run([sys.executable, "-m", "torchcourse", "--content", str(FIXTURE), "quiz", "01", "--seed", str(SEED)],
                             cwd=ROOT, env=env, input=key + "\n", capture_output=True, text=True, timeout=600)
    finally:
        lock.release()
    assert "Traceback" not in out.stderr + out.stdout, out.stderr
    assert "这道题的作答没有保存" in out.stdout and "✓ 正确" in out.stdout, out.stdout
    assert "还有 1 题的作答没能保存" in out.stdout
    assert out.returncode == 1


@sync
async def test_app_quiz_stays_responsive_and_saves_later(tmp_path):
    course = load_course(FIXTURE)
    db = tmp_path / "progress.sqlite3"
    store, _ = open_store(db)
    app = QuizApp(lambda: QuizScreen(course, "01", store, None))
    lock = None
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = app.screen
            lock = Lock(db)
            await pilot.press(*num(screen, 1), "enter")
            assert "✓ 正确" in text(screen, "#quiz-verdict")
            await pilot.press("enter")  # on to question 2 while the write waits for the lock
            assert "第 2/6 题" in text(screen, "#quiz-head")
            assert lock.held()
            await wait_for(pilot, lambda: any("没有保存" in n.message for n in app._notifications), timeout=300)
            assert screen.session.unsaved  # kept in memory
            lock.release()
            await pilot.press("1", "enter")  # the next answer's save writes both
            await wait_for(pilot, lambda: not screen.session.unsaved, timeout=300)
        assert [a.question_id for a in store.answers()] == ["sum-single", "upper-multi"]
    finally:
        if lock is not None:
            lock.release()
        store.close()
