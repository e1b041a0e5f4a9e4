"""``torchcourse serve`` and the serve lines of ``doctor``."""

from __future__ import annotations

import sys
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def app_argv(content: str | None) -> list[str]:
    """The command each tab runs: this interpreter's ``torchcourse`` with the same course."""
    argv = [sys.executable, "-m", "torchcourse"]
    if content:
        argv += ["--content", str(Path(content).expanduser().resolve())]
    return argv


def cmd_serve(args) -> int:
    import asyncio
    import logging

    from torchcourse import paths
    from torchcourse.commandline import course_or_exit
    from torchcourse.serve.access import TOKEN_ENV, AccessError, choose_token, is_loopback

    host = args.host
    if not 0 <= args.port <= 65535:
        print(f"torchcourse serve: 端口要在 0 到 65535 之间（收到的是 {args.port}；0 表示随便一个空闲端口）", file=sys.stderr)
        return 2
    try:
        token, from_env = choose_token(host)
    except AccessError as exc:
        print(f"torchcourse serve: {exc}", file=sys.stderr)
        return 2
    course = course_or_exit(args)  # a course that cannot load stops here, not in every tab
    content = getattr(args, "content", None) or None
    if content is None and paths.content_dir(None) != paths.shipped_content_dir():
        content = str(paths.content_dir(None))  # TORCHCOURSE_CONTENT: the tabs get it explicitly
    try:
        from torchcourse.serve.server import CourseServer
    except ImportError as exc:
        print(f"torchcourse serve: 缺少 {exc.name}（pip install textual-serve==1.1.3；torchcourse doctor 会检查）", file=sys.stderr)
        return 1
    logging.basicConfig(level=logging.INFO, format="torchcourse serve: %(message)s", stream=sys.stdout)
    logging.getLogger("aiohttp").setLevel(logging.WARNING)  # nothing per request (the token rides in the query)
    try:
        server = CourseServer(app_argv(content), token=token, title=course.title or "torchcourse", host=host, port=args.port)
    except ValueError as exc:
        print(f"torchcourse serve: {exc}", file=sys.stderr)
        return 1

    def ready(port: int) -> None:
        shown = host if ":" not in host else f"[{host}]"
        if host in ("0.0.0.0", "::"):
            shown = "本机的地址"
        where = f"http://{shown}:{port}/"
        secret = f"${TOKEN_ENV}" if from_env else token  # a token from the environment is never printed
        print(f"torchcourse serve: 「{course.title}」在浏览器里打开：", flush=True)
        print(f"    {where}?token={secret}", flush=True)
        reach = "只有这台电脑能打开" if is_loopback(host) else "同一网络里拿到令牌的人都能打开"
        print(f"torchcourse serve: {reach}；每个标签页是一个会话，进度和终端里的 torchcourse 相同。按 Ctrl+C 停止。", flush=True)

    try:
        return asyncio.run(server.run(ready))
    except KeyboardInterrupt:  # a second Ctrl+C while the sessions end
        return 130


def checks(port: int = DEFAULT_PORT) -> list[tuple[bool, str]]:
    """What ``doctor`` says about serve: (ok, line) pairs; nothing here starts a server."""
    import importlib.util
    import shutil
    import socket
    from importlib.metadata import PackageNotFoundError, version

    out: list[tuple[bool, str]] = []
    try:
        tv = version("textual-serve")
    except PackageNotFoundError:
        tv = None
    if tv is None or importlib.util.find_spec("textual_serve.server") is None:
        out.append((False, "serve       ❌ 没装 textual-serve — pip install textual-serve==1.1.3"))
        return out
    try:
        from torchcourse.serve.server import CourseServer, patched_textual_js  # noqa: F401
        from textual_serve.server import Server

        patched_textual_js(Server("x").statics_path)
    except (ImportError, ValueError, OSError) as exc:
        out.append((False, f"serve       ❌ textual-serve {tv} 用不了：{exc}"))
        return out
    with socket.socket() as s:
        try:
            s.bind((DEFAULT_HOST, port))
            free = f"端口 {port} 空闲"
        except OSError:
            s2 = socket.socket()
            s2.bind((DEFAULT_HOST, 0))
            free = f"端口 {port} 已被占用（用 --port {s2.getsockname()[1]} 之类的空闲端口）"
            s2.close()
    out.append((True, f"serve       ✅ textual-serve {tv}，{free}"))
    from torchcourse.runner.sandbox import sandbox_problem

    problem = sandbox_problem()  # a real sandboxed run, not only whether bwrap exists
    out.append((True, f"sandbox     {'✅ 沙箱可用（' + str(shutil.which('bwrap')) + ' + Landlock，试运行通过）' if problem is None else '— 沙箱用不了：' + problem + '（一个人用不需要它；多人课堂要用它隔离代码块）'}"))
    return out
