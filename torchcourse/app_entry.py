"""Start the Textual app; kept apart so ``torchcourse --help`` never imports textual."""

from __future__ import annotations


def start_app(args) -> int:
    from torchcourse.tui.app import run_app

    return run_app(args)
