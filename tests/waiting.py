"""The one way a test waits: poll for a state, with one deadline policy.

- A wait ends as soon as its state holds; its deadline only catches a hang. ``DEADLINE`` (180 s)
  is generous for a loaded 2-core machine; ``TORCHCOURSE_TEST_DEADLINE`` changes it for a run.
- A wait that can tell a wrong end state from "not yet" is given ``fail=``: it stops at once when
  that holds, instead of sitting out the whole deadline (a wrong state once cost 188 s).
- Either way the error names what was awaited and the last state it saw (``state=``: a callable
  whose text describes it, e.g. the screen's text).
"""

from __future__ import annotations

import asyncio
import os
import time

DEADLINE = float(os.environ.get("TORCHCOURSE_TEST_DEADLINE", "180"))
STEP = 0.05


def _failure(what: str, state, why: str) -> AssertionError:
    seen = ""
    if state is not None:
        try:
            seen = f"\nlast state seen:\n{str(state())[-3000:]}"
        except Exception as exc:  # noqa: BLE001 - the state itself may be gone
            seen = f"\n(the state could not be read: {exc!r})"
    return AssertionError(f"{why}: {what}{seen}")


def wait_until(pred, what: str, *, deadline: float | None = None, fail=None, state=None, step: float = STEP):
    """Poll ``pred()`` until it is truthy and return its value."""
    end = time.monotonic() + (DEADLINE if deadline is None else deadline)
    while True:
        value = pred()
        if value:
            return value
        if fail is not None and fail():
            raise _failure(what, state, "a wrong state was reached while waiting for")
        if time.monotonic() > end:
            raise _failure(what, state, "never happened")
        time.sleep(step)


async def wait_for_app(pilot, pred, what: str = "condition", *, deadline: float | None = None, fail=None, state=None):
    """The same between a Textual app's refreshes (``pilot.pause``)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + (DEADLINE if deadline is None else deadline)
    while True:
        if pred():
            return
        if fail is not None and fail():
            raise _failure(what, state, "a wrong state was reached while waiting for")
        if loop.time() > end:
            raise _failure(what, state, "timed out waiting for")
        await pilot.pause(STEP)
