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


def _shown_host(host: str) -> str:
    if host in ("0.0.0.0", "::"):
        return "本机的地址"
    return host if ":" not in host else f"[{host}]"


def link_base(host: str, port: int) -> str:
    """The start of a learner's link: port 443 is the TLS proxy's (``https://HOST/``), port 80 plain
    ``http://HOST/``; any other port is written out."""
    shown = _shown_host(host)
    if port == 443:
        return f"https://{shown}/"
    if port == 80:
        return f"http://{shown}/"
    return f"http://{shown}:{port}/"


def cmd_add_user(args) -> int:
    """``serve --add-user NAME --users FILE``: one more learner, a fresh token, their link."""
    from torchcourse.serve.users import UsersError, add_user

    path = Path(args.users).expanduser()
    try:
        token = add_user(path, args.add_user)
    except UsersError as exc:
        print(f"torchcourse serve: {exc}", file=sys.stderr)
        return 2
    print(f"torchcourse serve: 已把学员 {args.add_user} 加进 {path}（新令牌）。他的网址（只发给他本人）：")
    print(f"    {link_base(args.host, args.port or DEFAULT_PORT)}?token={token}")
    return 0


def _class(args):
    """(users, data root) of ``--users``, or exit with the reason; (None, None) without it."""
    from torchcourse.serve.users import UsersError, default_data_root, file_mode_problem, load_users

    if not args.users:
        return None, None
    path = Path(args.users).expanduser()
    try:
        users = load_users(path)
    except UsersError as exc:
        print(f"torchcourse serve: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    warning = file_mode_problem(path)
    if warning:
        print(f"torchcourse serve: 注意：{warning}", file=sys.stderr)
    from torchcourse.serve.classroom import sandbox_problem

    problem = sandbox_problem()
    if problem:
        print(f"torchcourse serve: 多人课堂不启动：学员改过的代码块必须在沙箱里运行，而这台机器上沙箱用不了 —— {problem}",
              file=sys.stderr)
        raise SystemExit(1)
    root = Path(args.data_root).expanduser().resolve() if args.data_root else default_data_root(path)
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        from torchcourse.paths import os_reason

        print(f"torchcourse serve: {root}: 建不了学员数据目录：{os_reason(exc)}", file=sys.stderr)
        raise SystemExit(1) from None
    return users, root


def cmd_serve(args) -> int:
    import asyncio
    import logging
    import os

    from torchcourse import paths
    from torchcourse.commandline import course_or_exit
    from torchcourse.serve.access import TOKEN_ENV, AccessError, choose_token, is_loopback

    if getattr(args, "hub", False) or getattr(args, "unix_socket", None):
        return cmd_serve_hub(args)
    host = args.host
    if not 0 <= args.port <= 65535:
        print(f"torchcourse serve: 端口要在 0 到 65535 之间（收到的是 {args.port}；0 表示随便一个空闲端口）", file=sys.stderr)
        return 2
    if getattr(args, "add_user", None):
        if not getattr(args, "users", None):
            print("torchcourse serve: --add-user 要和 --users FILE 一起用（学员加进哪个名单）", file=sys.stderr)
            return 2
        return cmd_add_user(args)
    if getattr(args, "data_root", None) and not getattr(args, "users", None):
        print("torchcourse serve: --data-root 只在多人课堂（--users FILE）里有用", file=sys.stderr)
        return 2
    users, data_root = _class(args) if getattr(args, "users", None) else (None, None)
    token, from_env = None, False
    if users is None:
        try:
            token, from_env = choose_token(host)
        except AccessError as exc:
            print(f"torchcourse serve: {exc}", file=sys.stderr)
            return 2
    elif os.environ.get(TOKEN_ENV):
        print(f"torchcourse serve: 有学员名单时不用环境变量 {TOKEN_ENV}（每个学员用名单里自己的令牌）", file=sys.stderr)
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
    class_runner = None
    if users is not None:  # one warm, sandboxed runner for the whole class, before any app
        from torchcourse.serve.classroom import ClassRunner, ClassRunnerError

        try:
            class_runner = ClassRunner(hide=[str(Path(args.users).expanduser().resolve()), str(data_root)],
                                       preload=course.preload, data=course.data)
        except ClassRunnerError as exc:
            print(f"torchcourse serve: 多人课堂不启动：{exc}", file=sys.stderr)
            return 1
    try:
        server = CourseServer(app_argv(content), token=token, users=users, data_root=data_root,
                              title=course.title or "torchcourse", host=host, port=args.port,
                              users_path=Path(args.users).expanduser() if users is not None else None,
                              app_env=class_runner.env() if class_runner is not None else None)
    except ValueError as exc:
        print(f"torchcourse serve: {exc}", file=sys.stderr)
        if class_runner is not None:
            class_runner.stop()
        return 1

    def ready(port: int) -> None:
        where = f"http://{_shown_host(host)}:{port}/"
        print(f"torchcourse serve: 「{course.title}」在浏览器里打开：", flush=True)
        if users is not None:
            print(f"    {where}?token=<学员自己的令牌>", flush=True)
            print(f"torchcourse serve: 课堂 {len(users)} 个学员（名单 {args.users}），每人的进度在 {data_root}/<名字>/；"
                  f"每人的网址就是上面这行换上他的令牌（--add-user 加人时打印过）。按 Ctrl+C 停止。", flush=True)
            print(f"torchcourse serve: 全班共用一个预热运行器（沙箱里，同时最多运行 {class_runner.jobs} 个代码块，"
                  "其余按学员轮流排队）。", flush=True)
            from torchcourse.serve.classroom import kernel_limit_warnings

            for warning in kernel_limit_warnings(class_runner.jobs):
                print(f"torchcourse serve: 注意：{warning}", file=sys.stderr, flush=True)
            return
        secret = f"${TOKEN_ENV}" if from_env else token  # a token from the environment is never printed
        print(f"    {where}?token={secret}", flush=True)
        reach = "只有这台电脑能打开" if is_loopback(host) else "同一网络里拿到令牌的人都能打开"
        print(f"torchcourse serve: {reach}；每个标签页是一个会话，进度和终端里的 torchcourse 相同。按 Ctrl+C 停止。", flush=True)

    try:
        return asyncio.run(server.run(ready))
    except KeyboardInterrupt:  # a second Ctrl+C while the sessions end
        return 130
    finally:
        if class_runner is not None:  # after the apps: their last runs end first
            class_runner.stop()


def cmd_serve_hub(args) -> int:
    """``serve --hub --unix-socket PATH``: started by jupyter-server-proxy in a JupyterHub user's
    server (torchcourse/serve/hub.py says how access works there)."""
    import asyncio
    import logging

    from torchcourse import paths
    from torchcourse.commandline import course_or_exit

    if not getattr(args, "hub", False):
        print("torchcourse serve: --unix-socket 只和 --hub 一起用（JupyterHub 里由 jupyter-server-proxy 启动）", file=sys.stderr)
        return 2
    if getattr(args, "users", None) or getattr(args, "add_user", None) or getattr(args, "data_root", None):
        print("torchcourse serve: --hub 是一个人的会话（JupyterHub 管登录和隔离），不和 --users / --add-user / --data-root 一起用", file=sys.stderr)
        return 2
    course = course_or_exit(args)
    content = getattr(args, "content", None) or None
    if content is None and paths.content_dir(None) != paths.shipped_content_dir():
        content = str(paths.content_dir(None))
    from torchcourse.serve.hub import export_progress
    from torchcourse.serve.hub_server import HubCourseServer

    logging.basicConfig(level=logging.INFO, format="torchcourse serve: %(message)s", stream=sys.stdout)
    logging.getLogger("aiohttp").setLevel(logging.WARNING)
    argv = app_argv(content)
    server = HubCourseServer(argv, title=course.title or "torchcourse", unix_socket=args.unix_socket,
                             port=args.port if args.unix_socket is None else 0)
    if args.unix_socket is None:
        server.host = DEFAULT_HOST  # behind the proxy: loopback only

    def ready(port: int) -> None:
        where = args.unix_socket or f"{DEFAULT_HOST}:{port}"
        print(f"torchcourse serve: 「{course.title}」在 JupyterHub 里就绪（{where}）", flush=True)

    async def main() -> int:
        await export_progress(argv)
        return await server.run(ready)

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
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
    out.append((True, f"沙箱        {'✅ 沙箱可用（' + str(shutil.which('bwrap')) + ' + Landlock，试运行通过）' if problem is None else '— 沙箱用不了：' + problem + '（一个人用不需要它；多人课堂要用它隔离代码块）'}"))
    return out


def cmd_class_report(args) -> int:
    """``torchcourse class report --users FILE [--progress-dir DIR] [--csv]``: the class's table."""
    from torchcourse.commandline import course_or_exit
    from torchcourse.progress.classreport import as_csv, as_text, class_rows
    from torchcourse.serve.users import UsersError, default_data_root, load_users

    if not args.users and not args.progress_dir:
        print("torchcourse class report: 要给 --users FILE（serve --users 的课堂）或 --progress-dir DIR（学员导出的进度文件）",
              file=sys.stderr)
        return 2
    names, root = None, None
    if args.users:
        path = Path(args.users).expanduser()
        try:
            names = list(load_users(path))
        except UsersError as exc:
            print(f"torchcourse class report: {exc}", file=sys.stderr)
            return 2
        root = Path(args.data_root).expanduser().resolve() if args.data_root else default_data_root(path)
    if args.progress_dir and not Path(args.progress_dir).is_dir():
        print(f"torchcourse class report: {args.progress_dir}: 不是一个目录", file=sys.stderr)
        return 2
    course = course_or_exit(args)
    rows = class_rows(course, users=names, data_root=root,
                      progress_dir=Path(args.progress_dir).expanduser() if args.progress_dir else None)
    sys.stdout.write(as_csv(rows) if args.csv else as_text(rows))
    return 0


def learner_apps(home: Path) -> list[int]:
    """Pids of this user's processes running with ``TORCHCOURSE_HOME=home`` (a learner's open apps)."""
    import os

    want = f"TORCHCOURSE_HOME={home}".encode()
    out = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if want in env:
                out.append(int(entry))
    return out


def cmd_class_reset(args) -> int:
    """``torchcourse class reset NAME --users FILE (--all | CHAPTER)``: end that learner's open
    sessions first (serve ends them and holds the link while a hold file exists), then reset."""
    import os
    import time

    from torchcourse.paths import HOME_ENV
    from torchcourse.serve.users import HOLD_FILE, UsersError, default_data_root, load_users

    path = Path(args.users).expanduser()
    try:
        users = load_users(path)
    except UsersError as exc:
        print(f"torchcourse class reset: {exc}", file=sys.stderr)
        return 2
    if args.name not in users:
        print(f"torchcourse class reset: {path} 里没有学员 {args.name!r}（有：{'、'.join(users)}）", file=sys.stderr)
        return 2
    if not args.all and not args.chapter:
        print("torchcourse class reset: 要说清楚清除哪一章（如 01），或者 --all 清除全部", file=sys.stderr)
        return 2
    root = Path(args.data_root).expanduser().resolve() if args.data_root else default_data_root(path)
    home = root / args.name
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    hold = home / HOLD_FILE
    hold.write_text("class reset\n", encoding="utf-8")
    try:
        end = time.monotonic() + 60
        while learner_apps(home) and time.monotonic() < end:
            time.sleep(0.2)
        left = learner_apps(home)
        if left:
            print(f"torchcourse class reset: 学员 {args.name} 的会话 60 秒内没有结束（pid {left}），什么都没有清除",
                  file=sys.stderr)
            return 1
        os.environ[HOME_ENV] = str(home)
        from torchcourse.progress.cli import cmd_reset

        return cmd_reset(args)
    finally:
        hold.unlink(missing_ok=True)
