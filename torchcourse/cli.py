"""The ``torchcourse`` command. No subcommand starts the app; subcommands are listed in --help.

Imports are lazy: the start-up path loads only what the chosen subcommand needs, and nothing
here imports torch (snippets run in their own processes).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from torchcourse import __version__, paths


def _course(args, *, need_chapters: bool = True):
    """The course for a subcommand; exits 2 with ``file:line: message`` when it cannot serve.

    With ``need_chapters`` a course.toml that yields no chapter at all (malformed TOML, no
    ``[[chapters]]``) stops here with its own problems, instead of every chapter id on the
    command line being reported as unknown.
    """
    from torchcourse.course import CourseError, load_course

    root = paths.content_dir(getattr(args, "content", None))
    try:
        course = load_course(root)
    except CourseError as exc:
        print(f"torchcourse: {exc}", file=sys.stderr)
        raise SystemExit(2)
    if need_chapters and not course.chapters:
        for problem in course.problems:
            print(f"torchcourse: {problem}", file=sys.stderr)
        print(f"torchcourse: {root / 'course.toml'} lists no usable chapter (torchcourse check shows every problem)", file=sys.stderr)
        raise SystemExit(2)
    return course


def chapter_arg(course, text: str, command: str, *, written: bool = True):
    """The chapter named on the command line (``1`` finds ``01``); exits 2 naming the value and
    the known chapters when there is none, or (``written``) when it is not written yet."""
    chapter = course.find_chapter(text)
    if chapter is None:
        known = "、".join(c.id for c in course.chapters)
        print(f"torchcourse {command}: 没有这一章：{text!r}。已有的章节：{known}", file=sys.stderr)
        raise SystemExit(2)
    if written and not chapter.available:
        print(f"torchcourse {command}: 第 {chapter.id} 章「{chapter.title}」（{chapter.file.name}）还没有写好。", file=sys.stderr)
        raise SystemExit(2)
    return chapter


def cmd_check(args) -> int:
    from torchcourse.course.check import all_problems, shape

    course = _course(args, need_chapters=False)
    problems = all_problems(course)
    if args.json:
        print(json.dumps(shape(course, problems), ensure_ascii=False, indent=2))
    else:
        for p in problems:
            print(p)
        written = [c for c in course.chapters if c.available]
        snippets = sum(len(c.snippets) for c in written)
        print(
            f"{len(course.chapters)} chapters ({len(written)} written), {snippets} snippets, "
            f"{len(course.routes)} routes: {len(problems)} problem(s)"
        )
    return 1 if problems else 0


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="torchcourse", description="PyTorch 内部原理终端教程 / a terminal course on how PyTorch works")
    parser.add_argument("--version", action="version", version=f"torchcourse {__version__}")
    parser.add_argument("--content", metavar="DIR", help="course root holding course.toml (default: the shipped course; env TORCHCOURSE_CONTENT)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("check", help="validate content and checkpoints")
    p.add_argument("--json", action="store_true", help="print the course's shape and problems as JSON")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("locate", help="print the data, cache and content paths")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_locate)

    p = sub.add_parser("progress", help="print progress")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_delegate("torchcourse.progress.cli", "cmd_progress"))

    p = sub.add_parser("reset", help="forget progress (asks first unless --yes)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--chapter", metavar="ID")
    g.add_argument("--all", action="store_true")
    p.add_argument("--yes", action="store_true", help="do not ask")
    p.set_defaults(func=_delegate("torchcourse.progress.cli", "cmd_reset"))

    p = sub.add_parser("export", help="write progress to a JSON file")
    p.add_argument("file")
    p.set_defaults(func=_delegate("torchcourse.progress.cli", "cmd_export"))

    p = sub.add_parser("import", help="merge progress from a JSON file")
    p.add_argument("file")
    p.set_defaults(func=_delegate("torchcourse.progress.cli", "cmd_import"))

    p = sub.add_parser("run", help="run one snippet, CHAPTER:SNIPPET, and compare")
    p.add_argument("snippet", metavar="CHAPTER:SNIPPET")
    p.add_argument("--cold", action="store_true", help="a brand-new interpreter, no warm runner")
    p.add_argument("--no-cache", action="store_true")
    p.set_defaults(func=_delegate("torchcourse.runner.cli", "cmd_run"))

    p = sub.add_parser("verify", help="run every snippet and compare with its expected output")
    p.add_argument("chapters", nargs="*", metavar="CHAPTER")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--cold", action="store_true")
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--accept", action="store_true", help="rewrite expected outputs from real runs (authors)")
    p.set_defaults(func=_delegate("torchcourse.runner.cli", "cmd_verify"))

    p = sub.add_parser("doctor", help="versions, paths, warm-runner latency")
    p.set_defaults(func=_delegate("torchcourse.runner.cli", "cmd_doctor"))

    p = sub.add_parser("why", help="look up an error text: which chapter explains it")
    p.add_argument("text", nargs="+")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_delegate("torchcourse.lookup", "cmd_why"))

    p = sub.add_parser("quiz", help="take a chapter's checkpoint quiz in the plain terminal")
    p.add_argument("chapter", metavar="CHAPTER")
    p.set_defaults(func=_delegate("torchcourse.quiz.cli", "cmd_quiz"))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        from torchcourse.app_entry import start_app

        return start_app(args)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("\n已中断。", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
