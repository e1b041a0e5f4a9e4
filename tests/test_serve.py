"""``torchcourse serve`` over plain HTTP and websockets (no browser): the real server process."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from serve_support import DEADLINE, FIXTURE, REPO, Served, alive, get, serve, tc, wait_for  # noqa: F401 (serve is a fixture)

TOKEN_ENV = "TORCHCOURSE_TOKEN"


def test_every_route_refuses_a_request_without_the_token(serve):
    from torchcourse import paths
    from torchcourse.course import load_course

    title = load_course(paths.shipped_content_dir()).title
    served = serve()
    assert served.base.startswith("http://127.0.0.1:")  # loopback unless told otherwise
    assert len(served.token) >= 24
    for path in ("", "ws", "static/css/xterm.css", "static/js/textual.js", "download/abc", "favicon.svg", "nothing"):
        status, headers, body = get(served.base + path)
        assert status == 403, path
        assert "需要访问令牌" in body and headers["Content-Type"].startswith("text/html")
        wrong = served.token[:-1] + ("y" if served.token.endswith("x") else "x")  # (a token may end in x)
        assert get(served.base + path + "?token=" + wrong)[0] == 403, path  # a wrong one

    status, headers, page = get(served.url)
    assert status == 200
    assert f"<title>{title}</title>" in page and title in page.split("<body>", 1)[1]
    # nothing of the server: no command line, path, interpreter, environment variable or host
    for leak in (sys.executable, str(REPO), str(served.home), "site-packages", "python", "-m torchcourse",
                 "TEXTUAL", TOKEN_ENV, "TORCHCOURSE_HOME", served.token, "127.0.0.1", "googleapis"):
        assert leak not in page, leak
    assert "正在打开教程" in page and "重新打开" in page  # the landing and closed cards speak Chinese
    assert headers["Referrer-Policy"] == "no-referrer"

    cookie = headers["Set-Cookie"].split(";", 1)[0]
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    status, headers, js = get(served.base + "static/js/textual.js", {"Cookie": cookie})  # as the page asks
    assert status == 200
    assert "'Noto Sans Mono CJK SC'" in js and "'Noto Color Emoji'" in js and "'Apple Color Emoji'" in js
    assert js.index("'Roboto Mono'") < js.index("'Noto Sans Mono CJK SC'") < js.index("'Noto Color Emoji'")
    status, headers, icon = get(served.base + "favicon.svg", {"Authorization": f"token {served.token}"})
    assert status == 200 and headers["Content-Type"].startswith("image/svg+xml") and "<svg" in icon

    log = served.log()
    assert log.count(served.token) == 1, log  # the printed URL only: no request reaches the log with it
    assert re.search(r"拒绝了一个请求（没有令牌）：GET /static/css/xterm.css\n", log)


def test_a_host_beyond_this_machine_needs_a_token_from_the_environment(tmp_path, serve):
    r = tc("serve", "--host", "0.0.0.0", home=tmp_path)
    assert r.returncode == 2
    assert "TORCHCOURSE_TOKEN" in r.stderr and "任何人" in r.stderr and "Traceback" not in r.stderr
    assert tc("serve", "--host", "192.168.1.7", home=tmp_path).returncode == 2
    r = tc("serve", "--host", "0.0.0.0", env={TOKEN_ENV: "short"}, home=tmp_path)
    assert r.returncode == 2 and "至少 16 个字符" in r.stderr

    token = "a-token-the-operator-chose-0123"
    served = serve("--content", str(FIXTURE), env={TOKEN_ENV: token})
    assert served.token == f"${TOKEN_ENV}"  # printed by name, never by value
    assert token not in served.log()
    assert get(served.base + f"?token={token}")[0] == 200
    assert get(served.base)[0] == 403


def test_ctrl_c_ends_every_app_it_started_and_no_app_sees_the_token(serve):
    import aiohttp

    token = "a-token-the-operator-chose-0123"
    served = serve("--content", str(FIXTURE), env={TOKEN_ENV: token})
    ws_url = served.base.replace("http://", "ws://") + "ws?width=100&height=30"
    served.token = token

    async def connect() -> None:
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:  # a page of another site
                await http.ws_connect(ws_url, headers={"Authorization": f"token {token}", "Origin": "http://evil.example"})
            assert refused.value.status == 403
            sockets = [await http.ws_connect(ws_url, headers={"Authorization": f"token {token}"}) for _ in range(2)]
            for ws in sockets:  # each app draws its first frame: the course's title
                seen = b""
                while "测试课程".encode() not in seen:
                    msg = await asyncio.wait_for(ws.receive(), 180)
                    assert msg.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), msg
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        seen += msg.data
            pids = served.session_pids()
            assert len(pids) == 2
            for pid in pids:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                assert not any(e.startswith(TOKEN_ENV.encode() + b"=") for e in environ)  # a snippet cannot print it
                assert any(e.startswith(b"TEXTUAL_DRIVER=") for e in environ)
            assert served.interrupt() == 0  # Ctrl+C while both tabs are open
            for ws in sockets:
                await ws.close()

    asyncio.run(connect())
    for pid in served.session_pids():
        wait_for(lambda: not alive(pid), f"app {pid} ended")
    assert "已停止（结束了 2 个会话" in served.log()
    assert token not in served.log()


def test_keys_a_browser_keeps_for_itself_are_not_in_the_course_key_map():
    from torchcourse.tui import keys

    taken = {"ctrl+w", "ctrl+t", "ctrl+n", "ctrl+shift+w", "ctrl+shift+t", "ctrl+shift+n", "ctrl+tab",
             "ctrl+shift+tab", "ctrl+q", "ctrl+shift+q", "ctrl+l", "f11", "f12", "ctrl+pageup", "ctrl+pagedown"}
    used = {name.strip() for k in keys.KEYS for name in k.key.split(",")}
    assert used & taken == set()
    assert {"question_mark", "ctrl+p"} <= used  # ? and Ctrl+P work in the page (test_serve_browser)


def test_doctor_says_whether_serve_will_work():
    from torchcourse.serve.cli import checks

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        lines = [line for _ok, line in checks(port)]
        assert all(ok for ok, _line in checks(port))
        assert any("textual-serve 1.1.3" in line and f"端口 {port} 已被占用" in line for line in lines), lines
    assert any(f"端口 {port} 空闲" in line for _ok, line in checks(port))


def test_the_host_rule():
    from torchcourse.serve.access import AccessError, choose_token, is_loopback

    assert all(is_loopback(h) for h in ("localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.7", "example.org", "10.0.0.1"))
    a, from_env = choose_token("127.0.0.1", {})
    b, _ = choose_token("127.0.0.1", {})
    assert a != b and not from_env and len(a) >= 24  # fresh on every start
    assert choose_token("0.0.0.0", {TOKEN_ENV: "x" * 16}) == ("x" * 16, True)
    with pytest.raises(AccessError):
        choose_token("0.0.0.0", {})
    with pytest.raises(AccessError):
        choose_token("127.0.0.1", {TOKEN_ENV: "with a space in it"})


def test_a_port_that_cannot_be_served_is_said_plainly(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        r = tc("--content", str(FIXTURE), "serve", "--port", str(busy.getsockname()[1]), home=tmp_path)
    assert r.returncode == 1 and "端口已被占用" in r.stderr and "Traceback" not in r.stderr
    r = tc("serve", "--port", "70000", home=tmp_path)
    assert r.returncode == 2 and "0 到 65535" in r.stderr


class TestARefusedPathCannotWriteTheLog:
    """serve logs the path of each request it refuses, decoded: ``%0A`` in a path made a line of the
    log that passed for serve's own, and ``%1B`` sequences retitled and erased the teacher's
    terminal — with no token at all. Control characters reach the log escaped, on the one line."""

    def test_a_newline_and_escape_sequences_stay_on_one_escaped_line(self, serve):
        served = serve()
        forged = "torchcourse serve: 学员 alice 的令牌是 FORGED"
        path = "/x" + quote("\n" + forged + "\x1b]0;PWNED\x07\x1b[2K" + "y" * 400)
        host, port = served.base.split("//")[1].rstrip("/").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            assert s.recv(100).startswith(b"HTTP/1.1 403")
        line = wait_for(lambda: next((ln for ln in served.log().splitlines() if "拒绝了一个请求" in ln and "/x" in ln), None),
                        "the refusal is logged")
        assert "\x1b" not in served.log() and "\x07" not in served.log()
        assert not any(ln.startswith(forged) for ln in served.log().splitlines())
        assert "/x\\ntorchcourse serve: 学员 alice 的令牌是 FORGED\\x1b]0;PWNED\\x07\\x1b[2K" in line, line
        assert len(line) < 300, line


class TestAHugeTerminalFromADroppedClient:
    """The red team's M2: a websocket asks for 3000-cell terminals, reads none of the frames and
    drops while the app is blocked writing one. The size is clamped, the app still ends as a closed
    terminal does (not killed: a frame nobody reads must not block it), and serve stops at once on
    SIGTERM."""

    def test_the_session_ends_and_serve_stops_on_sigterm(self, serve):
        import signal
        import time

        import aiohttp

        token = "a-token-the-operator-chose-0123"
        served = serve("--content", str(FIXTURE), env={TOKEN_ENV: token})
        ws_url = served.base.replace("http://", "ws://") + "ws?width=100&height=30"

        def blocked_writing(pid: int) -> bool:
            try:
                return any("pipe_write" in Path(f"/proc/{pid}/task/{t}/wchan").read_text() for t in os.listdir(f"/proc/{pid}/task"))
            except OSError:
                return False

        async def attack() -> None:
            async with aiohttp.ClientSession() as http:
                ws = await http.ws_connect(ws_url, headers={"Authorization": f"token {token}"}, max_msg_size=1 << 20)
                seen = b""
                while "测试课程".encode() not in seen:
                    msg = await asyncio.wait_for(ws.receive(), 180)
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        seen += msg.data
                pid = served.session_pids()[-1]
                # huge frames, none read: the socket fills, serve's send waits, and the app ends up
                # blocked writing its next frame into a pipe nobody empties
                end = time.monotonic() + DEADLINE
                n = 0
                while not blocked_writing(pid):
                    assert time.monotonic() < end, "the app never blocked writing a frame"
                    await ws.send_str(f'["resize", {{"width": {3000 - n % 2}, "height": {499 + n % 2}}}]')
                    await asyncio.sleep(0.2)  # a frame's time; the state, not the time, ends the loop
                    n += 1
                ws._response.connection.transport.abort()  # gone without a goodbye, mid-frame

        asyncio.run(attack())
        wait_for(lambda: "结束了一个会话" in served.log(), "the dropped session ended", state=served.log)  # the one deadline policy
        assert "强制结束" not in served.log(), served.log()  # it ended on SIGHUP, its place saved
        served.proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        served.proc.wait(timeout=60)
        assert time.monotonic() - start < 30
        assert "已停止" in served.log()


class TestASessionEndedWhileItsAppStartsLeavesNoApp:
    """The per-learner cap can end a learner's oldest session while its app is still being made:
    stop() found no process yet, the session counted as ended, and the app made a moment later
    outlived it and serve itself (a root process holding the learner's progress). The real
    session class and a real process."""

    @staticmethod
    def service_and_finder():
        import secrets

        from textual_serve.download_manager import DownloadManager

        from torchcourse.serve.server import CourseAppService

        mark = secrets.token_hex(8)

        def apps() -> list[int]:
            out = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if f"TC_TEST_MARK={mark}".encode() in Path(f"/proc/{pid}/environ").read_bytes():
                        out.append(int(pid))
                except OSError:
                    continue
            return out

        service = CourseAppService([sys.executable, "-c", "import time; time.sleep(600)"], download_manager=DownloadManager(),
                                   size=(80, 24), env={"TC_TEST_MARK": mark})
        return service, apps

    def test_stop_during_the_start_ends_the_app_once_it_is_made(self):
        service, apps = self.service_and_finder()

        async def body() -> None:
            start = asyncio.ensure_future(service.start(80, 24))
            end = time.monotonic() + DEADLINE
            while not apps():  # the process is made; its start waits for its pipes
                assert time.monotonic() < end, "the app was never made"
                await asyncio.sleep(0)
            assert not start.done()
            await service.stop()
            try:
                await start
            except Exception:  # noqa: BLE001 - a start that lost the race may say so
                pass
            await service.stop()  # the session's own end, later: stop() is done once

        try:
            asyncio.run(body())
            assert apps() == [], "the app outlived its session"
        finally:
            for pid in apps():
                os.kill(pid, 9)

    def test_a_session_ended_before_its_start_makes_no_app(self):
        service, apps = self.service_and_finder()

        async def body() -> None:
            await service.stop()
            with pytest.raises(ConnectionResetError):
                await service.start(80, 24)

        try:
            asyncio.run(body())
            assert apps() == []
        finally:
            for pid in apps():
                os.kill(pid, 9)


class TestOneAddressCannotHoldTheServer:
    """Connections that never send a request, from one address, up to the cap and past it: the
    newcomer takes the place of the oldest one (closed by serve), a learner on another address is
    served meanwhile, every header-less connection is closed after the head wait, and nothing of
    it fills serve's log."""

    def test_a_newcomer_takes_the_place_of_a_connection_that_sends_nothing(self, serve):
        from torchcourse.serve.limits import HEAD_WAIT, MAX_CONNECTIONS_PER_ADDRESS

        token = "a-token-the-operator-chose-0123"
        served = serve("--content", str(FIXTURE), env={TOKEN_ENV: token})
        host, port = re.match(r"http://([^:/]+):(\d+)/", served.base).groups()
        request = f"GET /?token={token} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode()

        def fetch(source: str = "127.0.0.1") -> bytes:
            s = socket.create_connection((host, int(port)), timeout=DEADLINE, source_address=(source, 0))
            s.sendall(request)
            page = b""
            while chunk := s.recv(65536):
                page += chunk
            s.close()
            return page

        held = [socket.create_connection((host, int(port)), timeout=DEADLINE) for _ in range(MAX_CONNECTIONS_PER_ADDRESS)]
        try:
            for _ in range(3):  # each newcomer is served; the oldest silent ones make room
                page = fetch()
                assert page.startswith(b"HTTP/1.1 200"), page[:200]
            for s in held[:3]:
                assert s.recv(1) == b""  # closed by serve
            # another address (all of 127/8 is this machine) is a learner the cap does not touch
            assert fetch("127.0.0.2").startswith(b"HTTP/1.1 200")
            for s in held[3:]:  # serve closes each after the head wait: recv sees the end, no timeout
                s.settimeout(HEAD_WAIT + DEADLINE)
                assert s.recv(1) == b""
        finally:
            for s in held:
                s.close()
        assert "Traceback" not in served.log(), served.log()[-2000:]


class TestAResponseNobodyReadsGivesWayToANewcomer:
    """A request whose response its client never reads, larger than the kernel's buffers, stays a
    running request (its write waits forever): 256 such requests would fill an address's cap and
    every other client there would get 503. At the cap, the oldest connection whose writing is paused is closed for
    the newcomer (a real aiohttp server, serve's own ConnectionCap, a cap of 3)."""

    def test_the_newcomer_is_served_and_a_stalled_reader_is_closed(self):
        from aiohttp import web

        from torchcourse.serve.limits import ConnectionCap

        async def body() -> None:
            async def big(request):
                return web.Response(body=b"x" * (8 << 20))

            async def hello(request):
                return web.Response(text="hello")

            app = web.Application()
            app.router.add_get("/big", big)
            app.router.add_get("/", hello)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            cap = ConnectionCap(runner.server, limit=3)
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]
            stalled = []
            for _ in range(3):  # each asks for 8 MB and reads none of it
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect(("127.0.0.1", port))
                sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
                stalled.append(sock)
            end = time.monotonic() + DEADLINE
            while sum(getattr(h, "writing_paused", False) for h in cap._address_of) < 3:
                assert time.monotonic() < end, "the responses never filled the buffers"
                await asyncio.sleep(0.01)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = await asyncio.wait_for(reader.read(), DEADLINE)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"hello"), answer[:200]
            assert sum(1 for _ in cap._address_of) == 2  # the oldest stalled one was closed for it
            for sock in stalled:
                sock.close()
            await runner.cleanup()

        asyncio.run(body())


class TestTheCapAnswers503OnlyWhenEveryConnectionIsBusy:
    """The cap on a real aiohttp server (serve's own ConnectionCap, a cap of 3): connections running
    a request are never closed for a newcomer; the newcomer gets 503, read by no handler, and no
    traceback is logged for it (one per refusal filled 17 MB of log in 45 s)."""

    def test_busy_connections_keep_their_place_and_the_next_is_refused(self, caplog):
        import logging

        from aiohttp import web

        from torchcourse.serve.limits import ConnectionCap

        async def body() -> None:
            release = asyncio.Event()
            started = []

            async def slow(request):
                started.append(1)
                await release.wait()
                return web.Response(text="done")

            app = web.Application()
            app.router.add_get("/", slow)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            ConnectionCap(runner.server, limit=3)
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]
            busy = []
            for _ in range(3):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                await writer.drain()
                busy.append((reader, writer))
            end = time.monotonic() + DEADLINE
            while len(started) < 3:  # every connection runs its request
                assert time.monotonic() < end, "the requests never started"
                await asyncio.sleep(0)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            answer = await asyncio.wait_for(reader.read(), DEADLINE)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 503") and "连接太多".encode() in answer, answer
            release.set()
            for reader, writer in busy:
                reply = await asyncio.wait_for(reader.readuntil(b"done"), DEADLINE)
                assert reply.startswith(b"HTTP/1.1 200")
                writer.close()
            await runner.cleanup()

        with caplog.at_level(logging.DEBUG):
            asyncio.run(body())
        assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()], caplog.text
