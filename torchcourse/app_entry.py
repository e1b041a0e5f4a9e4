"""Start the Textual app; kept apart so ``torchcourse --help`` never imports textual."""

from __future__ import annotations

import sys

_TUI_MODULES = ("torchcourse.tui", "torchcourse.tui.app")


NOT_A_TERMINAL = (
    "torchcourse：全屏界面要在终端里运行，但{what}不是终端（被重定向或接了管道）。\n"
    "不开界面也能用这些命令：\n"
    "  torchcourse progress         看进度（--json 给程序读）\n"
    "  torchcourse run 01:ID        运行一段代码，和书上的输出对照\n"
    "  torchcourse quiz 01          做第 01 章的检查点测验\n"
    "  torchcourse why -            从标准输入读一段报错，找讲它的那一节\n"
    "全部命令：torchcourse --help"
)


def start_app(args) -> int:
    import gc

    gc.disable()  # until the first frame (torchcourse.tui.gcpolicy.started says why)
    try:
        return _start_app(args)
    finally:
        gc.enable()  # the app turned it on at its first frame; this is for every other way out


def _start_app(args) -> int:
    try:
        from torchcourse.tui.app import run_app
    except ImportError as exc:
        # Only the UI package itself being absent falls back; any other import error is a bug.
        if exc.name not in _TUI_MODULES:
            raise
        print("（全屏界面还没有装好，先显示进度摘要；命令列表见 torchcourse --help）", file=sys.stderr)
        from torchcourse.progress.cli import cmd_progress

        args.json = False
        return cmd_progress(args)
    import os

    web = bool(os.environ.get("TEXTUAL_DRIVER"))  # a browser tab (serve): its pipes are the page
    not_tty = [] if web else [name for name, stream in (("标准输入", sys.stdin), ("标准输出", sys.stdout)) if not _is_tty(stream)]
    if not_tty:  # the app would draw to nowhere and wait for keys that never come (walk L8)
        print(NOT_A_TERMINAL.format(what="和".join(not_tty)), file=sys.stderr)
        return 2
    return run_app(args)


def _is_tty(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):  # closed
        return False
