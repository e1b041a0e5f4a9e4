"""Processes a test started, known by their pids: is one still running, wait for a state. Every
wait polls for the state; its cap only catches a hang (a loaded 2-core machine takes its time)."""

from __future__ import annotations

import time

import waiting


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, is not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_until(pred, what: str, cap: float | None = None, step: float = 0.05) -> None:
    waiting.wait_until(pred, what, deadline=cap, step=step)


def wait_dead(pid: int, seconds: float = 60.0) -> bool:
    """True once ``pid`` is gone (or a zombie); False if it still runs after ``seconds``."""
    end = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True
