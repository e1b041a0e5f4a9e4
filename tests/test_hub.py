"""The course in JupyterHub: a real hub (``jupyterhub`` with npm's ``configurable-http-proxy``), a
local spawner and a test authenticator, two users on loopback, and headless Chromium logging in as
each of them. What is checked is what a learner and a teacher see: the launcher card, the course
at ``/user/<name>/torchcourse/``, a snippet's ✅, each user's progress in that user's home, the
class folder's exports, and that one user cannot open another's course.

Nothing here waits for a fixed time: every wait polls for a state, and its deadline only catches
a hang (a hub, two Jupyter servers and Chromium share two cores here).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from serve_support import CHROMIUM, CHROMIUM_ARGS, DEADLINE, FIXTURE, REPO, ScreenModel, missing_for_browser, wait_for
from torchcourse.serve.hub import LAUNCHER_TITLE

FIXTURE_TITLE = "测试课程：拆开一个小盒子"
PASSWORD = "hub-test-password"


def _missing() -> str | None:
    browser = missing_for_browser()
    if browser:
        return browser
    for module in ("jupyterhub", "jupyterlab", "jupyter_server_proxy"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install '.[test]')"
    if shutil.which("configurable-http-proxy") is None:
        return "configurable-http-proxy is missing (npm install -g configurable-http-proxy)"
    from importlib.metadata import entry_points

    if not any(ep.name == "torchcourse" for ep in entry_points(group="jupyter_serverproxy_servers")):
        return "torchcourse is not installed as a package here (its jupyter-server-proxy entry point is missing)"
    return None


_why = _missing()
if _why and os.environ.get("CI") == "true":
    raise RuntimeError(f"the JupyterHub tests cannot run in CI: {_why}")
pytestmark = pytest.mark.skipif(bool(_why), reason=f"JupyterHub tests skipped: {_why}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:
    """``jupyterhub`` in its own session: dummy login, a local spawner, homes under ``root/home``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.homes = root / "home"
        self.class_dir = root / "class"
        self.homes.mkdir(parents=True)
        self.class_dir.mkdir()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        bindir = Path(sys.executable).parent
        singleuser = shutil.which("jupyterhub-singleuser", path=str(bindir)) or "jupyterhub-singleuser"
        config = root / "jupyterhub_config.py"
        config.write_text("\n".join([
            "c = get_config()  # noqa",
            "c.JupyterHub.ip = '127.0.0.1'",
            f"c.JupyterHub.port = {self.port}",
            "c.JupyterHub.hub_ip = '127.0.0.1'",
            f"c.JupyterHub.hub_port = {free_port()}",
            f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{free_port()}'",
            f"c.ConfigurableHTTPProxy.pid_file = {str(root / 'proxy.pid')!r}",
            f"c.JupyterHub.db_url = 'sqlite:///{root / 'hub.sqlite'}'",
            f"c.JupyterHub.cookie_secret_file = {str(root / 'cookie_secret')!r}",
            "c.JupyterHub.authenticator_class = 'dummy'",
            f"c.DummyAuthenticator.password = {PASSWORD!r}",
            "c.Authenticator.allowed_users = {'alice', 'bob'}",
            "c.JupyterHub.spawner_class = 'simple'",
            f"c.SimpleLocalProcessSpawner.home_dir_template = {str(self.homes / '{username}')!r}",
            f"c.Spawner.cmd = [{singleuser!r}]",
            "c.Spawner.args = ['--ServerApp.allow_root=True']",
            "c.Spawner.default_url = '/lab'",
            "c.Spawner.start_timeout = 180",
            "c.Spawner.http_timeout = 180",
            # the course a teacher chose, and the folder the hub mounts for the class report
            f"c.Spawner.environment = {{'TORCHCOURSE_CONTENT': {str(FIXTURE)!r}, "
            f"'TORCHCOURSE_CLASS_DIR': {str(self.class_dir)!r}, 'PYTHONPATH': {str(REPO)!r}}}",
        ]) + "\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHCOURSE", "PYTEST", "TEXTUAL"))}
        self.log_path = root / "hub.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=root, env=env,
                                     stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        wait_for(lambda: self._healthy() or self.proc.poll() is not None, "the hub answered /hub/health")
        if self.proc.poll() is not None:
            raise AssertionError(f"jupyterhub exited {self.proc.returncode}:\n{self.log()[-4000:]}")

    def _healthy(self) -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.url}/hub/health", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # the single-user servers run in sessions of their own: end what is left of them
        for pid in _pids_under(self.homes):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._log.close()


def _pids_under(home: Path) -> list[int]:
    """Processes whose environment's HOME lies under ``home`` (the users' servers and apps)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(e.startswith(b"HOME=" + str(home).encode()) for e in env):
            out.append(int(d.name))
    return out


class Learner:
    """A browser context logged into the hub as one user; ``screen`` is what the course's
    websocket drew (rebuilt from the terminal stream, as in the serve tests)."""

    def __init__(self, browser, hub: Hub, name: str) -> None:
        self.hub = hub
        self.name = name
        self.context = browser.new_context(viewport={"width": 1200, "height": 800})
        self.page = self.context.new_page()
        self.page.set_default_timeout(DEADLINE * 1000)
        self.screen = ScreenModel()
        self.page.on("websocket", self._socket)
        self.page.goto(f"{hub.url}/hub/login")
        self.page.fill("#username_input", name)
        self.page.fill("#password_input", PASSWORD)
        self.page.click("#login_submit")
        # the hub spawns the user's server and lands on JupyterLab
        self.page.wait_for_url(f"**/user/{name}/lab**", timeout=DEADLINE * 1000)

    def open_course_from_the_launcher(self) -> None:
        """Click the course's card in JupyterLab's launcher: the course opens in a new tab."""
        card = self.page.get_by_text(LAUNCHER_TITLE).first
        card.wait_for()
        with self.context.expect_page(timeout=DEADLINE * 1000) as opened:
            card.click()
        self.page = opened.value
        self.page.set_default_timeout(DEADLINE * 1000)
        self.page.on("websocket", self._socket)

    def _socket(self, ws) -> None:
        if "/torchcourse/ws" in ws.url:
            ws.on("framereceived", lambda payload: isinstance(payload, bytes) and self.screen.feed(payload))

    def wait_text(self, needle: str) -> str:
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            text = self.screen.text()
            if needle in text:
                return text
            self.page.wait_for_timeout(50)  # lets Playwright deliver the frames received meanwhile
        raise AssertionError(f"{needle!r} never appeared in {self.name}'s course; it shows:\n{self.screen.text()[-3000:]}")

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    h = Hub(tmp_path_factory.mktemp("hub"))
    try:
        yield h
    finally:
        h.close()


class TestTheCourseInJupyterHub:
    """Two users on one hub: each opens the course from JupyterLab and reads their own progress."""

    def test_the_launcher_lists_the_course(self, browser, hub):
        alice = Learner(browser, hub, "alice")
        try:
            info = alice.page.request.get(f"{hub.url}/user/alice/server-proxy/servers-info")
            assert info.status == 200, info.text()
            servers = {s["name"]: s for s in info.json()["server_processes"]}
            assert servers["torchcourse"]["launcher_entry"]["title"] == LAUNCHER_TITLE
            # the card JupyterLab's launcher draws for it ("拆开 PyTorch [↗]": it opens a new tab)
            alice.page.get_by_text(LAUNCHER_TITLE).first.wait_for(timeout=DEADLINE * 1000)
        finally:
            alice.close()

    def test_each_user_opens_their_own_course_and_runs_a_snippet(self, browser, hub):
        alice = Learner(browser, hub, "alice")
        bob = Learner(browser, hub, "bob")
        try:
            alice.open_course_from_the_launcher()
            assert alice.page.url.startswith(f"{hub.url}/user/alice/torchcourse/")
            alice.wait_text(FIXTURE_TITLE)  # the home screen, through the hub's proxy and its prefix
            alice.page.keyboard.press("c")
            alice.wait_text("看完了一块内存")
            alice.page.keyboard.press("x")
            alice.wait_text("✅ 一致")  # the snippet ran in alice's own server
            store = hub.homes / "alice" / ".local" / "share" / "torchcourse" / "progress.sqlite3"
            wait_for(store.exists, f"alice's progress database at {store}")
            # bob, logged in, asking for alice's course gets no course and no websocket of hers
            response = bob.page.goto(f"{hub.url}/user/alice/torchcourse/")
            assert response is not None and response.status in (403, 404), response and response.status
            assert FIXTURE_TITLE not in bob.page.content()
            assert bob.screen.text().strip() == ""
            assert not (hub.homes / "bob" / ".local" / "share" / "torchcourse").exists()
            # bob's own course is his, with nothing of alice's
            bob.page.goto(f"{hub.url}/user/bob/torchcourse/")
            bob.wait_text(FIXTURE_TITLE)
            assert (hub.homes / "bob" / ".local" / "share" / "torchcourse" / "progress.sqlite3").exists()
        finally:
            alice.close()
            bob.close()
        # closing a tab ends its session, and its progress is exported to the class folder
        export = hub.class_dir / "alice.json"

        def exported_run():
            try:
                data = json.loads(export.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            return data if data.get("runs") else None

        data = wait_for(exported_run, "alice's export in the class folder, with the snippet she ran")
        print(data["runs"], data["position"])
        assert data["position"]
        assert (hub.class_dir / "bob.json").exists()
