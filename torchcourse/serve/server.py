"""The aiohttp app that serves the course: textual-serve's Server with a lock, a page and an end.

textual-serve (pinned in pyproject.toml; this module relies on its 1.1.3 internals: ``Server``'s
``_process_messages``/``handle_download``/``download_manager``, ``AppService``'s packet loop and
the ``fontFamily`` literal in its ``textual.js``) runs one app process per websocket. What is
changed here, and why:

- every request passes :meth:`CourseServer._guard`: without the token (``?token=``, the cookie
  the page's first response sets, or ``Authorization: token …``) it gets 403 and a Chinese page;
  a websocket from another origin is refused too (a page elsewhere cannot drive the app through
  the learner's cookie). No request is logged with its query, so the token never reaches a log.
- the page is our own (``page/index.html``): the course's title instead of the command line, no
  server path, host or environment variable, Chinese on its cards, a favicon, and ``textual.js``
  served with a font stack that draws CJK and the course's emoji after the bundled Latin font.
- the app runs as ``python -m torchcourse`` (no shell) in its own session, without the token in
  its environment; closing the tab sends it SIGHUP, which the app handles as a closed terminal
  (reading place and queued writes saved, snippets stopped), and only an app that does not end
  within :data:`CLOSE_GRACE` seconds is killed with its process group.
- a class (``users``): the token names the learner; each learner's apps run with their own
  ``TORCHCOURSE_HOME`` (``<data root>/<name>``) and ``TORCHCOURSE_LEARNER``; a page's websocket
  (``/ws/<ticket>``, the ticket given to that page only, used once) runs only as the learner whose
  link loaded the page: carrying another learner's credential it is closed with
  :data:`OTHER_LEARNER_CLOSE` and no app runs; a download goes only to its learner; the page
  names who is signed in.
- a page's messages are read within limits (:data:`MAX_MESSAGE`, :data:`MAX_PING`,
  :data:`MESSAGE_RATE`, :data:`MESSAGE_COST`, one budget for all of a learner's pages): pages that
  send faster, or more messages, wait, unread, and no other learner's do; as root, a
  class's app processes run in each learner's CPU group (:class:`~torchcourse.runner.cgroups.AppGroups`).
- once a tab has told the server its size, the next page request starts its app at once (it
  reads the progress as it is then, like any start), so the app loads while the page does; its
  output is held until the page's websocket (``/ws/<id>``) claims it, and an unclaimed one is
  ended after :data:`SPARE_WAIT` seconds.
"""

from __future__ import annotations

import asyncio
import html
import logging
import os
import secrets
import signal
import sys
from collections import deque
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from torchcourse.runner.cgroups import AppGroups
from torchcourse.serve.access import TOKEN_ENV, token_matches

LEARNER_ENV = "TORCHCOURSE_LEARNER"  # the signed-in learner's name, for the app's title (a class only)

log = logging.getLogger("torchcourse.serve")

PAGE_DIR = Path(__file__).resolve().parent / "page"

# textual.js hard-codes the terminal's font; this literal is replaced (checked at start: a
# textual-serve whose bundle no longer has it stops the server with that reason).
JS_FONT_LITERAL = "fontFamily:\"'Roboto Mono', Monaco, 'Courier New', monospace\""
# ... and the terminal object is handed to the page's own script once it is open (copy, paste,
# wheel, touch, the cards: page/index.html's ``torchcourseTerminal``)
JS_OPEN_LITERAL = "this.terminal.open(e),"
JS_OPEN_HOOK = "this.terminal.open(e),window.torchcourseTerminal&&window.torchcourseTerminal(this),"
# The Latin font first (cells are measured on it), then the monospace and sans CJK fonts of each
# platform, then the platform emoji fonts (with CJK fonts alone ⏱ 📝 🛑 ✅ are still boxes).
TERMINAL_FONTS = (
    "'Roboto Mono', 'DejaVu Sans Mono', Menlo, Consolas, "
    "'Noto Sans Mono CJK SC', 'Sarasa Mono SC', 'Source Han Mono SC', "
    "'PingFang SC', 'Hiragino Sans GB', 'Microsoft YaHei', 'Noto Sans CJK SC', 'Source Han Sans SC', "
    "'WenQuanYi Micro Hei', 'Apple Color Emoji', 'Segoe UI Emoji', 'Noto Color Emoji', monospace"
)
UI_FONTS = (
    "'PingFang SC', 'Hiragino Sans GB', 'Microsoft YaHei', 'Noto Sans CJK SC', 'Source Han Sans SC', "
    "'WenQuanYi Micro Hei', sans-serif, 'Apple Color Emoji', 'Segoe UI Emoji', 'Noto Color Emoji'"
)

CLOSE_GRACE = 15.0  # seconds an app gets after SIGHUP (its runner waits up to ESCALATE_AFTER + 1 s)
EXIT_GRACE = 3.0  # an app that announced its exit (q) gets this long before it is sent SIGHUP
SPARE_WAIT = 30.0  # seconds an app started for a page waits for that page's websocket
MAX_SPARES = 2  # apps waiting for their page at once (more page loads just start theirs on connect)
TICKET_WAIT = 60.0  # seconds a page's websocket id stays valid (the page connects once, right away)
MAX_CELLS = 500  # a terminal's width or height (query string or resize message) is clamped to 1..MAX_CELLS
MAX_SESSIONS_PER_LEARNER = 4  # a learner's next tab beyond this ends their oldest session
# app processes one learner of a class may start within START_WINDOW seconds; the next waits. A
# client reconnecting ten times a second started an app process (~0.3 s of CPU each) every time:
# the session cap ends the old ones but does not slow the starts, and a CPU loop of the host ran
# 3.3x slower meanwhile
START_BURST = 4
START_WINDOW = 10.0
# websockets of one learner waiting for their start at once; the next is refused (429): waiting
# websockets count as running requests for the per-address connection cap, and one learner opening
# 300 of them filled their address's 256 (every classmate behind the same NAT or proxy got 503)
MAX_WAITING = 2
# what one learner's pages may send, together: a message at most MAX_MESSAGE bytes (a key, a paste, a resize), a ping's
# payload echoed only up to MAX_PING characters, and at most MESSAGE_RATE bytes a second on average
# (MESSAGE_BURST at once), each message counted as at least MESSAGE_COST bytes (256 messages a
# second: a key, a mouse move, a resize each; a mouse swept over the page sends ~60-120) — past
# that serve stops reading that learner's websockets for a while. Every message is parsed on serve's one
# event loop: two tabs sending 4 MB pings in a loop made another learner's key take 56-140 ms to
# draw instead of 8-25, and four sending 34-byte pings as fast as they could (42,000 a second)
# made it 4-7x slower (1.2-1.4x while each page had a budget of its own)
MAX_MESSAGE = 256 << 10
MAX_PING = 64
MESSAGE_RATE = 256 << 10
MESSAGE_BURST = 1 << 20
MESSAGE_COST = 1 << 10
# pages one learner of a class may load within PAGE_WINDOW seconds; the next gets 429. Each page
# load makes a websocket id kept TICKET_WAIT seconds: 8 connections reloading the page as fast as
# they could (22,000 loads in 20 s) made another learner's keys 3.4-3.7x slower to draw
PAGE_BURST = 30
PAGE_WINDOW = 10.0
STOP_WAIT = CLOSE_GRACE + 10.0  # serve stops within this once asked (SIGTERM / Ctrl+C), whatever a session does
PACKET_LOOP_WAIT = 5.0  # seconds the packet loop gets to end once its app process is gone

REFUSED = (
    "<!DOCTYPE html><html lang=\"zh-CN\"><head><meta charset=\"utf-8\"><title>需要访问令牌</title></head>"
    "<body style=\"font-family: sans-serif; margin: 3em;\"><h1>403：需要访问令牌</h1>"
    "<p>这个教程只对拿到令牌的人开放。请用启动 <code>torchcourse serve</code> 时打印出的完整网址打开"
    "（网址里带着 <code>?token=…</code>）；网址丢了就在那个终端里按 Ctrl+C 停掉，再启动一次。</p></body></html>"
)
# a class: the learner did not start serve, and a restart issues no new link (M1)
REFUSED_CLASS = (
    "<!DOCTYPE html><html lang=\"zh-CN\"><head><meta charset=\"utf-8\"><title>链接无效</title></head>"
    "<body style=\"font-family: sans-serif; margin: 3em;\"><h1>403：链接无效</h1>"
    "<p>这个链接无效或已经停用，请向老师要你自己的链接。</p></body></html>"
)
# a class: a browser signed in as one learner opens another learner's link (red team L1)
SWITCH_PAGE = (
    "<!DOCTYPE html><html lang=\"zh-CN\"><head><meta charset=\"utf-8\"><title>换一位学员？</title></head>"
    "<body style=\"font-family: sans-serif; margin: 3em; max-width: 40em;\"><h1>这个浏览器正以学员 {before} 的身份学习</h1>"
    "<p>你打开的链接属于学员 <b>{after}</b>。换过去以后，这个浏览器里的进度、改过的代码和测验答案都记在 {after} 名下。"
    "不是你自己的链接就别换：别人发来的链接会让你的学习记到别人那里。</p>"
    "<form method=\"post\" action=\"/?token={token}\" style=\"display: inline;\">"
    "<button type=\"submit\" id=\"switch\">换成学员 {after}</button></form>"
    " &nbsp; <a href=\"/\" id=\"stay\">继续以 {before} 的身份学习</a></body></html>"
)
from torchcourse.serve.users import HOLD_FILE  # noqa: E402 (a held learner: ``class reset`` is at work)
REVOKED_CLOSE = 4403  # a websocket ended because its learner's link was removed or changed (the page says so)
OTHER_LEARNER_CLOSE = 4409  # a page's websocket came with another learner's credential (the page says so)

SECURITY_HEADERS = {
    "Referrer-Policy": "no-referrer",  # a link opened from the course never carries the page's URL
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}
NO_STORE = "no-store"  # the page and refusals: never from a cache
STATIC_CACHE = "private, max-age=86400"  # the bundle, CSS, fonts: a reopened tab does not fetch them again


def page_html(title: str, font_size: int, spare: str = "", learner: str = "") -> str:
    """The page; with ``learner`` (a class) it names who is signed in, above the terminal."""
    template = (PAGE_DIR / "index.html").read_text(encoding="utf-8")
    tab = f"{title} · {learner}" if learner else title
    who = f"学员：{html.escape(learner)} · 这里的进度只属于你" if learner else ""
    return (template.replace("{{TAB_TITLE}}", html.escape(tab)).replace("{{TITLE}}", html.escape(title))
            .replace("{{FONT_SIZE}}", str(font_size)).replace("{{UI_FONTS}}", UI_FONTS)
            .replace("{{SPARE}}", html.escape(spare)).replace("{{WHO}}", who)
            .replace("{{BODY_CLASS}}", ' class="-signed-in"' if learner else "")
            .replace("{{CLASS}}", "1" if learner else ""))


@lru_cache(maxsize=1)
def patched_textual_js(statics: Path) -> bytes:
    """textual.js with the course's font stack; ValueError when the bundle has changed."""
    text = (statics / "js" / "textual.js").read_text(encoding="utf-8")
    if text.count(JS_FONT_LITERAL) != 1:
        raise ValueError(f"textual-serve 的 textual.js 里找不到字体设置（{JS_FONT_LITERAL}）：textual-serve 的版本和 pyproject.toml 里钉住的不同")
    if text.count(JS_OPEN_LITERAL) != 1:
        raise ValueError(f"textual-serve 的 textual.js 里找不到打开终端的地方（{JS_OPEN_LITERAL}）：textual-serve 的版本和 pyproject.toml 里钉住的不同")
    text = text.replace(JS_OPEN_LITERAL, JS_OPEN_HOOK)
    return text.replace(JS_FONT_LITERAL, f'fontFamily:"{TERMINAL_FONTS}"').encode("utf-8")


def printable(text: str, limit: int = 200) -> str:
    """``text`` for the log: control and format characters escaped (a path is decoded from the
    request: ``%0A`` made a line that passed for serve's own, ``%1B`` sequences retitled and erased
    the teacher's terminal), cut to ``limit`` characters."""
    out = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return out if len(out) <= limit else out[:limit] + "…"


def _clamp(value: str | None, default: int) -> int:
    try:
        n = int(value) if value is not None else default
    except ValueError:
        n = default
    return max(1, min(MAX_CELLS, n))


class CourseAppService(AppService):
    """One app process for one websocket: started without a shell, ended like a closed terminal."""

    def __init__(self, argv: list[str], *, download_manager, size: tuple[int, int], learner: str = "",
                 env: dict[str, str] | None = None, groups=None) -> None:
        super().__init__(" ".join(argv), write_bytes=self._out_bytes, write_str=self._out_str, close=self._out_close,
                         download_manager=download_manager)
        self.argv = argv
        self.size = size
        self.learner = learner  # "" when one learner is served (no users file)
        self.env = env or {}  # the learner's TORCHCOURSE_HOME and name (a class), set over os.environ
        self._announced_exit = False
        self._stopping: asyncio.Task | None = None
        self._spawning: asyncio.Future | None = None  # the app's process being made (see _open_app_process)
        self._sink: web.WebSocketResponse | None = None  # the page's websocket, once it connected
        self._held: list[tuple[str, object]] = []  # what the app wrote before that
        self.attached_early = False  # started for its page before the page connected
        self._gone = False  # the page's websocket failed: the app's output is read and dropped
        self.groups = groups  # the class's CPU groups for apps (runner.cgroups.AppGroups), or None

    # The app may start before its page connects (see CourseServer.handle_index): until then its
    # output is held, and handed over in order when the websocket arrives.

    async def _out_bytes(self, data: bytes) -> None:
        await self._out("bytes", data)

    async def _out_str(self, data: str) -> None:
        await self._out("str", data)

    async def _out_close(self) -> None:
        await self._out("close", None)

    async def _out(self, kind: str, data) -> None:
        if self._sink is None:
            self._held.append((kind, data))
        elif not self._gone:
            try:
                await self._emit(self._sink, kind, data)
            except ConnectionError:
                # the page has gone mid-frame. textual-serve's packet loop would end on this error
                # and stop reading the app's output; the app, blocked writing a frame nobody reads,
                # could then never end on SIGHUP. The loop goes on reading until the app exits, and
                # what it reads is dropped.
                self._gone = True

    @staticmethod
    async def _emit(websocket: web.WebSocketResponse, kind: str, data) -> None:
        if kind == "bytes":
            await websocket.send_bytes(data)
        elif kind == "str":
            await websocket.send_str(data)
        else:
            await websocket.close()

    async def attach(self, websocket: web.WebSocketResponse) -> None:
        while self._held:
            kind, data = self._held.pop(0)
            await self._emit(websocket, kind, data)
        self._sink = websocket  # no await since the list was found empty: nothing is lost between

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width=width, height=height)  # os.environ + the web driver
        environment.pop(TOKEN_ENV, None)  # a snippet printing os.environ must not show the token
        environment.update(self.env)
        return environment

    async def _open_app_process(self, width: int = 80, height: int = 24):
        # A session may be ended while its app is being made (the per-learner cap ends a learner's
        # oldest session, which can still be starting): stop() then waits for the process being
        # made and ends it. Before, it found no process, counted the session ended, and the app
        # started a moment later outlived its session and serve itself (a root process holding
        # the learner's progress). One ended before its start makes no process at all.
        if self._stopping is not None:
            raise ConnectionResetError("这个会话在它的程序启动前已经结束")
        self._spawning = asyncio.ensure_future(asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True,  # Ctrl+C in serve's terminal reaches serve, which ends each app
        ))
        self._process = process = await asyncio.shield(self._spawning)
        self._stdin = process.stdin
        if self.groups is not None:  # (off the event loop: a v1 move waits 5-15 ms for the kernel's RCU)
            await asyncio.get_running_loop().run_in_executor(None, self.groups.enter, process.pid, self.learner)
        if self._stopping is not None:  # ended meanwhile: stop() ends this process, nothing runs it
            raise ConnectionResetError("这个会话在它的程序启动时已经结束")
        return process

    async def on_meta(self, data: bytes) -> None:
        if b'"exit"' in data:
            self._announced_exit = True
        await super().on_meta(data)

    async def stop(self) -> None:
        """End the app (once, however many callers ask); returns when the process is gone."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopping)

    async def _stop(self) -> None:
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        if self._process is None and self._spawning is not None:
            try:  # a start cut short: the process was (or is being) made all the same
                self._process = await self._spawning
            except Exception:  # noqa: BLE001 - it could not be made: nothing to end
                pass
        process = self._process
        if process is not None and process.returncode is None:
            if self._announced_exit:  # q in the app: it is ending on its own
                try:
                    await asyncio.wait_for(process.wait(), EXIT_GRACE)
                except TimeoutError:
                    pass
            if process.returncode is None:
                try:
                    process.send_signal(signal.SIGHUP)  # the app's closed-terminal path
                except ProcessLookupError:
                    pass
                try:
                    await asyncio.wait_for(process.wait(), CLOSE_GRACE)
                except TimeoutError:
                    log.warning("一个会话的程序 %s 秒内没有结束，强制结束它（pid %s）", CLOSE_GRACE, process.pid)
                    try:
                        os.killpg(process.pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                    try:
                        # wait() also waits for the app's pipes to close, which a process that
                        # left its group or an output nobody reads can hold open: bounded, then
                        # the pipes are closed from this side
                        await asyncio.wait_for(process.wait(), CLOSE_GRACE)
                    except TimeoutError:
                        log.warning("一个会话的程序已被强制结束，但它的输出管道没有关闭；从这一边关闭（pid %s）", process.pid)
                        process._transport.close()
        if self._task is not None:
            # the packet loop ends at the closed stdout; one stuck writing to a client that has gone
            # (a huge frame) is cancelled, so that the session ends and serve can stop
            try:
                await asyncio.wait_for(asyncio.shield(self._task), PACKET_LOOP_WAIT)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
            except Exception:  # noqa: BLE001 - the loop's own failure: the session is over anyway
                pass
            self._task = None

    async def set_terminal_size(self, width: int, height: int) -> None:
        """A resize message from the page, clamped like the query's size (a client asking for
        3000 × 2000 cells gets at most MAX_CELLS each way)."""
        await super().set_terminal_size(_clamp(str(width), 80), _clamp(str(height), 24))


class CourseServer(Server):
    """textual-serve's server for one course: token, page, lifecycle (see the module docstring).

    ``token``: one learner, whose apps inherit serve's environment (its ``TORCHCOURSE_HOME``).
    ``users`` (name → token) and ``data_root``: a class; the token a request carries names the
    learner, and that learner's apps run with ``TORCHCOURSE_HOME=<data_root>/<name>``.
    """

    def __init__(self, argv: list[str], *, token: str | None = None, title: str,
                 host: str = "127.0.0.1", port: int = 8000, users: dict[str, str] | None = None,
                 data_root: Path | None = None, app_env: dict[str, str] | None = None,
                 users_path: Path | None = None) -> None:
        super().__init__(" ".join(argv), host=host, port=port, title=title)
        if (token is None) == (users is None):
            raise ValueError("CourseServer needs a token or a users table, not both")
        self.argv = argv
        self.token = token
        self.users = users
        self.data_root = Path(data_root) if data_root is not None else None
        self.app_env = dict(app_env or {})  # for every app (e.g. the class runner's address)
        self.learners: dict[str, str] = {token: ""} if users is None else {t: n for n, t in users.items()}
        self.sessions: set[CourseAppService] = set()
        self.spares: dict[str, CourseAppService] = {}  # apps started for a page that has not connected yet
        self.tickets: dict[str, tuple[str, float]] = {}  # a page's websocket id → (its learner, expiry)
        self.budgets: dict[str, list[float]] = {}  # a learner's message budget, all their pages' (credit, when)
        self.last_size: tuple[int, int] | None = None  # the cells of the learner's last tab
        self.js = patched_textual_js(self.statics_path)
        self.cookie = f"torchcourse_token_{port}"
        self.who_cookie = f"torchcourse_who_{port}"
        self.users_path = Path(users_path) if users_path is not None else None  # reread on change/SIGHUP
        self._users_stamp = self._stamp()
        self.held: set[str] = set()  # learners held out while their progress is reset
        self.starts: dict[str, list[float]] = {}  # a learner's app starts in the last START_WINDOW s
        self.waiting: dict[str, int] = {}  # a learner's websockets waiting for their start
        self.refusals_logged: dict[str, float] = {}  # when a learner's 429 was last logged
        self.page_loads: dict[str, deque[float]] = {}  # a learner's page loads in the last PAGE_WINDOW s
        # a class, serve as root: each learner's apps in a CPU group of their own (see AppGroups)
        self.app_groups = AppGroups(enabled=None if users is not None else False)

    # -- the users file, read again while serving ---------------------------------------------

    def _stamp(self) -> tuple | None:
        if self.users_path is None:
            return None
        try:
            st = self.users_path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    async def reload_users(self) -> None:
        """Read the users file again: added learners get in now; a removed learner, or one whose
        token changed, has every open session ended at once (their place saved) while everyone
        else keeps working. A file that cannot be used is reported and the current list kept."""
        from torchcourse.serve.users import UsersError, load_users

        self._users_stamp = self._stamp()
        try:
            users = load_users(self.users_path)
        except UsersError as exc:
            log.warning("学员名单没有重新读入（沿用现在的名单）：%s", exc)
            return
        gone = sorted(n for n, t in self.users.items() if users.get(n) != t)
        added = sorted(n for n, t in users.items() if self.users.get(n) != t)
        if not gone and not added:
            return
        self.users = users
        self.learners = {t: n for n, t in users.items()}
        for ticket in [t for t, (n, _u) in self.tickets.items() if n in gone]:
            del self.tickets[ticket]
        log.info("学员名单已重新读入：现在 %d 个学员%s%s", len(users),
                 f"；新的或换了令牌：{'、'.join(added)}" if added else "",
                 f"；停用或换了令牌（他们打开的会话已结束）：{'、'.join(gone)}" if gone else "")
        await self.end_learner_sessions(set(gone))

    async def end_learner_sessions(self, names: set[str]) -> int:
        """End every session (and spare) of these learners now; the others keep running."""
        ending = [s for s in list(self.sessions) if s.learner in names]
        for spare, service in list(self.spares.items()):
            if service.learner in names:
                del self.spares[spare]
        for service in ending:
            sink = service._sink
            if sink is not None and not sink.closed:
                await sink.close(code=REVOKED_CLOSE, message="链接已停用".encode())
        await asyncio.gather(*(s.stop() for s in ending), return_exceptions=True)
        for service in ending:
            self.sessions.discard(service)
        return len(ending)

    async def watch_users(self, every: float = 1.0) -> None:
        """Poll the users file's identity, time and size (a change reloads it) and the learners'
        hold files (a held learner's sessions end and their link is refused until it goes)."""
        while True:
            await asyncio.sleep(every)
            if self._stamp() != self._users_stamp:
                await self.reload_users()
            held = {n for n in self.users if (self.data_root / n / HOLD_FILE).exists()}
            newly = held - self.held
            self.held = held
            if newly:
                n = await self.end_learner_sessions(newly)
                log.info("暂停了学员 %s（重置进度；结束了 %d 个会话）", "、".join(sorted(newly)), n)

    # -- who gets in ----------------------------------------------------------------------

    def _learner_of(self, candidate: str | None) -> str | None:
        found = None
        for token, name in self.learners.items():  # every token compared: no early exit to time
            if token_matches(candidate, token):
                found = name
        return found

    def learner(self, request: web.Request) -> str | None:
        """The learner a request's token names ("" for the one learner), or None (refused).

        The first credential the request carries decides, alone: ``?token=``, else
        ``Authorization: token …``, else the cookie. A ``?token=`` that matches nobody is refused
        even when the cookie names someone (a mistyped, removed or rotated link never opens the
        browser's previous learner); a browser holding A's cookie that opens B's link is B."""
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        for candidate in (request.query.get("token"), value.strip() if scheme.lower() == "token" else None,
                          request.cookies.get(self.cookie)):
            if candidate:
                name = self._learner_of(candidate)
                return None if name in self.held else name
        return None

    def signed_in_before(self, request: web.Request) -> str | None:
        """The learner this browser was signed in as before this request (a class), or None.

        The token cookie is ``SameSite=Strict`` and so is not sent when a link is followed from
        another site; the ``who`` cookie (``Lax``, the learner's name in hex: no credential) is."""
        if self.users is None:
            return None
        name = self._learner_of(request.cookies.get(self.cookie))
        if name is None:
            try:
                name = bytes.fromhex(request.cookies.get(self.who_cookie, "")).decode("utf-8") or None
            except (ValueError, UnicodeDecodeError):
                name = None
        return name if name in self.users and name not in self.held else None

    def authorized(self, request: web.Request) -> bool:
        return self.learner(request) is not None

    @staticmethod
    def over_https(request: web.Request) -> bool:
        """The browser's request came over HTTPS: to serve directly, or to a proxy that says so."""
        forwarded = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
        return request.secure or forwarded == "https"

    def refused(self, request: web.Request) -> web.Response:
        page = REFUSED_CLASS if self.users is not None else REFUSED
        response = web.Response(status=403, text=page, content_type="text/html", charset="utf-8",
                                headers={**SECURITY_HEADERS, "Cache-Control": NO_STORE})
        if request.cookies.get(self.cookie):  # a stale cookie (another learner's, or revoked) goes
            response.del_cookie(self.cookie, path="/")
            response.del_cookie(self.who_cookie, path="/")
        return response

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        cross_origin = False
        origin = request.headers.get("Origin")
        if request.path.startswith("/ws"):
            cross_origin = bool(origin) and urlsplit(origin).netloc != request.host
        elif request.method == "POST":  # a form counts only when the browser says it was sent from this site
            if origin and origin != "null":
                cross_origin = urlsplit(origin).netloc != request.host
            else:  # no-referrer pages send Origin: null; Fetch Metadata still names the sender
                cross_origin = request.headers.get("Sec-Fetch-Site") != "same-origin"
        learner = None if cross_origin else self.learner(request)
        if learner is None:
            given = request.query.get("token") or request.headers.get("Authorization") or request.cookies.get(self.cookie)
            why = "来自别的网页" if cross_origin else "令牌不对" if given else "没有令牌"
            log.info("拒绝了一个请求（%s）：%s %s", why, request.method, printable(request.path))  # the path only, never the query
            return self.refused(request)
        request["learner"] = learner
        response = await handler(request)
        given = request.query.get("token")
        if request.path == "/" and given and not response.get("asks"):
            # the page's static files, websocket and downloads carry the token in this cookie
            response.set_cookie(self.cookie, given, httponly=True, samesite="Strict", path="/",
                                secure=self.over_https(request) or None)
            if self.users is not None:  # who this browser is, seen even when a link comes from another site
                response.set_cookie(self.who_cookie, learner.encode("utf-8").hex(), httponly=True, samesite="Lax",
                                    path="/", secure=self.over_https(request) or None)
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        cacheable = request.path.startswith(("/static/", "/favicon"))
        response.headers.setdefault("Cache-Control", STATIC_CACHE if cacheable else NO_STORE)
        return response

    def learner_env(self, learner: str) -> dict[str, str]:
        """What a learner's app gets over serve's environment: never a token."""
        env = dict(self.app_env)
        if self.users is not None:
            from torchcourse.paths import HOME_ENV
            from torchcourse.serve.users import learner_home

            home = learner_home(self.data_root, learner)
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            env.update({HOME_ENV: str(home), LEARNER_ENV: learner})
        return env

    def new_service(self, learner: str, size: tuple[int, int]) -> CourseAppService:
        service = CourseAppService(self.argv, download_manager=self.download_manager, size=size, learner=learner,
                                   env=self.learner_env(learner), groups=self.app_groups)
        self.sessions.add(service)
        return service

    # -- the routes -----------------------------------------------------------------------

    async def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.post("/", self.handle_index),
            web.get("/favicon.svg", self.handle_favicon),
            web.get("/favicon.ico", self.handle_favicon),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.get("/ws/{spare}", self.handle_websocket),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.get("/static/js/textual.js", self.handle_js),  # before /static: the patched bundle
            web.static("/static", self.statics_path, name="static"),
        ])
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def handle_index(self, request: web.Request) -> web.Response:
        size = _clamp(request.query.get("fontsize"), 16)
        learner = request["learner"]
        if request.method == "POST":  # 换成学员 …: the guard has set the cookies; the page loads without the token
            return web.Response(status=303, headers={"Location": "/"})
        before = self.signed_in_before(request) if request.query.get("token") else None
        if before is not None and before != learner:  # another learner's link: ask, and keep the cookie
            log.info("浏览器原是学员 %s，打开了学员 %s 的链接：先问", before, learner)
            response = web.Response(text=SWITCH_PAGE.format(before=html.escape(before), after=html.escape(learner),
                                                            token=html.escape(request.query["token"])),
                                    content_type="text/html", charset="utf-8")
            response["asks"] = True
            return response
        loop = asyncio.get_running_loop()
        now = loop.time()
        if learner:
            loads = self.page_loads.setdefault(learner, deque())
            while loads and now - loads[0] >= PAGE_WINDOW:
                loads.popleft()
            if len(loads) >= PAGE_BURST:
                raise web.HTTPTooManyRequests(text="页面刷新得太快：请稍等几秒再打开。")
            loads.append(now)
        while self.tickets:  # (made in order, each kept TICKET_WAIT: the expired ones are the first)
            oldest = next(iter(self.tickets))
            if self.tickets[oldest][1] >= now:
                break
            del self.tickets[oldest]
        # the page's websocket goes to /ws/<ticket>: the tab stays the learner whose link loaded
        # it, whatever cookie the browser holds by the time it connects
        spare = secrets.token_urlsafe(12)
        self.tickets[spare] = (learner, now + TICKET_WAIT)
        if ("delay" not in request.query and self.last_size is not None and len(self.spares) < MAX_SPARES
                and not self._may_start(learner)):
            # the app starts now, while the page loads, at the size of the learner's last tab (it
            # is resized if the page turns out different); a page that never connects lets it go
            service = self.new_service(learner, self.last_size)
            self.spares[spare] = service
            try:
                await service.start(*self.last_size)
            except ConnectionResetError:  # ended while it started (the learner's link revoked): none waits
                self.spares.pop(spare, None)
            loop.call_later(SPARE_WAIT, lambda: asyncio.ensure_future(self._let_go(spare)))
        return web.Response(text=page_html(self.title, min(size, 64), spare, learner), content_type="text/html",
                            charset="utf-8")

    async def _let_go(self, spare: str) -> None:
        service = self.spares.pop(spare, None)
        if service is not None:
            await service.stop()
            self.sessions.discard(service)

    async def handle_download(self, request: web.Request) -> web.StreamResponse:
        """A file an app offers goes only to the learner whose app it is (a class)."""
        try:
            owner = getattr(await self.download_manager._get_app_service(request.match_info["key"]), "learner", None)
        except (ValueError, KeyError):
            owner = None
        if owner is not None and owner != request["learner"]:
            raise web.HTTPNotFound(text="没有这个下载")
        return await super().handle_download(request)

    async def handle_favicon(self, request: web.Request) -> web.Response:
        return web.Response(body=(PAGE_DIR / "favicon.svg").read_bytes(), content_type="image/svg+xml")

    async def handle_js(self, request: web.Request) -> web.Response:
        return web.Response(body=self.js, content_type="application/javascript", charset="utf-8")

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService, learner: str = "") -> None:
        """textual-serve's loop over the page's messages, within what a learner may send (see
        :data:`MESSAGE_RATE`; one budget for all of a learner's pages: four tabs of 256 messages
        a second each made another learner's keys 1.2-1.4x slower): pages that send faster wait,
        unread, and only they."""
        from aiohttp import WSMsgType

        loop = asyncio.get_running_loop()
        budget = self.budgets.setdefault(learner, [float(MESSAGE_BURST), loop.time()])
        async for message in websocket:
            if message.type == WSMsgType.BINARY:  # the page sends text only: 100,000 binary frames a
                await websocket.close(code=1003)  # second went by uncounted, parsed on the event loop
                return
            now = loop.time()
            size = len(message.data) if isinstance(message.data, (str, bytes)) else 0
            credit = min(float(MESSAGE_BURST), budget[0] + (now - budget[1]) * MESSAGE_RATE) - max(size, MESSAGE_COST)
            budget[:] = [credit, now]
            if credit < 0:
                await asyncio.sleep(-credit / MESSAGE_RATE)
            if message.type == WSMsgType.PING:  # (charged above; a page's script cannot send one)
                await websocket.pong(message.data)
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = message.json()
                kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            except (ValueError, TypeError, IndexError, KeyError):
                continue  # not a message of the page's: ignored
            if kind == "stdin" and isinstance(data, str):
                if data:  # an empty data packet is the end of input to Textual's web driver: no key after it arrived
                    await app_service.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                await app_service.set_terminal_size(data.get("width"), data.get("height"))
            elif kind == "ping" and isinstance(data, (str, int, float)) and len(str(data)) <= MAX_PING:
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        # autoping off: aiohttp answered PING frames (and dropped PONGs) inside receive(), before the
        # message budget saw them — 4 tabs flooding pings made serve 91-97 % busy and another
        # learner's keys 8.6x slower; they come to _process_messages and are charged like any message
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE, autoping=False)
        width = _clamp(request.query.get("width"), 80)
        height = _clamp(request.query.get("height"), 24)
        spare = request.match_info.get("spare", "")
        learner = request["learner"]  # the credential the websocket carries decides, alone
        owner, until = self.tickets.pop(spare, (learner, float("inf")))
        service = self.spares.pop(spare, None)
        if owner != learner and until >= asyncio.get_running_loop().time():
            # a page loaded as one learner, its websocket carrying another's credential: someone
            # else's page id (a leaked page) or a browser switched in between. Neither runs: the
            # page says the browser is someone else's now and offers to reopen as them
            if service is not None:
                await service.stop()
                self.sessions.discard(service)
            log.info("学员 %s 的页面带着学员 %s 的凭据连接：拒绝", owner, learner)
            await websocket.prepare(request)
            await websocket.close(code=OTHER_LEARNER_CLOSE)
            return websocket
        wait = self._may_start(learner) if service is None else 0.0
        if wait and self.waiting.get(learner, 0) >= MAX_WAITING:
            now = asyncio.get_running_loop().time()
            if now - self.refusals_logged.get(learner, -START_WINDOW) >= START_WINDOW:  # (one line per window, not per refusal)
                self.refusals_logged[learner] = now
                log.info("学员 %s 已有 %d 个会话在等待启动：又来的一律拒绝（429）", learner, MAX_WAITING)
            raise web.HTTPTooManyRequests(text="同时打开的页面太多：请关掉几个标签页，稍等几秒再刷新。")
        self.last_size = (width, height)
        await websocket.prepare(request)
        if wait and not await self._paced(learner, request, wait):
            return websocket
        try:
            if service is None:
                service = self.new_service(learner, (width, height))
                await service.attach(websocket)
                await service.start(width, height)
            else:
                service.attached_early = True
                await service.attach(websocket)
                if service.size != (width, height):
                    await service.set_terminal_size(width, height)
            await self._cap_sessions(learner, service)
            early = "（页面加载时已启动）" if service.attached_early else ""
            who = f"：学员 {learner}" if learner else ""
            log.info("打开了一个会话（pid %s；现在 %d 个）%s%s", service.pid, len(self.sessions), early, who)
            await self._process_messages(websocket, service, learner or "")
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # a broken browser message: end this session, keep serving
            log.warning("一个会话出错，已结束它：%s", type(exc).__name__)
        finally:
            if service is not None:
                await self._end(service, websocket)
        return websocket

    def _may_start(self, learner: str) -> float:
        """0.0 when ``learner`` may start an app process now (it is counted), else the seconds to
        wait. Only a class's learners are paced (a lone learner's serve is theirs alone)."""
        if not learner:
            return 0.0
        now = asyncio.get_running_loop().time()
        recent = [t for t in self.starts.get(learner, ()) if now - t < START_WINDOW]
        if len(recent) < START_BURST:
            self.starts[learner] = [*recent, now]
            return 0.0
        self.starts[learner] = recent
        return START_WINDOW - (now - recent[0]) + 0.01

    async def _paced(self, learner: str, request: web.Request, wait: float) -> bool:
        """Wait until ``learner`` may start an app (see START_BURST); False: the client left."""
        log.info("学员 %s 在 %d 秒内已启动 %d 个会话：下一个等 %.1f 秒再启动", learner, int(START_WINDOW), START_BURST, wait)
        self.waiting[learner] = self.waiting.get(learner, 0) + 1
        try:
            while wait:
                await asyncio.sleep(wait)
                if request.transport is None or request.transport.is_closing():
                    return False
                wait = self._may_start(learner)
            return True
        finally:
            self.waiting[learner] -= 1

    async def _cap_sessions(self, learner: str, service: CourseAppService) -> None:
        """At most MAX_SESSIONS_PER_LEARNER open sessions per learner: the oldest ones end (their
        place is saved, as when a tab closes). Pages waiting for their websocket do not count."""
        service.opened_at = asyncio.get_running_loop().time()
        waiting = set(self.spares.values())
        mine = sorted((s for s in self.sessions if getattr(s, "learner", "") == learner and s not in waiting),
                      key=lambda s: getattr(s, "opened_at", 0.0))
        for old in mine[: max(0, len(mine) - MAX_SESSIONS_PER_LEARNER)]:
            if old is not service:
                log.info("学员 %s 的会话超过 %d 个，结束最早的一个（pid %s）", learner or "-", MAX_SESSIONS_PER_LEARNER, old.pid)
                asyncio.ensure_future(old.stop())

    async def _end(self, service: CourseAppService, websocket: web.WebSocketResponse) -> None:
        await service.stop()
        self.sessions.discard(service)
        code = service._process.returncode if service._process is not None else None
        log.info("结束了一个会话（pid %s，退出码 %s；还有 %d 个）", service.pid, code, len(self.sessions))
        if not websocket.closed:
            await websocket.close()

    async def stop_sessions(self) -> None:
        await asyncio.gather(*(s.stop() for s in list(self.sessions)), return_exceptions=True)

    async def on_shutdown(self, app: web.Application) -> None:
        await self.stop_sessions()

    # -- running ----------------------------------------------------------------------------

    def make_site(self, runner: web.AppRunner):
        """Where the server listens: host and port (``serve --hub`` listens on a Unix socket)."""
        return web.TCPSite(runner, self.host, self.port)

    def bound_port(self, site) -> int:
        return site._server.sockets[0].getsockname()[1]  # the real one when --port 0

    async def run(self, ready) -> int:
        """Serve until SIGINT/SIGTERM/SIGHUP; ``ready(port)`` is called once the port is bound."""
        from torchcourse.serve.limits import HEAD_WAIT, ConnectionCap

        runner = web.AppRunner(await self.make_app(), access_log=None, handle_signals=False,
                               keepalive_timeout=HEAD_WAIT)  # also the wait for a request's head
        await runner.setup()
        ConnectionCap(runner.server)
        site = self.make_site(runner)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            import errno

            why = {errno.EADDRINUSE: "端口已被占用（换一个 --port，或用 --port 0 让系统挑一个空闲的）",
                   errno.EACCES: "没有权限（1024 以下的端口要管理员权限）",
                   errno.EADDRNOTAVAIL: "这台电脑没有这个地址"}.get(exc.errno, str(exc))
            print(f"torchcourse serve: 无法监听 {self.host}:{self.port}：{why}", file=sys.stderr)
            return 1
        port = self.bound_port(site)
        self.port = port
        self.cookie = f"torchcourse_token_{port}"
        self.who_cookie = f"torchcourse_who_{port}"
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            try:
                loop.add_signal_handler(getattr(signal, name), stop.set)
            except (AttributeError, NotImplementedError, RuntimeError):  # no such signal here (Windows)
                pass
        watcher = None
        if self.users_path is not None:  # a class: SIGHUP and a changed file reread the users file
            try:
                loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(self.reload_users()))
            except (AttributeError, NotImplementedError, RuntimeError):
                pass
            watcher = asyncio.ensure_future(self.watch_users())
        ready(port)
        try:
            await stop.wait()
        finally:
            if watcher is not None:
                watcher.cancel()
            n = len(self.sessions)
            try:  # bounded: a session that will not end never keeps serve running
                await asyncio.wait_for(self.stop_sessions(), STOP_WAIT)
            except TimeoutError:
                for s in list(self.sessions):
                    if s._process is not None and s._process.returncode is None:
                        try:
                            os.killpg(s._process.pid, signal.SIGKILL)
                        except (ProcessLookupError, PermissionError):
                            pass
            try:
                await asyncio.wait_for(runner.cleanup(), 10.0)
            except TimeoutError:
                pass
            self.app_groups.close()
            print(f"torchcourse serve: 已停止（结束了 {n} 个会话，进度都已保存）。", flush=True)
        return 0
