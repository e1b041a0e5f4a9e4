"""Helpers shared by the command-line modules (below every ``*/cli.py``, above the features).

Load the course named by ``--content`` (or the shipped one) and the chapter named on the command
line, or exit with a clear message — in one place, for every command.
"""

from __future__ import annotations

import sys

from torchcourse import paths


def course_or_exit(args, *, need_chapters: bool = True, cached: bool = False):
    """The course for a subcommand; exits 2 with ``file:line: message`` when it cannot serve.

    With ``cached`` the course comes from the app's cache of parsed chapters when none of its files
    changed (``torchcourse why`` answers in a fraction of the parse time).

    With ``need_chapters`` a course.toml that yields no chapter at all (malformed TOML, no
    ``[[chapters]]``) stops here with its own problems, instead of every chapter id on the
    command line being reported as unknown.
    """
    from torchcourse.course import CourseError, load_course

    root = paths.content_dir(getattr(args, "content", None))
    try:
        # cached: the app's parsed-course cache (a warm start reads one snapshot instead of parsing)
        course = load_course(root, cache_dir=paths.cache_dir() if cached else None)
    except CourseError as exc:
        print(f"torchcourse: {exc}", file=sys.stderr)
        raise SystemExit(2)
    if need_chapters and not course.chapters:
        for problem in course.problems:
            print(f"torchcourse: {problem}", file=sys.stderr)
        print(f"torchcourse: {root / 'course.toml'} 里没有一章可用（torchcourse check 列出全部问题）", file=sys.stderr)
        raise SystemExit(2)
    return course


def chapter_or_exit(course, text: str, command: str, *, written: bool = True):
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


def snippet_or_exit(course, key: str, command: str = "run"):
    """The snippet named ``CHAPTER:SNIPPET`` on the command line; exits 2 naming the form, the
    chapter or the snippets that exist when there is none."""
    if ":" not in key:
        print(f"torchcourse {command}: 要写成 章:代码块，例如 01:view-error（收到的是 {key!r}）", file=sys.stderr)
        raise SystemExit(2)
    cid, _, sid = key.partition(":")
    ch = chapter_or_exit(course, cid, command)
    snip = ch.snippet(sid)
    if snip is None:
        ids = "、".join(s.id for s in ch.snippets) or "（没有）"
        print(f"torchcourse {command}: 第 {ch.id} 章没有代码块 {sid!r}。这一章的代码块：{ids}", file=sys.stderr)
        raise SystemExit(2)
    return snip


def course_or_none(args):
    """The course model for titles and order; None (with a note) when it cannot be loaded — for
    commands that still work without it (``progress``)."""
    from torchcourse.course import CourseError, load_course

    try:
        return load_course(paths.content_dir(getattr(args, "content", None)))
    except CourseError as exc:
        print(f"torchcourse: 无法读取课程（{exc}），只显示章节编号。", file=sys.stderr)
        return None


__all__ = ["course_or_exit", "chapter_or_exit", "snippet_or_exit", "course_or_none"]
