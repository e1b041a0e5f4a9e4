"""``torchcourse serve --users``: a class on one machine, each learner with their own progress.

The real server process, real websockets (textual-serve's protocol: ``["stdin", keys]`` in, the
terminal stream out), real app processes and their real SQLite stores. Every wait is for a state.
"""

from __future__ import annotations

import asyncio
import os
import sys
import json
import re
import stat
import urllib.parse
from pathlib import Path

import pytest

from serve_support import DEADLINE, FIXTURE, ScreenModel, Served, alive, cmdline, descendants, get, serve, tc, wait_for  # noqa: F401 (fixture)
from torchcourse.course.loader import course_id_of
from torchcourse.progress import open_store

TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdefgh"}
FIXTURE_TITLE = "测试课程：拆开一个小盒子"


def users_file(tmp_path: Path, users: dict[str, str] = TOKENS) -> Path:
    path = tmp_path / "class.toml"
    path.write_text("".join(f'{n} = "{t}"\n' for n, t in users.items()), encoding="utf-8")
    path.chmod(0o600)
    return path


def start_class(serve, tmp_path: Path, users: dict[str, str] = TOKENS) -> tuple[Served, Path]:
    path = users_file(tmp_path, users)
    served = serve("--content", str(FIXTURE), serve_args=("--users", str(path)))
    return served, tmp_path / "class-data"


def store_of(data_root: Path, name: str):
    db = data_root / name / "data" / "progress.sqlite3"
    store, _ = open_store(db, course_id=course_id_of(FIXTURE))
    return store


class Learner:
    """One browser tab, spoken to as the page does: keys in, the screen rebuilt from the stream."""

    def __init__(self, http, served: Served, token: str | None = None, path: str = "ws", cookie: str | None = None,
                 autoping: bool = True):
        self.http, self.served, self.token, self.path, self.cookie = http, served, token, path, cookie
        self.autoping = autoping
        self.screen = ScreenModel(110, 30)
        self.ws = None

    async def open(self) -> "Learner":
        headers = {}
        if self.token:
            headers["Authorization"] = f"token {self.token}"
        if self.cookie:
            headers["Cookie"] = self.cookie
        url = self.served.base.replace("http://", "ws://") + self.path + "?width=110&height=30"
        self.ws = await self.http.ws_connect(url, headers=headers, autoping=self.autoping)
        return self

    async def wait_text(self, needle: str) -> str:
        import aiohttp

        loop = asyncio.get_running_loop()
        end = loop.time() + DEADLINE
        while needle not in self.screen.text():
            if loop.time() > end:
                raise AssertionError(f"{needle!r} never appeared; the page shows:\n{self.screen.text()}")
            try:
                msg = await asyncio.wait_for(self.ws.receive(), max(0.1, end - loop.time()))
            except TimeoutError:
                continue  # the deadline check above says what the page shows
            if msg.type == aiohttp.WSMsgType.BINARY:
                self.screen.feed(msg.data)
            elif msg.type != aiohttp.WSMsgType.TEXT:
                raise AssertionError(f"the websocket ended ({msg.type}) before {needle!r}:\n{self.screen.text()}")
        return self.screen.text()

    async def settle(self, quiet: float = 0.5) -> None:
        """Until no frame arrives for ``quiet`` seconds (the app drew what the last key changed)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        end = loop.time() + DEADLINE
        while loop.time() < end:
            try:
                msg = await asyncio.wait_for(self.ws.receive(), quiet)
            except TimeoutError:
                return
            if msg.type == aiohttp.WSMsgType.BINARY:
                self.screen.feed(msg.data)
            elif msg.type != aiohttp.WSMsgType.TEXT:
                raise AssertionError(f"the websocket ended ({msg.type}):\n{self.screen.text()}")

    async def tab(self, times: int = 1) -> None:
        """Tab to the next snippet, one key at a time, each drawn before the next."""
        await self.settle()
        for _ in range(times):
            await self.press("\t")
            await self.settle()

    async def press(self, keys: str) -> None:
        await self.ws.send_str(json.dumps(["stdin", keys]))

    async def close(self) -> None:
        await self.ws.close()


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode(errors="replace").split("=", 1) for e in raw if b"=" in e)


# -- the users file ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, line, words", [
    ('alice = "alice-token-0123456789"\nbob = "bob-token-0123456789ab"\nalice = "other-token-0123456789"\n', 3,
     "学员 'alice' 重复了（第 1 行"),
    ('alice = "short"\n', 1, "令牌太短（5 个字符，至少 16 个）"),
    ('"../etc" = "alice-token-0123456789"\n', 1, "不能以 '.' 开头"),
    ('"a/b" = "alice-token-0123456789"\n', 1, "不能放进目录名的字符 '/'"),
    ('alice = "same-token-0123456789"\n\nbob = "same-token-0123456789"\n', 3, "和 'alice' 的一样"),
    ('alice = 12345678901234567890\n', 1, "带引号的字符串"),
    ('alice = "unterminated\n', 1, "不是合法的 TOML"),
    ('# nobody yet\n', 1, "学员名单是空的"),
    ('[alice]\ntoken = "alice-token-0123456789"\n', 1, "是一个表"),
])
def test_a_bad_users_file_is_named_with_its_line(tmp_path, text, line, words):
    path = tmp_path / "class.toml"
    path.write_text(text, encoding="utf-8")
    r = tc("serve", "--users", str(path), home=tmp_path / "home")
    assert r.returncode == 2, r.stderr
    assert f"{path}:{line}: " in r.stderr and words in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "class-data").exists()  # nothing was started or created


def test_a_missing_users_file_says_how_to_make_one(tmp_path):
    r = tc("serve", "--users", str(tmp_path / "nope.toml"), home=tmp_path)
    assert r.returncode == 2 and "没有这个文件或目录" in r.stderr and "--add-user" in r.stderr
    assert "Traceback" not in r.stderr
    r = tc("serve", "--add-user", "alice", home=tmp_path)
    assert r.returncode == 2 and "--users" in r.stderr


def test_add_user_round_trip(tmp_path, serve):
    path = tmp_path / "class.toml"
    r = tc("serve", "--add-user", "alice", "--users", str(path), home=tmp_path / "h")
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # only the teacher reads the tokens
    alice = re.search(r"http://127\.0\.0\.1:8000/\?token=(\S+)", r.stdout).group(1)
    r = tc("serve", "--add-user", "张三", "--users", str(path), "--host", "0.0.0.0", "--port", "9000", home=tmp_path / "h")
    assert r.returncode == 0, r.stderr
    assert "http://本机的地址:9000/?token=" in r.stdout
    zhang = r.stdout.rsplit("?token=", 1)[1].strip()
    assert len(alice) >= 16 and len(zhang) >= 16 and alice != zhang

    from torchcourse.serve.users import load_users

    assert load_users(path) == {"alice": alice, "张三": zhang}
    r = tc("serve", "--add-user", "alice", "--users", str(path), home=tmp_path / "h")
    assert r.returncode == 2 and f"{path}:2: 学员 'alice' 已经在名单里了" in r.stderr
    r = tc("serve", "--add-user", "../x", "--users", str(path), home=tmp_path / "h")
    assert r.returncode == 2 and "不能以 '.' 开头" in r.stderr
    assert load_users(path) == {"alice": alice, "张三": zhang}  # a refused add changes nothing

    served = serve("--content", str(FIXTURE), serve_args=("--users", str(path)))
    status, _h, page = get(served.base + f"?token={zhang}")
    assert status == 200 and "学员：张三" in page and f"<title>{FIXTURE_TITLE} · 张三</title>" in page
    status, _h, page = get(served.base + f"?token={alice}")
    assert status == 200 and "学员：alice" in page and "张三" not in page
    assert alice not in served.log() and zhang not in served.log()


def test_a_class_refuses_to_start_without_the_sandbox_and_says_why(tmp_path):
    path = users_file(tmp_path)
    empty = tmp_path / "bin"
    empty.mkdir()
    r = tc("--content", str(FIXTURE), "serve", "--users", str(path), home=tmp_path / "h", env={"PATH": str(empty)})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "沙箱" in r.stderr and "apt-get install bubblewrap" in r.stderr and "Traceback" not in r.stderr


def test_a_class_may_listen_beyond_this_machine(tmp_path, serve):
    path = users_file(tmp_path)
    served = serve("--content", str(FIXTURE), serve_args=("--users", str(path), "--host", "0.0.0.0"))
    assert "本机的地址" in served.log() and "课堂 2 个学员" in served.log()
    port = served.base.rsplit(":", 1)[1].strip("/")
    assert get(f"http://127.0.0.1:{port}/")[0] == 403
    assert get(f"http://127.0.0.1:{port}/?token={TOKENS['bob']}")[0] == 200
    from serve_support import cmdline, descendants

    service = [p for p in descendants(served.proc.pid) if "torchcourse.runner.classroom" in cmdline(p)]
    assert len(service) == 1  # the class's one runner, started with serve
    assert served.interrupt() == 0  # Ctrl+C ends it with serve
    wait_for(lambda: not alive(service[0]), "the class runner ended with serve")


class TestAClassNamesTheKernelLimitsOneLearnerCouldUseUp:
    """fs.file-max is one table for the whole machine and each run may hold up to ~250,000 files
    before the sandbox stops it: a table smaller than every slot's share together could still be
    filled (another learner's run would hang, the host's programs open no file); serve says so,
    with the command. A nonzero pipe-user-pages-hard turns the uid's pipe pages into failures."""

    @staticmethod
    def sysctls(tmp_path, file_max: str, pipe_hard: str = "0") -> str:
        (tmp_path / "fs").mkdir(parents=True)
        (tmp_path / "fs" / "file-max").write_text(file_max + "\n")
        (tmp_path / "fs" / "pipe-user-pages-hard").write_text(pipe_hard + "\n")
        return str(tmp_path)

    def test_a_low_file_max_and_a_hard_pipe_limit_are_named_with_the_fix(self, tmp_path):
        from torchcourse.serve.classroom import kernel_limit_warnings

        warnings = kernel_limit_warnings(2, self.sysctls(tmp_path, "300000", "1024"))
        assert len(warnings) == 2
        assert "fs.file-max 只有 300000" in warnings[0] and "至少 1000000" in warnings[0] and "sysctl -w fs.file-max=9223372036854775807" in warnings[0]
        assert "fs.pipe-user-pages-hard 是 1024" in warnings[1] and "sysctl -w fs.pipe-user-pages-hard=0" in warnings[1]

    def test_crashes_piped_to_a_program_are_named_with_the_fix(self, tmp_path):
        from torchcourse.serve.classroom import kernel_limit_warnings

        sysctls = self.sysctls(tmp_path, "9223372036854775807")
        (tmp_path / "kernel").mkdir()
        (tmp_path / "kernel" / "core_pattern").write_text("|/usr/lib/systemd/systemd-coredump %P %u %g %s %t %c %h\n")
        warnings = kernel_limit_warnings(2, sysctls)
        assert len(warnings) == 1, warnings
        assert "/usr/lib/systemd/systemd-coredump" in warnings[0] and "sysctl -w kernel.core_pattern=core" in warnings[0]
        (tmp_path / "kernel" / "core_pattern").write_text("core\n")
        assert kernel_limit_warnings(2, sysctls) == []

    def test_a_machine_set_up_for_a_class_gets_no_warning(self, tmp_path):
        from torchcourse.serve.classroom import kernel_limit_warnings

        assert kernel_limit_warnings(2, self.sysctls(tmp_path, "9223372036854775807")) == []
        assert kernel_limit_warnings(2, self.sysctls(tmp_path / "here", "2466252")) == []  # (this machine's)

    def test_serve_prints_this_machines_warnings_when_the_class_starts(self, tmp_path, serve):
        from torchcourse.serve.classroom import kernel_limit_warnings

        served = serve("--content", str(FIXTURE), serve_args=("--users", str(users_file(tmp_path))))
        wait_for(lambda: "全班共用一个预热运行器" in served.log(), "the class started", state=served.log)
        expected = kernel_limit_warnings(served_jobs(served))
        wait_for(lambda: all(w in served.log() for w in expected), "the warnings printed", state=served.log)
        assert ("fs.file-max" in served.log()) == any("fs.file-max" in w for w in expected)


def served_jobs(served) -> int:
    import re

    return int(re.search(r"同时最多运行 (\d+) 个代码块", served.log()).group(1))


# -- each learner their own progress -----------------------------------------------------------


def test_each_token_sees_only_its_own_progress(tmp_path, serve):
    import aiohttp

    served, root = start_class(serve, tmp_path)
    assert get(served.base)[0] == 403  # no token
    assert get(served.base + "?token=" + TOKENS["alice"][:-1] + "x")[0] == 403

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            a = await Learner(http, served, TOKENS["alice"]).open()
            await a.wait_text("学员：alice")
            await a.wait_text("开始 (c)：01")
            await a.press("c")
            await a.wait_text("看完了一块内存")
            await a.press("n")
            await a.wait_text("已记下")  # break point 1 reached: alice's write is queued
            pid_a = served.session_pids()[-1]
            env = environ_of(pid_a)
            assert env["TORCHCOURSE_HOME"] == str(root / "alice")
            assert env["TORCHCOURSE_LEARNER"] == "alice"
            raw = Path(f"/proc/{pid_a}/environ").read_bytes()
            assert not any(t.encode() in raw for t in TOKENS.values())  # no token reaches an app
            await a.close()
            wait_for(lambda: not alive(pid_a), "alice's app ended with her tab")

            store = store_of(root, "alice")
            try:
                assert store.last_position() == ("01", 1)
                assert store.chapter_progress("01").furthest_break == 1
            finally:
                store.close()
            assert not (root / "bob" / "data" / "progress.sqlite3").exists()  # bob has not been here
            assert not (served.home / "data" / "progress.sqlite3").exists()  # nor went it to serve's own home

            b = await Learner(http, served, TOKENS["bob"]).open()
            text = await b.wait_text("学员：bob")
            await b.wait_text("开始 (c)：01")  # bob's own state: nothing read yet
            assert "alice" not in b.screen.text() and "继续" not in b.screen.text().split("路线")[0], text
            await b.close()

            a = await Learner(http, served, TOKENS["alice"]).open()
            await a.wait_text("学员：alice")
            await a.wait_text("继续 (c)：01")  # alice's place is still hers
            await a.close()

        store = store_of(root, "bob")
        try:
            assert store.last_position() is None
            assert store.chapter_progress("01").furthest_break in (None, 0, -1)
        finally:
            store.close()

    asyncio.run(scenario())
    assert "学员 alice" in served.log() and "学员 bob" in served.log()


def post(url: str, headers: dict) -> tuple[int, list[tuple[str, str]]]:
    """POST ``url`` with an empty form, no redirect followed: (status, header pairs)."""
    import http.client

    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request("POST", f"{parts.path}?{parts.query}", body=b"",
                           headers={"Content-Type": "application/x-www-form-urlencoded", **headers})
        response = connection.getresponse()
        response.read()
        return response.status, response.getheaders()
    finally:
        connection.close()


class TestAnotherLearnersLinkAsksBeforeTheBrowserSwitches:
    """A browser signed in as alice opens bob's link (sent by bob, say): a page asks first, and the
    cookie stays alice's until the switch is confirmed from this site."""

    def test_the_link_asks_and_only_a_same_site_confirmation_switches(self, tmp_path, serve):
        served, _root = start_class(serve, tmp_path)
        status, headers, page = get(served.base + f"?token={TOKENS['alice']}")
        alice_cookie = headers["Set-Cookie"].split(";", 1)[0]
        link = served.base + f"?token={TOKENS['bob']}"
        origin = served.base.rstrip("/")
        port = urllib.parse.urlsplit(served.base).port
        for cookie in (alice_cookie, f"torchcourse_who_{port}={'alice'.encode().hex()}"):
            # the token cookie (a typed address) or only the who cookie (a link followed from another site)
            status, headers, page = get(link, {"Cookie": cookie})
            assert status == 200 and "这个浏览器正以学员 alice 的身份学习" in page and "换成学员 bob" in page, page
            assert "Set-Cookie" not in headers and "data-spare" not in page  # no app, no cookie yet
            assert get(served.base, {"Cookie": alice_cookie})[2].count("学员：alice") == 1  # still alice
        assert "浏览器原是学员 alice，打开了学员 bob 的链接" in served.log()

        # the form sent from another site (or with no Origin) switches nobody
        for forged in ({"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
                       {"Origin": "null", "Sec-Fetch-Site": "cross-site"}, {}):
            status, pairs = post(link, {"Cookie": alice_cookie, **forged})
            assert status == 403 and not any(k == "Set-Cookie" and TOKENS["bob"] in v for k, v in pairs), pairs
        # 换成学员 bob, from the page itself: the cookie is bob's and the page loads without the token
        status, pairs = post(link, {"Cookie": alice_cookie, "Origin": origin})
        assert status == 303 and ("Location", "/") in pairs, pairs
        cookies = [v.split(";", 1)[0] for k, v in pairs if k == "Set-Cookie"]
        assert f"torchcourse_token_{port}={TOKENS['bob']}" in cookies, cookies
        status, _headers, page = get(served.base, {"Cookie": "; ".join(cookies)})
        assert status == 200 and "学员：bob" in page and "alice" not in page
        # bob's own link in bob's browser asks nothing
        status, _headers, page = get(link, {"Cookie": "; ".join(cookies)})
        assert "学员：bob" in page and "换成" not in page


class TestAPageRunsOnlyAsTheLearnerWhoseLinkLoadedIt:
    def test_another_learners_credential_on_a_page_starts_no_app_and_the_page_says_why(self, tmp_path, serve):
        import aiohttp

        served, root = start_class(serve, tmp_path)
        status, headers, page = get(served.base + f"?token={TOKENS['alice']}")
        assert status == 200 and "学员：alice" in page
        alice_cookie = headers["Set-Cookie"].split(";", 1)[0]

        def apps() -> list[int]:  # the app processes serve runs now (the class runner is not one)
            return [p for p in descendants(served.proc.pid) if cmdline(p).split()[1:] == ["-m", "torchcourse"]]

        def bobs_page() -> str:  # bob's page, loaded in a browser without cookies: its websocket id
            status, _headers, page = get(served.base + f"?token={TOKENS['bob']}")
            assert status == 200 and "学员：bob" in page and "alice" not in page
            return re.search(r'data-spare="([^"]+)"', page).group(1)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                # a page's websocket address is no credential: without a token it is refused
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(served.base.replace("http://", "ws://") + f"ws/{bobs_page()}?width=80&height=24")
                assert refused.value.status == 403
                # bob's page, its websocket carrying alice's credential (a leaked page, or a browser
                # that switched to alice in another tab meanwhile): closed with the code the page
                # turns into 「这个浏览器现在登录的是另一位学员」, and no app starts, neither bob's nor alice's
                for credential in ({"cookie": alice_cookie}, {"token": TOKENS["alice"]}):
                    ticket, opened = bobs_page(), len(served.session_pids())
                    stranger = await Learner(http, served, path=f"ws/{ticket}", **credential).open()
                    msg = await stranger.ws.receive(timeout=DEADLINE)
                    assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), msg
                    assert stranger.ws.close_code == 4409
                    assert len(served.session_pids()) == opened and apps() == []
                    # the id was spent: bob's own credential on it now gets bob's app by his credential alone
                    b = await Learner(http, served, path=f"ws/{ticket}", token=TOKENS["bob"]).open()
                    await b.wait_text("学员：bob")
                    assert environ_of(served.session_pids()[-1])["TORCHCOURSE_HOME"] == str(root / "bob")
                    await b.close()
                    wait_for(lambda: not apps(), "bob's app to end with his tab")
                # once the app starts while the page loads (the server knows a tab's size now), the
                # app started for bob's page is ended, never handed to alice's credential
                ticket = bobs_page()
                stranger = await Learner(http, served, path=f"ws/{ticket}", cookie=alice_cookie).open()
                await stranger.ws.receive(timeout=DEADLINE)
                assert stranger.ws.close_code == 4409
                wait_for(lambda: apps() == [], "the app started for bob's page to end")
                # bob's own page with bob's credential: bob's app, as always
                b = await Learner(http, served, path=f"ws/{bobs_page()}", token=TOKENS["bob"]).open()
                await b.wait_text("学员：bob")
                await b.close()

        asyncio.run(scenario())


@pytest.mark.skipif(os.geteuid() != 0, reason="CPU groups need root (the server case)")
class TestEachLearnersAppsShareACPUGroupOfTheirOwn:
    """Every app sat in serve's own CPU group, each in a session of its own (the kernel's autogroup
    weighs each as much as the class runner's whole sandbox): one learner's four tabs busy
    redrawing 500×500 terminals made another learner's run 2.4-3.8× slower. Each learner's apps
    are in one CPU group of that learner's, inside one group for all apps; serve removes them when
    it stops."""

    def test_alices_and_bobs_apps_are_each_in_their_own_group_and_the_groups_go_with_serve(self, tmp_path, serve):
        import aiohttp

        served, _root = start_class(serve, tmp_path)

        def cpu_group(pid: int) -> str:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
            return next((line.split(":", 2)[2] for line in lines if "cpu" in line.split(":")[1].split(",")),
                        next(line.split(":", 2)[2] for line in lines if line.startswith("0::")))

        async def scenario() -> dict[str, set[str]]:
            async with aiohttp.ClientSession() as http:
                tabs, open_tabs = {}, []
                for name in ("alice", "alice", "bob"):
                    open_tabs.append(await Learner(http, served, token=TOKENS[name]).open())
                    await open_tabs[-1].wait_text(f"学员：{name}")
                    tabs.setdefault(name, []).append(served.session_pids()[-1])
                return {name: {cpu_group(pid) for pid in pids} for name, pids in tabs.items()}

        groups = asyncio.run(scenario())
        apps = f"/tc-apps-{served.proc.pid}/"
        assert groups["alice"] == {apps + "l-" + "alice".encode().hex()}, groups  # both her tabs
        assert groups["bob"] == {apps + "l-" + "bob".encode().hex()}, groups
        top = [d for d in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup") if os.path.isdir(d + apps)]
        assert top, "the apps' group is not where /proc says"
        served.interrupt()
        assert not os.path.exists(top[0] + apps)

    def test_a_learners_apps_together_get_at_most_one_core(self, tmp_path, serve):
        """Shares divide only what is contended: four tabs of one learner redrawing 500×500
        terminals still made another learner's screen answer a key 2-2.8× slower. Two busy
        processes in one learner's group are held to one core (the kernel throttles the group)."""
        import subprocess

        import aiohttp

        served, _root = start_class(serve, tmp_path)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                await (await Learner(http, served, token=TOKENS["alice"]).open()).wait_text("学员：alice")

        asyncio.run(scenario())
        group = next(d + f"/tc-apps-{served.proc.pid}/l-" + "alice".encode().hex() for d in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup")
                     if os.path.isdir(d + f"/tc-apps-{served.proc.pid}"))

        def throttled() -> int:
            stat = dict(line.split() for line in Path(group, "cpu.stat").read_text().splitlines())
            return int(stat["nr_throttled"])

        before = throttled()
        burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        try:
            for p in burners:
                Path(group, "cgroup.procs").write_text(str(p.pid))
            wait_for(lambda: throttled() > before, "two busy processes of alice's apps were never held back")
        finally:
            for p in burners:
                p.kill()
                p.wait()


async def alice_and_bob(http, served, **bob_kw) -> tuple["Learner", "Learner"]:
    """alice's and bob's pages, each showing who is signed in (``bob_kw``: for bob's Learner)."""
    alice = await Learner(http, served, token=TOKENS["alice"]).open()
    await alice.wait_text("学员：alice")
    bob = await Learner(http, served, token=TOKENS["bob"], **bob_kw).open()
    await bob.wait_text("学员：bob")
    return alice, bob


async def pong(ws, payload: str) -> None:
    """Read ``ws`` until serve answers the ping ``payload`` (the app's frames come in between)."""
    import aiohttp

    while True:
        msg = await ws.receive(timeout=DEADLINE)
        assert msg.type in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY), msg
        if msg.type == aiohttp.WSMsgType.TEXT and json.loads(msg.data) == ["pong", payload]:
            return


class TestAPageThatSendsTooMuchWaitsAlone:
    """serve parses every page's messages on its one event loop and echoed any ping whole: two
    tabs sending 4 MB pings in a loop made another learner's keys take 56-140 ms to draw. A page
    may send a message of at most MAX_MESSAGE bytes, gets a ping echoed only when it is short, and
    past MESSAGE_RATE bytes a second (after a MESSAGE_BURST) its websocket is read more slowly:
    it waits, the others do not."""

    def test_a_flooding_page_waits_its_turn_while_another_learners_ping_is_answered(self, tmp_path, serve):
        import json as jsonlib

        import aiohttp

        from torchcourse.serve.server import MAX_MESSAGE, MAX_PING, MESSAGE_BURST

        served, _root = start_class(serve, tmp_path)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                alice, bob = await alice_and_bob(http, served)
                # a short ping is answered; a long one is not echoed
                await bob.ws.send_str(jsonlib.dumps(["ping", "x" * (MAX_PING + 1)]))
                await bob.ws.send_str(jsonlib.dumps(["ping", "1"]))
                first = await bob.ws.receive(timeout=DEADLINE)
                while first.type == aiohttp.WSMsgType.BINARY:
                    first = await bob.ws.receive(timeout=DEADLINE)
                assert jsonlib.loads(first.data) == ["pong", "1"]
                # bob sends three bursts' worth of pings: serve reads him more slowly from then on
                chunk = jsonlib.dumps(["ping", "y" * (MAX_MESSAGE // 2)])
                for _ in range(3 * MESSAGE_BURST // len(chunk)):
                    await bob.ws.send_str(chunk)
                await bob.ws.send_str(jsonlib.dumps(["ping", "bob"]))
                bobs = asyncio.ensure_future(pong(bob.ws, "bob"))
                await alice.ws.send_str(jsonlib.dumps(["ping", "alice"]))
                alices = asyncio.ensure_future(pong(alice.ws, "alice"))
                done, _pending = await asyncio.wait({bobs, alices}, return_when=asyncio.FIRST_COMPLETED)
                assert alices in done and bobs not in done  # alice is answered while bob still waits
                await bobs  # and bob is answered in the end: slowed, not dropped
                # a message past MAX_MESSAGE ends that page's websocket, and only it
                await bob.ws.send_str(jsonlib.dumps(["stdin", "z" * MAX_MESSAGE]))
                while (await bob.ws.receive(timeout=DEADLINE)).type not in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                    pass
                assert bob.ws.close_code == 1009
                await alice.ws.send_str(jsonlib.dumps(["ping", "still"]))
                await pong(alice.ws, "still")

        asyncio.run(scenario())


async def answered_within_budget(tabs: list["Learner"], send, is_answer) -> None:
    """Send the budget's burst eight times over, ``send(tab)`` spread over ``tabs`` (before serve
    can read any of it), then read every tab until the burst and a second's worth past it have
    been answered (``is_answer(message)``): serve answers each before it is read, so no count may
    ever run ahead of what the budget allows since the flood began."""
    import time

    from torchcourse.serve.server import MESSAGE_BURST, MESSAGE_COST, MESSAGE_RATE

    burst, rate = MESSAGE_BURST // MESSAGE_COST, MESSAGE_RATE / MESSAGE_COST
    start = time.monotonic()
    for _ in range(8 * burst // len(tabs)):
        for tab in tabs:
            await send(tab)
    answered = [0]

    async def read(tab) -> None:
        while answered[0] < burst + rate:
            try:
                msg = await tab.ws.receive(timeout=1.0)
            except TimeoutError:
                continue
            if is_answer(msg):
                answered[0] += 1
                assert answered[0] <= burst + rate * (time.monotonic() - start) + 8 * len(tabs), (answered, time.monotonic() - start)

    tasks = [asyncio.create_task(read(tab)) for tab in tabs]
    done, pending = await asyncio.wait(tasks, timeout=DEADLINE, return_when=asyncio.FIRST_EXCEPTION)
    for task in pending:
        task.cancel()
    for task in done:
        task.result()  # (the first tab whose answer came too soon fails here)
    assert not pending, answered


def is_pong(payload: str):
    import aiohttp

    return lambda msg: msg.type == aiohttp.WSMsgType.TEXT and json.loads(msg.data) == ["pong", payload]


class TestAPageThatSendsManySmallMessagesWaitsAlone:
    """Counting bytes alone let tiny messages through at any rate: four tabs sending 34-byte pings
    as fast as they could (42,000 a second) made another learner's keys 4-7x slower to draw. Each
    message counts as at least MESSAGE_COST bytes, so a page gets at most a burst of
    MESSAGE_BURST / MESSAGE_COST messages read, then MESSAGE_RATE / MESSAGE_COST a second."""

    def test_tiny_pings_are_answered_no_faster_than_the_rate_and_another_learner_still_is(self, tmp_path, serve):
        import aiohttp

        served, _root = start_class(serve, tmp_path)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                alice, bob = await alice_and_bob(http, served)
                await answered_within_budget([bob], lambda tab: tab.ws.send_str('["ping", "1"]'), is_pong("1"))
                await alice.ws.send_str(json.dumps(["ping", "alice"]))
                await pong(alice.ws, "alice")

        asyncio.run(scenario())


class TestALearnersPagesShareOneMessageBudget:
    """Each page had a message budget of its own, so a learner's four tabs could send four times
    the rate (another learner's keys were 1.2-1.4x slower). One budget for all of a learner's
    pages: two tabs together get answered no faster than one may send."""

    def test_two_tabs_flooding_pings_are_answered_at_one_pages_rate(self, tmp_path, serve):
        import aiohttp

        served, _root = start_class(serve, tmp_path)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                alice, bob = await alice_and_bob(http, served)
                bob2 = await Learner(http, served, token=TOKENS["bob"]).open()
                await bob2.wait_text("学员：bob")
                await answered_within_budget([bob, bob2], lambda tab: tab.ws.send_str('["ping", "1"]'), is_pong("1"))
                await alice.ws.send_str(json.dumps(["ping", "alice"]))
                await pong(alice.ws, "alice")

        asyncio.run(scenario())


class TestWebsocketPingFramesCountAgainstTheBudget:
    """aiohttp answered websocket PING frames inside receive(), before the message budget saw them:
    four tabs flooding pings made serve 91-97 % busy and another learner's keys 8.6x slower. Ping
    frames are charged like any message: they are answered no faster than the budget allows."""

    def test_ping_frames_are_answered_at_the_budgets_rate(self, tmp_path, serve):
        import aiohttp

        served, _root = start_class(serve, tmp_path)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                alice, bob = await alice_and_bob(http, served, autoping=False)
                await answered_within_budget([bob], lambda tab: tab.ws.ping(b"1"), lambda msg: msg.type == aiohttp.WSMsgType.PONG)
                await alice.ws.send_str(json.dumps(["ping", "alice"]))
                await pong(alice.ws, "alice")

        asyncio.run(scenario())


class TestAPageThatSendsBinaryFramesIsClosed:
    """The page sends text frames only; binary ones went by the message budget uncounted (100,000
    a second, 41-47 % of serve's core). A binary frame closes that page's websocket (1003)."""

    def test_a_binary_frame_closes_only_its_websocket(self, tmp_path, serve):
        import json as jsonlib

        import aiohttp

        served, _root = start_class(serve, tmp_path)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                alice, bob = await alice_and_bob(http, served)
                await bob.ws.send_bytes(b"\0" * 16)

                async def closed() -> None:  # (the app's frames go on coming until it is)
                    while (await bob.ws.receive()).type not in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                        pass

                await asyncio.wait_for(closed(), DEADLINE)
                assert bob.ws.close_code == 1003
                await alice.ws.send_str(jsonlib.dumps(["ping", "still"]))
                await pong(alice.ws, "still")

        asyncio.run(scenario())


class TestAnEmptyKeyMessageIsDropped:
    """``["stdin", ""]`` went to the app as an empty data packet, and Textual's web driver feeds
    it to its key parser, which takes an empty feed for the end of its input: the app took no key
    after it, ever. serve drops an empty key message; the keys after it work."""

    def test_the_keys_after_an_empty_key_message_reach_the_app(self, tmp_path, serve):
        import aiohttp

        served, _root = start_class(serve, tmp_path)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                alice = await Learner(http, served, token=TOKENS["alice"]).open()
                await alice.wait_text("开始 (c)：01")
                await alice.press("")
                await alice.press("c")
                await alice.wait_text("看完了一块内存")

        asyncio.run(scenario())


class TestPageLoadsOfOneLearnerArePaced:
    """Each page load makes a websocket id that serve keeps for a minute: 8 connections reloading
    the page as fast as they could (22,000 loads in 20 s) made another learner's keys 3.4× slower
    to draw. A learner loads at most PAGE_BURST pages within PAGE_WINDOW seconds; the next is
    answered 429 with a word in Chinese, and other learners' pages load as before."""

    def test_the_page_past_the_burst_is_refused_and_another_learner_is_not(self, tmp_path, serve):
        from torchcourse.serve.server import PAGE_BURST

        served, _root = start_class(serve, tmp_path)
        link = served.base + f"?token={TOKENS['alice']}&delay=1"
        statuses = [get(link)[0] for _ in range(PAGE_BURST)]
        assert statuses == [200] * PAGE_BURST
        status, _headers, page = get(link)
        assert status == 429 and "页面刷新得太快" in page
        status, _headers, page = get(served.base + f"?token={TOKENS['bob']}&delay=1")
        assert status == 200 and "学员：bob" in page


# -- the users file while serve runs ------------------------------------------------------------


class TestTheUsersFileTakesEffectWithoutARestart:
    def test_added_learner_gets_in_and_a_revoked_one_is_ended_while_others_keep_working(self, tmp_path, serve):
        import aiohttp

        served, _root = start_class(serve, tmp_path, {"alice": TOKENS["alice"]})
        path = tmp_path / "class.toml"
        assert get(served.base + f"?token={TOKENS['bob']}")[0] == 403

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                a = await Learner(http, served, TOKENS["alice"]).open()
                await a.wait_text("学员：alice")
                with path.open("a", encoding="utf-8") as f:  # the teacher adds bob
                    f.write(f'bob = "{TOKENS["bob"]}"\n')
                wait_for(lambda: get(served.base + f"?token={TOKENS['bob']}")[0] == 200, "bob's link lets him in")
                b = await Learner(http, served, TOKENS["bob"]).open()
                await b.wait_text("学员：bob")
                await a.press("c")  # alice's tab stayed connected and works
                await a.wait_text("看完了一块内存")

                path.write_text(f'bob = "{TOKENS["bob"]}"\n', encoding="utf-8")  # alice is revoked
                loop = asyncio.get_running_loop()
                end = loop.time() + DEADLINE
                while True:
                    msg = await asyncio.wait_for(a.ws.receive(), max(0.1, end - loop.time()))
                    if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                        break
                assert a.ws.close_code == 4403  # the page shows "link no longer valid"
                assert get(served.base + f"?token={TOKENS['alice']}")[0] == 403
                await b.press("c")  # bob keeps working
                await b.wait_text("看完了一块内存")
                await b.close()

        asyncio.run(scenario())
        log = served.log()
        assert "学员名单已重新读入" in log and "停用或换了令牌（他们打开的会话已结束）：alice" in log

    def test_sighup_rereads_the_file_and_a_broken_file_keeps_the_old_list(self, tmp_path, serve):
        import signal

        served, _root = start_class(serve, tmp_path, {"alice": TOKENS["alice"]})
        path = tmp_path / "class.toml"
        path.write_text('alice = "short"\n', encoding="utf-8")
        wait_for(lambda: "学员名单没有重新读入" in served.log(), "the broken file was reported")
        assert f"{path}:1: 令牌太短" in served.log()
        assert get(served.base + f"?token={TOKENS['alice']}")[0] == 200  # the old list still holds
        import os

        path.write_text(f'alice = "{TOKENS["alice"]}"\nbob = "{TOKENS["bob"]}"\n', encoding="utf-8")
        os.utime(path, ns=(0, 0))  # the same size is possible; SIGHUP reads it whatever its time
        served.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: get(served.base + f"?token={TOKENS['bob']}")[0] == 200, "SIGHUP let bob in")
        assert served.proc.poll() is None  # SIGHUP does not stop a class


class TestAMistypedTokenIsRefusedWhateverTheCookie:
    def test_bobs_cookie_with_a_wrong_token_is_403_and_clears_the_cookie(self, tmp_path, serve):
        served, _root = start_class(serve, tmp_path)
        _s, headers, _p = get(served.base + f"?token={TOKENS['bob']}")
        bob_cookie = headers["Set-Cookie"].split(";", 1)[0]
        status, headers, page = get(served.base + "?token=" + TOKENS["bob"][:-1] + "x", {"Cookie": bob_cookie})
        assert status == 403 and "bob" not in page
        assert "这个链接无效或已经停用，请向老师要你自己的链接" in page
        assert headers["Set-Cookie"].startswith(bob_cookie.split("=")[0] + '=""') and "Max-Age=0" in headers["Set-Cookie"]
        assert get(served.base, {"Cookie": bob_cookie})[0] == 200  # the cookie alone still decides
        assert get(served.base, {"Cookie": bob_cookie, "Authorization": "token nobody-0123456789abcdef"})[0] == 403

    def test_the_cookie_is_secure_when_the_request_came_over_https(self, tmp_path, serve):
        served, _root = start_class(serve, tmp_path)
        _s, headers, _p = get(served.base + f"?token={TOKENS['bob']}")
        assert "Secure" not in headers["Set-Cookie"]
        _s, headers, _p = get(served.base + f"?token={TOKENS['bob']}", {"X-Forwarded-Proto": "https"})
        assert "Secure" in headers["Set-Cookie"]


# -- behind nginx (docs/classroom.md's recipe, on a port that is not 443) --------------------------

NGINX = "/usr/sbin/nginx"


def doc_location_block() -> str:
    """The ``location / { … }`` of docs/classroom.md's first nginx recipe, as written there."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "classroom.md").read_text(encoding="utf-8")
    recipe = doc.split("```nginx", 1)[1].split("```", 1)[0]
    block = recipe[recipe.index("location / {"):]
    return block[:block.index("}") + 1]


class TestTheNginxRecipeWorksOnAnyPort:
    @pytest.mark.skipif(not Path(NGINX).exists(), reason=f"{NGINX} is missing (apt-get install nginx)")
    def test_page_and_websocket_through_nginx_on_a_high_port(self, tmp_path, serve):
        import os
        import socket
        import subprocess

        import aiohttp

        served, _root = start_class(serve, tmp_path)
        upstream = served.base.split("//", 1)[1].rstrip("/")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        location = re.sub(r"proxy_pass http://[^;]+;", f"proxy_pass http://{upstream};", doc_location_block())
        prefix = tmp_path / "nginx"
        prefix.mkdir()
        (prefix / "nginx.conf").write_text(
            f"daemon off; pid {prefix}/nginx.pid; error_log {prefix}/error.log;\n"
            "events {}\n"
            f"http {{ access_log off; client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy;\n"
            f"  fastcgi_temp_path {prefix}/f; uwsgi_temp_path {prefix}/u; scgi_temp_path {prefix}/s;\n"
            '  map $http_upgrade $connection_upgrade { default upgrade; "" close; }\n'
            f"  server {{ listen 127.0.0.1:{port}; {location} }}\n}}\n", encoding="utf-8")
        proc = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            base = f"http://127.0.0.1:{port}/"
            def answered() -> bool:
                try:
                    return get(base)[0] == 403
                except OSError:  # not listening yet
                    return False

            wait_for(lambda: proc.poll() is not None or answered(), "nginx answered")
            assert proc.poll() is None, proc.stderr.read()
            status, headers, page = get(base + f"?token={TOKENS['alice']}")
            assert status == 200 and "学员：alice" in page
            cookie = headers["Set-Cookie"].split(";", 1)[0]

            async def scenario() -> None:
                async with aiohttp.ClientSession() as http:
                    # as the browser does: the page's origin, port included, and the cookie
                    ws = await http.ws_connect(f"ws://127.0.0.1:{port}/ws?width=110&height=30",
                                               headers={"Origin": f"http://127.0.0.1:{port}", "Cookie": cookie})
                    screen = ScreenModel(110, 30)
                    while "学员：alice" not in screen.text():
                        msg = await asyncio.wait_for(ws.receive(), DEADLINE)
                        assert msg.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), msg
                        if msg.type == aiohttp.WSMsgType.BINARY:
                            screen.feed(msg.data)
                    await ws.close()

            asyncio.run(scenario())
        finally:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=60)


class TestResettingOneLearnerEndsTheirSessionsFirst:
    def test_class_reset_ends_alices_tab_then_clears_her_progress_and_bob_works_on(self, tmp_path, serve):
        import aiohttp

        served, root = start_class(serve, tmp_path)
        path = tmp_path / "class.toml"

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                a = await Learner(http, served, TOKENS["alice"]).open()
                b = await Learner(http, served, TOKENS["bob"]).open()
                await a.wait_text("开始 (c)：01")
                await a.press("c")
                await a.wait_text("看完了一块内存")
                await a.press("n")
                await a.wait_text("已记下")  # alice has progress, and her tab is open
                await b.wait_text("学员：bob")
                reset = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "torchcourse", "--content", str(FIXTURE), "class", "reset", "alice", "--all",
                    "--yes", "--users", str(path), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                    env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
                loop = asyncio.get_running_loop()
                end = loop.time() + DEADLINE
                while True:  # her tab is ended by serve, not left to undo the reset
                    msg = await asyncio.wait_for(a.ws.receive(), max(0.1, end - loop.time()))
                    if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                        break
                assert a.ws.close_code == 4403
                out, err = await asyncio.wait_for(reset.communicate(), DEADLINE)
                assert reset.returncode == 0, err.decode()
                assert "已清除全部进度" in out.decode()
                await b.press("c")  # bob was never interrupted
                await b.wait_text("看完了一块内存")
                await b.close()
                wait_for(lambda: get(served.base + f"?token={TOKENS['alice']}")[0] == 200, "the hold was lifted")
                a = await Learner(http, served, TOKENS["alice"]).open()  # she gets in again
                await a.wait_text("开始 (c)：01")  # from the start: nothing undid the reset
                await a.close()

        asyncio.run(scenario())
        store = store_of(root, "alice")
        try:
            assert store.last_position() is None and store.chapter_progress("01").furthest_break in (0, None, -1)
        finally:
            store.close()


class TestALearnerStartsAppsAtAPace:
    """Every tab of a class starts an app process; a client reconnecting in a loop started one
    each time and slowed the whole machine (the session cap ends old sessions, not starts). A
    learner's fifth start within START_WINDOW waits, and still gets its app; another learner is
    not held up by it."""

    def test_the_fifth_tab_waits_and_opens_and_bob_is_not_held(self, tmp_path, serve):
        import aiohttp

        from torchcourse.serve.server import START_BURST

        served, _root = start_class(serve, tmp_path)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                tabs = [await Learner(http, served, TOKENS["alice"]).open() for _ in range(START_BURST + 1)]
                wait_for(lambda: "学员 alice 在 10 秒内已启动 4 个会话" in served.log(), "the fifth start was paced",
                         state=served.log)
                bob = await Learner(http, served, TOKENS["bob"]).open()
                await bob.wait_text("学员：bob")  # while alice's fifth waits
                await tabs[-1].wait_text("学员：alice")  # it opens once the window has passed
                for t in [*tabs, bob]:
                    await t.close()

        asyncio.run(scenario())

    def test_beyond_two_waiting_a_learners_websocket_is_refused_and_bobs_page_loads(self, tmp_path, serve):
        """Waiting websockets are open requests, which the per-address cap never closes as idle:
        one learner opening hundreds of them filled their address's cap and every classmate
        behind the same NAT got 503. A third waiting one is refused with 429 before it opens."""
        import aiohttp

        from torchcourse.serve.server import MAX_WAITING, START_BURST

        served, _root = start_class(serve, tmp_path)

        async def scenario() -> None:
            async with aiohttp.ClientSession() as http:
                tabs, refused = [], []
                for _ in range(START_BURST + MAX_WAITING + 3):
                    try:
                        tabs.append(await Learner(http, served, TOKENS["alice"]).open())
                    except aiohttp.WSServerHandshakeError as exc:
                        refused.append(exc.status)
                assert len(tabs) == START_BURST + MAX_WAITING and refused == [429] * 3, (len(tabs), refused)
                assert served.log().count("又来的一律拒绝（429）") == 1  # one log line, not one per refusal
                assert get(served.base + f"?token={TOKENS['bob']}")[0] == 200
                for t in tabs:
                    await t.close()

        asyncio.run(scenario())
