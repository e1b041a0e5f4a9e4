"""A real JupyterHub for the tests and the hub benchmark: ``jupyterhub`` with npm's
``configurable-http-proxy``, the dummy authenticator and a local spawner, every user's home under
one temporary folder. Nothing waits for a fixed time: waits poll for a state."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from serve_support import FIXTURE, REPO, wait_for

PASSWORD = "hub-test-password"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:  # noqa: D101
    """``jupyterhub`` in its own session: dummy login, a local spawner, homes under ``root/home``."""

    def __init__(self, root: Path, users: tuple[str, ...] = ("alice", "bob"), content: Path = FIXTURE,
                 extra_config: tuple[str, ...] = ()) -> None:
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
            f"c.Authenticator.allowed_users = {set(users)!r}",
            "c.JupyterHub.spawner_class = 'simple'",
            f"c.SimpleLocalProcessSpawner.home_dir_template = {str(self.homes / '{username}')!r}",
            f"c.Spawner.cmd = [{singleuser!r}]",
            "c.Spawner.args = ['--ServerApp.allow_root=True']",
            "c.Spawner.default_url = '/lab'",
            "c.Spawner.start_timeout = 180",
            "c.Spawner.http_timeout = 180",
            # the course a teacher chose, and the folder the hub mounts for the class report
            f"c.Spawner.environment = {{'TORCHCOURSE_CONTENT': {str(content)!r}, "
            f"'TORCHCOURSE_CLASS_DIR': {str(self.class_dir)!r}, 'PYTHONPATH': {str(REPO)!r}}}",
            *extra_config,
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


