"""Helpers for the ``torchcourse serve`` tests: the real server process, the screen a page shows
(rebuilt from the terminal stream its websocket receives), and a glyph check on screenshots.

Nothing here waits for a fixed time: every wait polls for a state and its deadline only catches a
hang (a loaded 2-core machine takes its time).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib
from codecs import getincrementaldecoder
from pathlib import Path

import pytest

import waiting

from rich.cells import get_character_cell_size

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "tuicourse"
DEADLINE = waiting.DEADLINE

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
APT = "apt-get install -y chromium fonts-noto-cjk fonts-noto-color-emoji"


def wait_for(predicate, what: str, timeout: float | None = None, step: float = 0.05, fail=None, state=None):
    return waiting.wait_until(predicate, what, deadline=timeout, step=step, fail=fail, state=state)


# -- the server --------------------------------------------------------------------------------


class Served:
    """``torchcourse serve --port 0`` in its own session, with a private TORCHCOURSE_HOME."""

    URL = re.compile(r"(http://\S+?/)\?token=(\S+)")

    def __init__(self, home: Path, *args: str, env: dict | None = None, serve_args: tuple[str, ...] = ()) -> None:
        self.home = home
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "PYTEST", "TORCHCOURSE_TOKEN"))}
        environ.update(TORCHCOURSE_HOME=str(home), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        environ.update(env or {})
        self.log_path = home / "serve.log"
        home.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "torchcourse", *args, "serve", "--port", "0", *serve_args], stdout=self._log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO, env=environ, start_new_session=True,
        )
        found = wait_for(lambda: self.URL.search(self.log()) or self.proc.poll() is not None, "serve printed its URL")
        if self.proc.poll() is not None:
            raise AssertionError(f"serve exited {self.proc.returncode}:\n{self.log()}")
        self.base, self.token = found.group(1), found.group(2)
        self.url = f"{self.base}?token={self.token}"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def session_pids(self) -> list[int]:
        return [int(p) for p in re.findall(r"打开了一个会话（pid (\d+)", self.log())]

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)  # Ctrl+C
        try:
            return self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            raise AssertionError("serve did not stop on Ctrl+C") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


def descendants(pid: int) -> set[int]:
    """Every live (not zombie) process whose parent chain reaches ``pid`` (read from /proc)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent[int(entry)] = int(stat.rpartition(")")[2].split()[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, p in parent.items() if p in frontier} - out
        out |= frontier
    return {p for p in out if alive(p)}


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "(gone)"


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


# -- what the page shows ------------------------------------------------------------------------

TOKEN = re.compile(r"\x1b\[([0-?]*)[ -/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>NOM78c]")
INCOMPLETE = re.compile(r"\x1b(\[[0-?]*[ -/]*|\][^\x07\x1b]*|\x1b?|[()])?$")


class ScreenModel:
    """The terminal grid the page draws, rebuilt from the stream (cursor moves, erases, wide
    characters): what ``lines()`` returns is what a person sees, with ANSI styling stripped."""

    def __init__(self, cols: int = 300, rows: int = 120) -> None:
        self.cols, self.rows = cols, rows
        self.grid = [[" "] * cols for _ in range(rows)]
        self.x = self.y = 0
        self._decode = getincrementaldecoder("utf-8")("replace").decode
        self._pending = ""

    def feed(self, data: bytes) -> None:
        text = self._pending + self._decode(data)
        tail = INCOMPLETE.search(text)
        cut = tail.start() if tail and tail.group(0) else len(text)
        text, self._pending = text[:cut], text[cut:]
        pos = 0
        for m in TOKEN.finditer(text):
            self._text(text[pos:m.start()])
            if m.group(2):
                self._csi(m.group(1), m.group(2))
            pos = m.end()
        self._text(text[pos:])

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?"):
            return
        nums = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else []
        first = nums[0] if nums else 0
        if final in "Hf":
            self.y = max(0, (nums[0] if nums and nums[0] else 1) - 1)
            self.x = max(0, (nums[1] if len(nums) > 1 and nums[1] else 1) - 1)
        elif final == "J" and first == 2:
            self.grid = [[" "] * self.cols for _ in range(self.rows)]
        elif final == "K":
            row = self.grid[min(self.y, self.rows - 1)]
            start, end = {0: (self.x, self.cols), 1: (0, self.x + 1), 2: (0, self.cols)}.get(first, (self.x, self.cols))
            row[start:end] = [" "] * (end - start)
        elif final == "C":
            self.x += max(1, first)
        elif final == "D":
            self.x = max(0, self.x - max(1, first))
        elif final == "A":
            self.y = max(0, self.y - max(1, first))
        elif final == "B":
            self.y += max(1, first)
        elif final == "G":
            self.x = max(0, first - 1)

    def _text(self, s: str) -> None:
        for ch in s:
            if ch == "\r":
                self.x = 0
            elif ch == "\n":
                self.y += 1
            elif ch == "\b":
                self.x = max(0, self.x - 1)
            elif ch < " " or ch == "\x7f":
                continue
            else:
                w = get_character_cell_size(ch)
                if w == 0:
                    continue
                if self.y < self.rows and self.x + w <= self.cols:
                    self.grid[self.y][self.x] = ch
                    if w == 2:
                        self.grid[self.y][self.x + 1] = ""
                self.x += w

    def lines(self) -> list[str]:
        return ["".join(row).rstrip() for row in self.grid]

    def text(self) -> str:
        return "\n".join(self.lines()).rstrip()

    def find(self, needle: str) -> tuple[int, int] | None:
        """(row, column in cells) of ``needle`` on the screen."""
        for y, row in enumerate(self.grid):
            if needle in "".join(row):
                return y, _cells_before(row, needle)
        return None


def _cells_before(row: list[str], needle: str) -> int:
    joined, cells = "", []
    for x, c in enumerate(row):
        if c:
            joined += c
            cells.append(x)
    return cells[joined.find(needle)]


# -- screenshots ----------------------------------------------------------------------------


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB/RGBA non-interlaced PNG (Chromium's)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _c, _f, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        rows.append(bytes(line if bpp == 3 else b"".join(line[j:j + 3] for j in range(0, stride, 4))))
    return width, height, rows


def ink_mask(rows: list[bytes], box: tuple[int, int, int, int]) -> frozenset[tuple[int, int]]:
    """The pixels of ``box`` (x0, y0, x1, y1) that differ from the box's background colour."""
    x0, y0, x1, y1 = box
    counts: dict[bytes, int] = {}
    for y in range(y0, y1):
        for x in range(x0, x1):
            px = rows[y][3 * x:3 * x + 3]
            counts[px] = counts.get(px, 0) + 1
    bg = max(counts, key=counts.get)
    out = set()
    for y in range(y0, y1):
        for x in range(x0, x1):
            px = rows[y][3 * x:3 * x + 3]
            if sum(abs(p - q) for p, q in zip(px, bg)) > 96:
                out.add((x - x0, y - y0))
    return frozenset(out)


def looks_like_a_box(mask: frozenset[tuple[int, int]]) -> bool:
    """A missing glyph (tofu) is drawn as a rectangle's outline: (almost) all of its ink lies on
    the edges of its own bounding box. A real character has ink inside it."""
    if not mask:
        return False
    xs, ys = [x for x, _ in mask], [y for _, y in mask]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    band = max(2, round(min(x1 - x0, y1 - y0) * 0.15))
    inside = sum(1 for x, y in mask if x0 + band < x < x1 - band and y0 + band < y < y1 - band)
    return inside < 0.05 * len(mask)


# -- the browser --------------------------------------------------------------------------------


def missing_for_browser() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install '.[test]')"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing ({APT})"
    fc = shutil.which("fc-list")
    if fc is None:
        return f"fontconfig's fc-list is missing, so the CJK and emoji fonts cannot be checked ({APT})"
    cjk = subprocess.run([fc, ":lang=zh", "family"], capture_output=True, text=True).stdout
    if "Noto" not in cjk:
        return f"no CJK font (fonts-noto-cjk): every Chinese character would be a box ({APT})"
    emoji = subprocess.run([fc, ":family=Noto Color Emoji", "family"], capture_output=True, text=True).stdout
    if "Noto Color Emoji" not in emoji:
        return f"no colour emoji font (fonts-noto-color-emoji): ⏱ 📝 🛑 ✅ would be boxes ({APT})"
    return None


class Page:
    """A Chromium tab on the served course; ``screen`` is what its websocket drew."""

    def __init__(self, browser, url: str, viewport=(1200, 800)) -> None:
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.page = self.context.new_page()
        self.screen = ScreenModel()
        self.sockets = []
        self.size: tuple[int, int] | None = None
        self.frames = 0
        self.sent: list[str] = []  # what the page told the server (keys, resize, focus…)
        self.page.on("websocket", self._socket)
        self.response = self.page.goto(url)

    def _socket(self, ws) -> None:
        self.sockets.append(ws)
        m = re.search(r"width=(\d+)&height=(\d+)", ws.url)
        if m:
            self.size = (int(m.group(1)), int(m.group(2)))
        ws.on("framereceived", self._frame)
        ws.on("framesent", self._sent)

    def _frame(self, payload) -> None:
        if isinstance(payload, bytes):
            self.frames += 1
            self.screen.feed(payload)

    def _sent(self, payload) -> None:
        if isinstance(payload, str):
            self.sent.append(payload)
        if isinstance(payload, str) and payload.startswith('["resize"'):
            m = re.search(r'"width":\s*(\d+),\s*"height":\s*(\d+)', payload)
            if m:
                self.size = (int(m.group(1)), int(m.group(2)))

    def pump(self) -> None:
        self.page.wait_for_timeout(50)  # lets Playwright deliver the frames received meanwhile

    def wait_text(self, needle: str, timeout: float = DEADLINE) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            text = self.screen.text()
            if needle in text:
                return text
            self.pump()
        raise AssertionError(f"{needle!r} never appeared in the page; it shows:\n{self.screen.text()[-3000:]}")

    def wait_gone(self, needle: str, timeout: float = DEADLINE) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if needle not in self.screen.text():
                return
            self.pump()
        raise AssertionError(f"{needle!r} stayed in the page:\n{self.screen.text()[-3000:]}")

    def settle(self) -> None:
        """Until no new frame arrives for a few polls (the app drew what it had)."""
        last, quiet = -1, 0
        end = time.monotonic() + DEADLINE
        while quiet < 6 and time.monotonic() < end:
            self.pump()
            quiet = quiet + 1 if self.frames == last else 0
            last = self.frames

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)

    def shot(self, path: Path) -> bytes:
        return self.page.screenshot(path=str(path))

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium through Playwright, one per test module (never a downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def serve(tmp_path):
    """Start ``Served`` servers, each with a home of its own; all are closed when the test ends."""
    made: list[Served] = []

    def start(*args: str, **kwargs) -> Served:
        s = Served(tmp_path / f"home{len(made)}", *args, **kwargs)
        made.append(s)
        return s

    yield start
    for s in made:
        s.close()


def get(url: str, headers: dict | None = None) -> tuple[int, dict, str]:
    """GET ``url``: (status, headers, body), an HTTP error status included."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode("utf-8", "replace")


def tc(*args: str, env: dict | None = None, home: Path) -> subprocess.CompletedProcess:
    """``torchcourse ARGS`` in a subprocess with its own home, never with the serve token."""
    environ = {k: v for k, v in os.environ.items() if k != "TORCHCOURSE_TOKEN"}
    environ.update(TORCHCOURSE_HOME=str(home), PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-m", "torchcourse", *args], capture_output=True, text=True, env=environ,
                          stdin=subprocess.DEVNULL, cwd=REPO, timeout=120)
