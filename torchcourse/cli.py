"""The ``torchcourse`` command. No subcommand starts the app; subcommands are listed in --help.

Imports are lazy: the start-up path loads only what the chosen subcommand needs, and nothing
here imports torch (snippets run in their own processes).
"""

from __future__ import annotations

import argparse
import json
import sys

from torchcourse import __version__, paths
from torchcourse.commandline import course_or_exit


def cmd_check(args) -> int:
    from torchcourse.check import all_problems, all_warnings, shape

    from torchcourse.lookup.errors import excerpt_selection_problems

    course = course_or_exit(args, need_chapters=False)
    problems = all_problems(course)
    # composed here: the checker never imports the lookup (tests/test_layers.py)
    problems += [p for p in excerpt_selection_problems(course) if p not in problems]
    problems += _same_id_elsewhere(course)
    if args.json:
        print(json.dumps(shape(course, problems), ensure_ascii=False, indent=2))
    else:
        for p in problems:
            print(p)
        for w in all_warnings(course):  # printed, never counted as a problem
            print(w)
        written = [c for c in course.chapters if c.available]
        snippets = sum(len(c.snippets) for c in written)
        print(
            f"共 {len(course.chapters)} 章（已写好 {len(written)} 章），{snippets} 个代码块，"
            f"{len(course.routes)} 条路线：{len(problems)} 处问题"
        )
    return 1 if problems else 0


def _same_id_elsewhere(course) -> list:
    """A course whose id the progress store knows from another folder that still holds a course of
    that id (copied as a template, id unchanged): its learners would share progress."""
    import re
    from pathlib import Path

    from torchcourse.course.loader import course_id_of
    from torchcourse.course.model import Problem
    from torchcourse.progress.store import known_course_root

    if course.id == "torchcourse":
        return []  # the shipped course (its source tree, its wheel, a worktree): copies are the loader's rule
    other = known_course_root(course.id)
    here = Path(course.root).resolve()
    if other is None or Path(other) == here or not (Path(other) / "course.toml").is_file() or course_id_of(Path(other)) != course.id:
        return []
    toml = here / "course.toml"
    try:
        text = toml.read_text(encoding="utf-8")
    except OSError:
        text = ""
    m = re.search(r"^\s*id\s*=", text, re.M)
    line = text.count("\n", 0, m.start()) + 1 if m else 1
    return [Problem(toml, line, f"课程 id {course.id!r} 也是 {other} 里那门课的 id（之前用 torchcourse 打开过）："
                                "进度按 id 保存，两门课的读者会共用同一份进度；给这门课一个自己的 id")]


def cmd_locate(args) -> int:
    rows = {
        "data": paths.data_dir(),
        "database": paths.database_path(),
        "cache": paths.cache_dir(),
        "content": paths.content_dir(getattr(args, "content", None)),
    }
    if args.json:
        print(json.dumps({k: str(v) for k, v in rows.items()}, indent=2))
    else:
        for k, v in rows.items():
            print(f"{k:9} {v}")
    return 0


def _delegate(module: str, func: str):
    def handler(args) -> int:
        import importlib

        return importlib.import_module(module).__dict__[func](args)

    return handler


def _run_snippet_or_file(args) -> int:
    if getattr(args, "sandbox", None):
        return _delegate("torchcourse.runner.cli", "cmd_run_sandbox")(args)
    if args.snippet is None:
        print("torchcourse run: 要给出 章:代码块（如 01:view-error），或 --sandbox FILE", file=sys.stderr)
        return 2
    if getattr(args, "file", None):
        return _delegate("torchcourse.runner.learner", "cmd_run_file")(args)
    return _delegate("torchcourse.runner.cli", "cmd_run")(args)


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"种子应为整数，实际是 {text!r}") from None
    if not 0 <= value < 2**31:
        raise argparse.ArgumentTypeError(f"种子应在 0 到 2147483647 之间，实际是 {value}")
    return value


def _jobs(text: str) -> int:
    """``verify --jobs``: a positive whole number (0 and -3 were accepted silently, walk L7)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs 应为正整数，实际是 {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--jobs 至少是 1，实际是 {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from torchcourse import cli_zh

    cli_zh.install()  # usage, headings and usage errors in Chinese, like everything else here
    parser = argparse.ArgumentParser(prog="torchcourse", description="拆开 PyTorch：在终端里读的中文教程。不带子命令就打开教程界面。",
                                     epilog=f"写自己的课程：torchcourse new DIR；作者指南在 {paths.shipped_content_dir() / 'README.md'}")
    parser.add_argument("--version", action="version", version=f"torchcourse {__version__}", help="显示版本号后退出")
    parser.add_argument("--content", metavar="DIR", help="课程目录（含 course.toml；默认是随包附带的课程；也可用环境变量 TORCHCOURSE_CONTENT）")
    sub = parser.add_subparsers(dest="command", metavar="子命令")

    p = sub.add_parser("check", help="检查课程内容和检查点测验")
    p.add_argument("--json", action="store_true", help="以 JSON 输出课程结构和问题")
    p.set_defaults(func=cmd_check)

    guide = paths.shipped_content_dir() / "README.md"
    p = sub.add_parser("new", help="新建一门课程（作者用）：一章、一个检查点测验、附录和路线，马上能通过 check 和 verify",
                       description=f"新建一门课程。作者指南（课程格式的全部写法）：{guide}")
    p.add_argument("dir", metavar="DIR", help="新课程的目录（不能已经存在，或者是空目录）")
    p.add_argument("--id", metavar="ID", help="课程 id（默认是目录名加一段随机后缀，如 course-3f9a1c：进度记在它名下）")
    p.set_defaults(func=_delegate("torchcourse.scaffold", "cmd_new"))

    p = sub.add_parser("locate", help="显示数据、缓存和课程内容所在的路径")
    p.add_argument("--json", action="store_true", help="以 JSON 输出")
    p.set_defaults(func=cmd_locate)

    p = sub.add_parser("progress", help="显示学习进度")
    p.add_argument("--json", action="store_true", help="以 JSON 输出")
    p.set_defaults(func=_delegate("torchcourse.progress.cli", "cmd_progress"))

    p = sub.add_parser("reset", help="清除进度（除非加 --yes，否则先问一句）")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--chapter", metavar="ID", help="只清除这一章")
    g.add_argument("--all", action="store_true", help="清除全部进度")
    p.add_argument("--yes", action="store_true", help="不再确认")
    p.set_defaults(func=_delegate("torchcourse.progress.cli", "cmd_reset"))

    p = sub.add_parser("export", help="把进度导出成 JSON 文件（- 表示标准输出）")
    p.add_argument("file", metavar="FILE", help="要写入的文件；- 表示输出到标准输出")
    p.add_argument("--force", action="store_true", help="文件已经存在时直接覆盖（不加就先问一句）")
    p.set_defaults(func=_delegate("torchcourse.progress.cli", "cmd_export"))

    p = sub.add_parser("import", help="从 JSON 文件合并进度（原有进度都保留）")
    p.add_argument("file", metavar="FILE", help="torchcourse export 写出的文件；- 表示从标准输入读")
    p.set_defaults(func=_delegate("torchcourse.progress.cli", "cmd_import"))

    p = sub.add_parser("run", help="运行一个代码块（章:代码块），和预期输出对比")
    p.add_argument("snippet", metavar="CHAPTER:SNIPPET", nargs="?", help="如 01:view-shares")
    p.add_argument("--cold", action="store_true", help="在全新的解释器里运行（不用预热的运行器）")
    p.add_argument("--no-cache", action="store_true", help="不用缓存的结果，重新运行")
    p.add_argument("--file", metavar="PATH", help="运行你自己的文件代替这个代码块（同样的运行条件），和它的预期输出对比")
    p.add_argument("--sandbox", metavar="FILE", help="在多人课堂用的沙箱里运行 FILE（只读的系统、没有网络、只能写自己的运行目录），打印它的输出")
    p.add_argument("--python", metavar="PATH", help="用这个 Python 解释器（比如装了另一个 torch 版本的虚拟环境）运行代码块")
    p.set_defaults(func=_run_snippet_or_file)

    p = sub.add_parser("verify", help="运行所有代码块，和预期输出逐一对比")
    p.add_argument("chapters", nargs="*", metavar="CHAPTER[:SNIPPET]", help="只检查这些章（默认全部）；章:代码块 只检查这一个代码块，如 01:view-error")
    p.add_argument("--jobs", type=_jobs, default=2, help="同时运行几个（默认 2）")
    p.add_argument("--cold", action="store_true", help="每个代码块都在全新的解释器里运行")
    p.add_argument("--no-cache", action="store_true", help="不用缓存的结果")
    p.add_argument("--json", action="store_true", help="以 JSON 输出")
    p.add_argument("--accept", action="store_true", help="用真实运行的输出改写预期输出（作者用）")
    p.add_argument("--python", metavar="PATH", help="用这个 Python 解释器运行代码块（维护者用：另一个 torch 版本的虚拟环境）；配 --accept 写入那个版本的输出备选块")
    p.add_argument("--drift", action="store_true", help="维护者用：逐段报告和书里记录的是否一样（same / differs, recorded / differs, new）并给出差异；不写文件")
    p.set_defaults(func=_delegate("torchcourse.runner.cli", "cmd_verify"))

    p = sub.add_parser("doctor", help="Python/torch 版本、路径、预热运行器的延迟")
    p.set_defaults(func=_delegate("torchcourse.runner.cli", "cmd_doctor"))

    p = sub.add_parser("serve", help="在浏览器里读教程（同一套课程和进度；默认只对本机开放，网址带令牌）")
    p.add_argument("--host", default="127.0.0.1", help="监听的地址（默认 127.0.0.1；别的地址要有 --users 名单或环境变量 TORCHCOURSE_TOKEN）")
    p.add_argument("--port", type=int, default=8000, help="端口（默认 8000；0 表示随便一个空闲端口）")
    p.add_argument("--users", metavar="FILE", help="多人课堂：学员名单（TOML，每行 名字 = \"令牌\"）；每个学员的进度放在自己的目录里")
    p.add_argument("--add-user", metavar="NAME", help="往 --users 名单里加一个学员（生成新令牌），打印他的网址后退出")
    p.add_argument("--data-root", metavar="DIR", help="学员数据目录的上一级（默认是名单旁边的 <名单名>-data/）")
    p.add_argument("--hub", action="store_true", help="在 JupyterHub 里由 jupyter-server-proxy 启动（JupyterLab 启动器里的「拆开 PyTorch」）：不用令牌，由 Jupyter 的登录把关；见 docs/jupyterhub.md")
    p.add_argument("--unix-socket", metavar="PATH", help="和 --hub 一起用：监听这个 Unix 套接字，而不是端口")
    p.set_defaults(func=_delegate("torchcourse.serve.cli", "cmd_serve"))

    p = sub.add_parser("class", help="老师用：全班的进度表（读完的章、已读分钟、测验得分、最后活动）")
    csub = p.add_subparsers(dest="class_command", required=True)
    p = csub.add_parser("report", help="全班一张表；--csv 给表格软件")
    p.add_argument("--users", metavar="FILE", help="serve --users 的学员名单（读每人数据目录里的进度）")
    p.add_argument("--data-root", metavar="DIR", help="学员数据目录的上一级（默认是名单旁边的 <名单名>-data/）")
    p.add_argument("--progress-dir", metavar="DIR", help="学员用 torchcourse export 导出的进度文件（每人一个 .json，文件名当名字）")
    p.add_argument("--csv", action="store_true", help="输出 CSV")
    p.set_defaults(func=_delegate("torchcourse.serve.cli", "cmd_class_report"))
    p = csub.add_parser("reset", help="清除一个学员的进度：先结束他打开的会话（serve 运行中也行）")
    p.add_argument("name", metavar="NAME", help="学员名字（名单里的）")
    p.add_argument("chapter", nargs="?", metavar="CHAPTER", help="只清除这一章（如 01）")
    p.add_argument("--all", action="store_true", help="清除全部进度")
    p.add_argument("--yes", action="store_true", help="不再确认")
    p.add_argument("--users", metavar="FILE", required=True, help="serve --users 的学员名单")
    p.add_argument("--data-root", metavar="DIR", help="学员数据目录的上一级（默认是名单旁边的 <名单名>-data/）")
    p.set_defaults(func=_delegate("torchcourse.serve.cli", "cmd_class_reset"))

    p = sub.add_parser("why", help="反查一段报错：哪一章哪一节讲它")
    p.add_argument("text", nargs="+", metavar="TEXT", help="报错原文；- 表示从标准输入读")
    p.add_argument("--json", action="store_true", help="以 JSON 输出")
    p.set_defaults(func=_delegate("torchcourse.lookup.cli", "cmd_why"))

    p = sub.add_parser(
        "quiz", help="在普通终端里做一章的检查点测验",
        description="在普通终端里做一章的检查点测验，每行输入回答一题。选项的顺序每次测验都重新打乱，序号按显示的顺序从 1 数起。",
    )
    p.add_argument("chapter", metavar="CHAPTER", help="章节编号，如 01")
    p.add_argument("--seed", type=_seed, metavar="N",
                   help="用固定的种子 N（0 到 2147483647 的整数）打乱选项：同一个 N 每次顺序相同，脚本化作答可以复现")
    p.add_argument("--resume", action="store_true", help="接着上次没做完的测验，从第一道没答的题继续（已答的题计入得分）")
    p.add_argument("--wrong", action="store_true", help="只重做最近一次答错（或没答）的题；答对的题按最近一次作答计入得分")
    p.set_defaults(func=_delegate("torchcourse.quiz.cli", "cmd_quiz"))
    return parser


def _interrupt_on_term_and_hup() -> None:
    """SIGTERM and SIGHUP (terminal closed) end a command like Ctrl+C does: its `finally` blocks
    run, so snippets are killed and run directories removed."""
    import signal

    def interrupt(signum, _frame):
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, interrupt)
        except (ValueError, OSError):  # not the main thread
            pass


def _closed_stdin_reads_as_empty() -> None:
    """Started with stdin closed (``<&-``), Python sets ``sys.stdin`` to None: every command then
    reads it as an empty stream (``/dev/null``), so it answers with its own message for empty
    input instead of an AttributeError."""
    if sys.stdin is None:
        import os

        try:
            sys.stdin = open(os.devnull, encoding="utf-8")
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        from torchcourse.app_entry import start_app

        return start_app(args)
    _interrupt_on_term_and_hup()
    _closed_stdin_reads_as_empty()
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("\n已中断。", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
