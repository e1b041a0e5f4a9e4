"""The course inside a JupyterHub user's server: a JupyterLab launcher entry, served by
jupyter-server-proxy at ``/user/<name>/torchcourse/``.

How it fits together:

- ``setup_proxy`` is the ``jupyter_serverproxy_servers`` entry point (pyproject.toml): in any
  Jupyter server where torchcourse is installed, jupyter-server-proxy starts
  ``torchcourse serve --hub --unix-socket {unix_socket}`` on first use and proxies
  ``<base_url>torchcourse/`` to it (path prefix stripped, websockets included).
- Access is the Jupyter server's: the proxy lets through only requests that carry the user's
  Jupyter credentials (the hub's login), and the app listens on a Unix socket in a folder only
  the user can enter (jupyter-server-proxy makes it with ``mkdtemp``), so no other account on the
  machine and no other hub user can reach it. No course token exists in this mode.
- Progress and cache stay where ``torchcourse locate`` says (platformdirs under the user's home,
  the hub's persistent volume); snippets run in the user's own server process tree, whose
  container (Zero to JupyterHub) or system account (The Littlest JupyterHub) is the isolation.
- ``TORCHCOURSE_CLASS_DIR``: when set (a folder the hub mounts into every user's server), the
  user's progress is exported to ``<dir>/<user>.json`` when the server starts and whenever a
  tab's session ends, for ``torchcourse class report --progress-dir``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
from pathlib import Path

log = logging.getLogger("torchcourse.serve")

CLASS_DIR_ENV = "TORCHCOURSE_CLASS_DIR"
LAUNCHER_TITLE = "拆开 PyTorch"
PAGE_DIR = Path(__file__).resolve().parent / "page"
_SAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._@+-]")


def setup_proxy() -> dict:
    """jupyter-server-proxy's description of the course (its ``jupyter_serverproxy_servers``
    entry point): the command, a Unix socket, and the launcher card."""
    return {
        "command": [sys.executable, "-m", "torchcourse", "serve", "--hub", "--unix-socket", "{unix_socket}"],
        "unix_socket": True,
        "timeout": 60,
        "absolute_url": False,
        "new_browser_tab": True,
        "launcher_entry": {
            "title": LAUNCHER_TITLE,
            "icon_path": str(PAGE_DIR / "favicon.svg"),
            "category": "Other",
        },
    }


def hub_user() -> str | None:
    """The hub user this process serves, or None outside a JupyterHub single-user server."""
    return os.environ.get("JUPYTERHUB_USER") or None


def hub_lines() -> list[str]:
    """What ``doctor`` says about JupyterHub."""
    user = hub_user()
    if user is None:
        return ["jupyterhub  — 不在 JupyterHub 里（jupyter-server-proxy 装好后，JupyterLab 的启动器里会有「拆开 PyTorch」）"]
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/user/{user}/")
    lines = [f"jupyterhub  ✅ 在 JupyterHub 里：用户 {user}，教程的网址是 {prefix.rstrip('/')}/torchcourse/（由 Jupyter 的登录把关）"]
    class_dir = os.environ.get(CLASS_DIR_ENV)
    if class_dir:
        lines.append(f"class dir   {class_dir}（每次会话结束把进度导出到 {export_path(Path(class_dir), user).name}）")
    return lines


def export_path(class_dir: Path, user: str) -> Path:
    return class_dir / f"{_SAFE_NAME_RE.sub('_', user)}.json"


async def export_progress(argv: list[str], env: dict[str, str] | None = None) -> None:
    """Write this user's progress to the class folder (``TORCHCOURSE_CLASS_DIR``), if one is set.
    Runs ``torchcourse export`` in a child process: the server never opens the store itself."""
    class_dir, user = os.environ.get(CLASS_DIR_ENV), hub_user()
    if not class_dir or not user:
        return
    target = export_path(Path(class_dir), user)
    cmd = [*argv, "export", str(target), "--force"]
    try:
        proc = await asyncio.create_subprocess_exec(*cmd, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.PIPE, env={**os.environ, **(env or {})})
        _out, err = await proc.communicate()
    except OSError as exc:
        log.warning("进度没能导出到 %s：%s", target, exc)
        return
    if proc.returncode != 0:
        log.warning("进度没能导出到 %s：%s", target, err.decode("utf-8", "replace").strip()[-300:])
