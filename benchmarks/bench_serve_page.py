"""``torchcourse serve`` in Chromium against ``torchcourse`` in a terminal, measured in one run.

1. First frame: the page's 开始 click (``?delay=1`` shows it; the click reloads the page, which opens
   the websocket, which starts the app) → the first frame holding the home screen (the course's
   title and 章节地图), against a fresh ``torchcourse`` on a pseudo-terminal: spawn → the same
   screen in its output. Goal: ≤ 1.5×.
2. Key press → the reader's first frame: on a settled home screen (1.5 s after it is up, so the
   background prewarm has run, as for a learner), ``c`` → the first frame showing the reader's
   header for chapter 00, in the page against the terminal. Goal: ≤ 1.5×.

Both sides are the same app on the same course, the same terminal size (the page's cells), the
same TORCHCOURSE_HOME. The page's times are taken in the page: the key press at its keydown, the
click at its mousedown, each frame when it arrives (a WebSocket subclass records ``Date.now()`` per
binary message); the terminal's when the key is written to the pty and when its output is read. Prints medians of ``--runs`` and ratios.

Run: ``python benchmarks/bench_serve_page.py [--runs N]`` (needs /usr/bin/chromium and the fonts,
as tests/test_serve_browser.py does).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from serve_support import CHROMIUM, CHROMIUM_ARGS, Served, ScreenModel, missing_for_browser  # noqa: E402

HOME_MARKS = ("章节地图",)
READER_MARK = "00 · 怎么用这份教程"
SETTLE = 1.5  # seconds on the home screen before the key press (the prewarm runs meanwhile)

INIT = r"""
(() => {
  const Orig = window.WebSocket;
  const dec = new TextDecoder();
  const ansi = /\x1b\[[0-?]*[ -\/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>NOM78c]/g;
  window.__tc = {text: "", frames: [], keyAt: null};
  // the press and the click are stamped where they happen, in the page (the click reloads it:
  // its stamp crosses over in sessionStorage)
  document.addEventListener("keydown", () => { window.__tc.keyAt = Date.now() / 1000; }, true);
  document.addEventListener("mousedown", () => { sessionStorage.setItem("tcClickAt", Date.now() / 1000); }, true);
  window.WebSocket = class extends Orig {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (e) => {
        if (typeof e.data === "string") return;
        const t = Date.now();
        window.__tc.text += dec.decode(new Uint8Array(e.data), {stream: true}).replace(ansi, "");
        window.__tc.frames.push([t, window.__tc.text.length]);
      });
    }
  };
  window.__tc.when = (marks, from) => {
    let end = 0;
    for (const m of marks) {
      const i = window.__tc.text.indexOf(m, from);
      if (i < 0) return null;
      end = Math.max(end, i + m.length);
    }
    const f = window.__tc.frames.find(([t, n]) => n >= end);
    return f ? f[0] / 1000 : null;
  };
})();
"""


def _tty(slave: int):
    def child() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    return child


def terminal_run(env: dict, size: tuple[int, int], marks=HOME_MARKS) -> tuple[float, float]:
    """(spawn → home frame, key press → reader frame) for ``torchcourse`` on a fresh pty."""
    cols, rows = size
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(env, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
    t0 = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "torchcourse"], stdin=slave, stdout=slave, stderr=slave, env=env,
                            cwd=REPO, close_fds=True, preexec_fn=_tty(slave))
    os.close(slave)
    screen = ScreenModel(cols, rows)

    def until(pred, deadline=120.0) -> float:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            r, _, _ = select.select([master], [], [], 0.05)
            if r:
                screen.feed(os.read(master, 65536))
                if pred():
                    return time.time()
        raise SystemExit(f"the terminal never showed it; screen:\n{screen.text()}")

    try:
        home = until(lambda: all(m in screen.text() for m in marks)) - t0
        end = time.time() + SETTLE
        while time.time() < end:
            if select.select([master], [], [], 0.05)[0]:
                screen.feed(os.read(master, 65536))
        t1 = time.time()
        os.write(master, b"c")
        reader = until(lambda: READER_MARK in screen.text()) - t1
        os.write(master, b"q")
        end = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < end:  # read on: a full pty blocks the app's exit
            if select.select([master], [], [], 0.05)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return home, reader


def page_run(browser, url: str) -> tuple[float, float, tuple[int, int]]:
    """(开始 click → home frame, key press → reader frame, the page's cells) in a new tab."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.add_init_script(INIT)
    page = context.new_page()
    size = []
    page.on("websocket", lambda ws: size.append(ws.url))
    page.goto(url + "&delay=1")
    page.wait_for_selector("#start.-delay")

    def until(marks, start_at: int, deadline=120.0) -> float:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            t = page.evaluate("([m, f]) => window.__tc.when(m, f)", [list(marks), start_at])
            if t:
                return t
            page.wait_for_timeout(20)
        raise SystemExit(f"the page never showed {marks}")

    page.click("#start")
    page.wait_for_function("() => window.__tc && window.__tc.frames.length > 0", timeout=120000)
    t0 = float(page.evaluate("() => sessionStorage.getItem('tcClickAt')"))
    home = until(HOME_MARKS, 0) - t0
    page.wait_for_timeout(SETTLE * 1000)
    offset = page.evaluate("() => window.__tc.text.length")
    page.keyboard.press("c")
    reader = until((READER_MARK,), offset) - page.evaluate("() => window.__tc.keyAt")
    import re

    m = re.search(r"width=(\d+)&height=(\d+)", size[-1])
    context.close()
    return home, reader, (int(m.group(1)), int(m.group(2)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    missing = missing_for_browser()
    if missing:
        print(f"cannot run: {missing}")
        return 1
    from playwright.sync_api import sync_playwright

    home_dir = Path(tempfile.mkdtemp(prefix="tc-bench-serve-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "TORCHCOURSE_TOKEN"))}
    env.update(TORCHCOURSE_HOME=str(home_dir), PYTHONPATH=str(REPO))
    served = Served(home_dir / "serve")  # its own home: the page's progress never moves the terminal's
    page_home, page_key, term_home, term_key = [], [], [], []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                _h, _k, size = page_run(browser, served.url)  # warm-up of both: caches, pyc files
                terminal_run(env, size)
                for _ in range(args.runs):
                    h, k, size = page_run(browser, served.url)
                    page_home.append(h)
                    page_key.append(k)
                    h, k = terminal_run(env, size)
                    term_home.append(h)
                    term_key.append(k)
            finally:
                browser.close()
    finally:
        served.close()
    med = statistics.median
    load = os.getloadavg()[0]
    print(f"terminal size {size[0]}×{size[1]} cells, {args.runs} runs each, load average {load:.2f}")
    runs = lambda xs: " ".join(f"{x * 1000:.0f}" for x in xs)  # noqa: E731
    print(f"each run, ms: terminal home {runs(term_home)} | page home {runs(page_home)} | "
          f"terminal key {runs(term_key)} | page key {runs(page_key)}")
    print(f"page apps started while the page loaded: {served.log().count('（页面加载时已启动）')} of {args.runs + 1}")
    print(f"first frame  terminal: spawn → home      {med(term_home) * 1000:7.0f} ms")
    print(f"first frame  browser: 开始 click → home   {med(page_home) * 1000:7.0f} ms   ratio {med(page_home) / med(term_home):.2f}× (goal ≤ 1.5×)")
    print(f"key → reader terminal                    {med(term_key) * 1000:7.0f} ms")
    print(f"key → reader browser                     {med(page_key) * 1000:7.0f} ms   ratio {med(page_key) / med(term_key):.2f}× (goal ≤ 1.5×)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
