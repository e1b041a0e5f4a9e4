"""Start the Textual app; kept apart so ``torchcourse --help`` never imports textual."""

from __future__ import annotations

import sys

_TUI_MODULES = ("torchcourse.tui", "torchcourse.tui.app")


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
    return run_app(args)
