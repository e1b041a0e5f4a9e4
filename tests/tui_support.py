"""Shared helpers (no tests) for the app's Pilot and snapshot tests: fixture course, tmp store, real runner."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
from datetime import date
from pathlib import Path

from torchcourse.course import load_course
from waiting import wait_for_app
from torchcourse.progress import open_store
from torchcourse.tui.app import make_app
from torchcourse.tui.reader import ReaderScreen

FIXTURE = Path(__file__).parent / "fixtures" / "tuicourse"
TODAY = date(2026, 3, 18)  # fixed, so the calendar in snapshots never moves
QUIZ_SEED = 1


def sync(coro_fn):
    """Run an async test body with asyncio.run (no pytest-asyncio needed)."""

    @functools.wraps(coro_fn)
    def wrapper(*args, **kwargs):
        asyncio.run(coro_fn(*args, **kwargs))

    return wrapper


def build_app(db: Path, course_root: Path = FIXTURE, cache: Path | None = None, warm: bool = False, python: str | None = None):
    """The real app on a real store and a real runner (cold by default: the fixture needs no torch)."""
    course = load_course(course_root)
    store, notice = open_store(db)

    def factory():
        from torchcourse.runner import Runner

        kwargs = {"python": python} if python else {}
        return Runner(cache_dir=cache, warm=warm, **kwargs)

    app = make_app(course, store, notice=notice, runner_factory=factory, today=TODAY)
    app.quiz_seed = QUIZ_SEED  # the quiz's choice order, fixed like the date: snapshots never move
    return app, store


@contextlib.asynccontextmanager
async def run_app(app, store, size: tuple[int, int] = (100, 30), *, notifications: bool = False, close_store: bool = True):
    """Run ``app`` (from :func:`build_app`) at ``size`` past its first refresh; yields the pilot.

    The store is closed when the block ends (``close_store=False``: the test asserts on it after
    the app quit, and closes it itself)."""
    try:
        async with app.run_test(size=size, notifications=notifications) as pilot:
            await pilot.pause()
            yield pilot
    finally:
        if close_store:
            store.close()


@contextlib.asynccontextmanager
async def started(db: Path, size: tuple[int, int] = (100, 30), *, notifications: bool = False, close_store: bool = True, **build):
    """:func:`build_app` on ``db`` (``build``: its other arguments) run by :func:`run_app`;
    yields ``(app, store, pilot)``."""
    app, store = build_app(db, **build)
    async with run_app(app, store, size, notifications=notifications, close_store=close_store) as pilot:
        yield app, store, pilot


def edited_course(tmp_path: Path, old: str, new: str, file: str = "01-box.md") -> Path:
    """A copy of the fixture course with ``old`` replaced by ``new`` in ``file``; returns its root."""
    root = tmp_path / "course"
    shutil.copytree(FIXTURE, root)
    md = root / file
    text = md.read_text(encoding="utf-8")
    assert old in text, old
    md.write_text(text.replace(old, new), encoding="utf-8")
    return root


async def open_palette(pilot) -> None:
    """Ctrl+P, and wait until the command palette is on screen."""
    from textual.command import CommandPalette

    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, CommandPalette), what="the palette")


async def home(pilot, app):
    """Wait until the home screen is back and every queued write has landed (then a missing row is missing)."""
    from torchcourse.tui.screens.home import HomeScreen

    await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")
    await wait_for(pilot, app.writer.idle, what="the queued writes")
    await pilot.pause()
    return app.screen


def shown_key(app, *file_indexes) -> list[str]:
    """The number keys that pick these choices (the quiz file's indexes from 0) of the question
    on the quiz screen, in the order this attempt shows them."""
    from torchcourse.quiz.order import shown_numbers

    s = app.screen.session
    return [str(n) for n in shown_numbers(s.order(*s.current), file_indexes)]


async def wait_for(pilot, predicate, timeout: float | None = None, what: str = "condition", fail=None) -> None:
    """Poll ``predicate`` between refreshes until it holds (tests/waiting.py: one deadline policy;
    on failure the error shows the screen as it was)."""
    app = getattr(pilot, "app", None)
    await wait_for_app(pilot, predicate, what, deadline=timeout, fail=fail,
                       state=(lambda: screen_text(app)) if app is not None else None)


def screen_text(app) -> str:
    """Everything currently painted on the terminal, as plain text (what the learner sees)."""
    update = app.screen._compositor.render_update(full=True)
    # a no-break space (cjkwrap.GLUE: a phrase kept on one line) looks like a space
    return "\n".join("".join(seg.text for seg in strip) for strip in update.strips).replace("\u00a0", " ")


def widget_text(widget) -> str:
    """The text a Static-like widget shows."""
    content = getattr(widget, "content", None)
    if content is None:
        content = widget.render()
    return str(content)


def link_cell(app, href: str) -> tuple[int, int] | None:
    """Screen cell (x, y) of the first painted character of the clickable link to ``href``."""
    update = app.screen._compositor.render_update(full=True)
    for y, line in enumerate(update.strips):
        x = 0
        for seg in (seg for chop in line for seg in chop):  # a line is its chops (Strips), left to right
            style = seg.style
            meta = style.meta if style is not None and style._meta is not None else {}
            if seg.text.strip() and f"follow_link({href!r})" in str(meta.get("@click", "")):
                return x, y
            x += seg.cell_length
    return None


def reader(app) -> ReaderScreen:
    """The reader on screen (fails naming what is on screen instead)."""
    assert isinstance(app.screen, ReaderScreen), f"expected the reader, got {app.screen!r}"
    return app.screen


async def open_loaded_reader(pilot, app, chapter_id: str) -> ReaderScreen:
    """Wait until chapter ``chapter_id`` is on screen and all of it is mounted."""
    # a new reader of another chapter is a wrong state: fail at once, naming it, not at the deadline
    start = app.screen
    await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen) and app.screen.chapter.id == chapter_id, what=f"reader {chapter_id}",
                   fail=lambda: app.screen is not start and isinstance(app.screen, ReaderScreen) and app.screen.chapter.id != chapter_id)
    await wait_for(pilot, lambda: app.screen.loaded, what="all parts mounted")
    await pilot.pause()
    return app.screen


async def open_reader(pilot, chapter_id: str) -> ReaderScreen:
    """Open a chapter as a link or the palette would, and wait until all of it is mounted."""
    pilot.app.open_chapter(chapter_id)
    return await open_loaded_reader(pilot, pilot.app, chapter_id)
