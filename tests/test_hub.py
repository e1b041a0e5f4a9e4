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
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from hub_support import PASSWORD, Hub
from serve_support import DEADLINE, FIXTURE, REPO, ScreenModel, browser, missing_for_browser, wait_for  # noqa: F401 (browser is a fixture)
from torchcourse.serve.hub import LAUNCHER_TITLE

FIXTURE_TITLE = "测试课程：拆开一个小盒子"


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
needs_a_hub = pytest.mark.skipif(bool(_why), reason=f"JupyterHub tests skipped: {_why}")


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
def hub(tmp_path_factory):
    h = Hub(tmp_path_factory.mktemp("hub"))
    try:
        yield h
    finally:
        h.close()


@needs_a_hub
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

        # (alice opened the chapter and ran its first snippet without reading on: opening is not
        # reading, so the export has her run and no reading place)
        data = wait_for(exported_run, "alice's export in the class folder, with the snippet she ran")
        assert data["position"] is None
        assert (hub.class_dir / "bob.json").exists()
        # the teacher's class report over the hub's class folder lists both learners
        env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHCOURSE")}
        env.update(PYTHONPATH=str(REPO), TORCHCOURSE_HOME=str(hub.root / "teacher"))
        report = subprocess.run([sys.executable, "-m", "torchcourse", "--content", str(FIXTURE), "class", "report",
                                 "--progress-dir", str(hub.class_dir), "--csv"], capture_output=True, text=True, env=env,
                                stdin=subprocess.DEVNULL, timeout=120)
        assert report.returncode == 0, report.stderr
        rows = {line.split(",")[0]: line for line in report.stdout.splitlines()[1:]}
        assert set(rows) == {"alice", "bob"}, report.stdout


class TestTheTeachersSetUp:
    """What docs/jupyterhub.md tells a teacher to paste is what works."""

    DOC = REPO / "docs" / "jupyterhub.md"

    def test_the_zero_to_jupyterhub_excerpt_is_a_valid_config_yaml(self):
        text = self.DOC.read_text(encoding="utf-8")
        block = text.split("<!-- z2jh-config -->", 1)[1].split("<!-- /z2jh-config -->", 1)[0]
        body = block.split("```yaml\n", 1)[1].split("```", 1)[0]
        config = yaml.safe_load(body)
        single = config["singleuser"]
        assert single["defaultUrl"] == "/lab"
        assert single["extraEnv"]["TORCHCOURSE_CLASS_DIR"] == single["storage"]["extraVolumeMounts"][0]["mountPath"]
        assert single["memory"]["limit"] and single["cpu"]["limit"]
        assert config["cull"]["enabled"] is True

    def test_the_proxy_entry_point_names_the_course_and_a_unix_socket(self):
        from torchcourse.serve.hub import setup_proxy

        entry = setup_proxy()
        assert entry["unix_socket"] is True and "{unix_socket}" in entry["command"]
        assert entry["command"][:5] == [sys.executable, "-m", "torchcourse", "serve", "--hub"]
        assert Path(entry["launcher_entry"]["icon_path"]).is_file()
        assert entry["launcher_entry"]["title"] == LAUNCHER_TITLE


class TestServeHubOptions:
    """``serve --hub`` is one learner behind Jupyter's login: the class options are refused."""

    def _serve(self, *args: str, home: Path) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHCOURSE")}
        env.update(TORCHCOURSE_HOME=str(home), PYTHONPATH=str(REPO))
        return subprocess.run([sys.executable, "-m", "torchcourse", "serve", *args], capture_output=True, text=True,
                              env=env, stdin=subprocess.DEVNULL, timeout=120)

    def test_a_unix_socket_without_hub_is_refused_in_chinese(self, tmp_path):
        done = self._serve("--unix-socket", str(tmp_path / "s"), home=tmp_path)
        assert done.returncode == 2
        assert "--unix-socket 只和 --hub 一起用" in done.stderr and "Traceback" not in done.stderr

    def test_hub_with_a_users_file_is_refused(self, tmp_path):
        done = self._serve("--hub", "--users", str(tmp_path / "class.toml"), home=tmp_path)
        assert done.returncode == 2
        assert "--hub 是一个人的会话" in done.stderr


class TestDoctorUnderAHub:
    def test_doctor_names_the_hub_user_and_the_course_address(self, tmp_path):
        env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHCOURSE")}
        env.update(TORCHCOURSE_HOME=str(tmp_path), PYTHONPATH=str(REPO), JUPYTERHUB_USER="alice",
                   JUPYTERHUB_SERVICE_PREFIX="/user/alice/", TORCHCOURSE_CLASS_DIR=str(tmp_path / "class"))
        done = subprocess.run([sys.executable, "-m", "torchcourse", "doctor"], capture_output=True, text=True, env=env,
                              stdin=subprocess.DEVNULL, timeout=300)
        assert "jupyterhub  ✅ 在 JupyterHub 里：用户 alice，教程的网址是 /user/alice/torchcourse/" in done.stdout
        assert "alice.json" in done.stdout

    def test_outside_a_hub_doctor_says_so(self, tmp_path):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHCOURSE", "JUPYTERHUB"))}
        env.update(TORCHCOURSE_HOME=str(tmp_path), PYTHONPATH=str(REPO))
        done = subprocess.run([sys.executable, "-m", "torchcourse", "doctor"], capture_output=True, text=True, env=env,
                              stdin=subprocess.DEVNULL, timeout=300)
        assert "jupyterhub  — 不在 JupyterHub 里" in done.stdout
