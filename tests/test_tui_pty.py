"""The real ``torchcourse`` command in a real pseudo-terminal: read the screen, press keys, quit."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from torchcourse.course.loader import course_id_of
from torchcourse.progress import open_store

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "tuicourse"
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>NOM78c]")


def _controlling_tty() -> None:
    """In the child: a new session whose controlling terminal is the pty (so closing it hangs up),
    with Ctrl+C and Ctrl+\\ reaching it as they do from a terminal's shell (a suite started in the
    background by a non-interactive shell has SIGINT ignored, and the app would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    def __init__(self, args: list[str], home: Path, size=(100, 30), extra_env: dict | None = None):
        self.master, slave = os.openpty()
        cols, rows = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "PYTEST", "NO_COLOR"))}
        env.update(TORCHCOURSE_HOME=str(home), TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows), PYTHONPATH=str(REPO))
        env.update(extra_env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "torchcourse", *args], stdin=slave, stdout=slave, stderr=slave,
            cwd=REPO, env=env, close_fds=True, preexec_fn=_controlling_tty,
        )
        os.close(slave)
        self.raw = b""

    def text(self, since: int = 0) -> str:
        return ANSI.sub("", self.raw[since:].decode("utf-8", "replace"))

    def mark(self) -> int:
        """Where the output is now: ``read_until(..., since=mark)`` looks only at what came after."""
        return len(self.raw)

    def read_until(self, needle: str, timeout: float = 180.0, since: int = 0) -> str:
        """Wait for ``needle`` on the screen (the deadline only catches a hang: a loaded 2-core
        machine takes its time, and the test waits for the state, not for a fixed time); with
        ``since``, only in the output after that :meth:`mark`."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if needle in self.text(since):
                return self.text()
            r, _, _ = select.select([self.master], [], [], 0.1)
            if r:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.raw += chunk
        raise AssertionError(f"{needle!r} never appeared on the screen; last output:\n{self.text()[-2000:]}")

    def drain(self, seconds: float = 0.3) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([self.master], [], [], 0.05)
            if r:
                try:
                    self.raw += os.read(self.master, 65536)
                except OSError:
                    return

    def send(self, data: str) -> None:
        os.write(self.master, data.encode())

    def wait(self, timeout: float = 180.0) -> int:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            code = self.proc.poll()
            if code is not None:
                return code
            self.drain(0.1)
        raise AssertionError("the app did not exit")

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        try:
            os.close(self.master)
        except OSError:
            pass


def open_first_chapter(term: Terminal, course_title: str, code: str) -> None:
    """From home, ``c`` opens the chapter; returns once the reader shows ``code`` (a piece of its
    first snippet's code, which only the reader shows): the snippet is on screen, so ``x`` or
    ``e`` acts on it. A state, never a fixed wait."""
    term.read_until(course_title)
    at = term.mark()
    term.send("c")
    term.read_until(code, since=at)


@pytest.fixture
def term_factory():
    made: list[Terminal] = []

    def make(*args, **kwargs) -> Terminal:
        t = Terminal(*args, **kwargs)
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()


def test_shipped_course_starts_shows_home_and_quits(tmp_path, term_factory):
    from torchcourse.course import load_course
    from torchcourse import paths

    title = load_course(paths.shipped_content_dir()).title
    term = term_factory([], tmp_path)
    term.read_until(title)
    term.read_until("章节地图")  # home is painted: its keys are bound (a key sent now waits in the pty)
    term.send("q")
    assert term.wait() == 0


def reach_the_first_break(term: Terminal) -> None:
    """From home: 继续 opens chapter 01, n passes its first break point, the banner says so."""
    term.read_until("测试课程：拆开一个小盒子")
    at = term.mark()
    term.send("c")
    term.read_until("01 · 盒子：一块内存", since=at)
    term.read_until("看完了一块内存", since=at)  # the reader's first part (up to its banner) is on screen
    at = term.mark()
    term.send("n")
    term.read_until("已记下", since=at)


def test_read_a_break_point_then_ctrl_c_keeps_it(tmp_path, term_factory):
    term = term_factory(["--content", str(FIXTURE)], tmp_path)
    reach_the_first_break(term)
    term.send("\x03")  # Ctrl+C
    assert term.wait() == 0
    store, _ = open_store(tmp_path / "data" / "progress.sqlite3", course_id=course_id_of(FIXTURE))
    assert store.chapter_progress("01").furthest_break == 1
    assert store.last_position() == ("01", 1)
    store.close()


def test_closing_the_terminal_keeps_progress(tmp_path, term_factory):
    term = term_factory(["--content", str(FIXTURE)], tmp_path, extra_env={"NO_COLOR": "1"})
    reach_the_first_break(term)
    os.close(term.master)  # the terminal window goes away: SIGHUP / EIO for the app
    try:  # wait for the exit itself; the deadline only catches an app that never exits
        term.proc.wait(timeout=180)
    except subprocess.TimeoutExpired:
        raise AssertionError("the app keeps running after its terminal closed") from None
    store, _ = open_store(tmp_path / "data" / "progress.sqlite3", course_id=course_id_of(FIXTURE))
    assert store.chapter_progress("01").furthest_break == 1
    store.close()


def test_a_kill_ends_the_app_like_q_and_keeps_progress(tmp_path, term_factory):
    import signal

    term = term_factory(["--content", str(FIXTURE)], tmp_path)
    reach_the_first_break(term)
    term.proc.send_signal(signal.SIGTERM)  # `kill`: the terminal is still there
    assert term.wait() == 0
    store, _ = open_store(tmp_path / "data" / "progress.sqlite3", course_id=course_id_of(FIXTURE))
    assert store.chapter_progress("01").furthest_break == 1
    assert store.last_position() == ("01", 1)
    store.close()
