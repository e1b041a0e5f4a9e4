"""Garbage collection in the UI process: no full collection in the middle of reading.

A full (generation-2) collection walks every object the process holds. With a chapter mounted
that is every widget, strip and cached line of it: on the ×4 synthetic chapter, headless, PgDn
took 6-35 ms except for pages that landed on a full collection, 179-330 ms each; loading that
chapter ran ten of them, 21-230 ms each, growing with the chapter. The shipped course's longest
chapter showed the same, smaller (PgDn's worst page moved between 47 and 71 ms from run to run).

So objects that live as long as the screen showing them are moved out of the collector's sight
(:func:`keep`, ``gc.freeze``: constant time) once they are mounted and rendered. They are still
freed by reference counting; only cycles among them wait. When the screen goes,
:func:`release_later` hands everything back and collects once nothing refers to the screen any
more, and then keeps what is left. Objects made later are collected as usual.
"""

from __future__ import annotations

import gc

_started = False


def keep_startup() -> None:
    """At start: everything alive after the imports (Textual, Rich, the course model) lives as
    long as the app; left in place, the first full collection (about 12 ms here) lands right
    before the home screen's first frame, scanning them all. Once per process."""
    global _started
    if not _started:
        _started = True
        gc.freeze()


def started() -> None:
    """The first frame is out: the collector runs again.

    ``torchcourse`` turns it off from its start to here (``app_entry.start_app``): importing
    Textual and the app makes some 62,000 tracked objects that live as long as the app, and the
    collector walked them again and again on the way (17 ms of the imports' CPU time at best,
    36 ms in the median of nine starts here). :func:`keep_startup` keeps them out of its walks
    from then on."""
    gc.enable()


def keep() -> None:
    """What is alive now stays alive while the screen is up: no full collection walks it.

    Collected first, so no garbage made since the last call is kept with it: that collection
    walks only what was made since (what is kept is not walked), about as much as the work
    that made it."""
    gc.collect()
    gc.freeze()


_closed: list = []  # weak references to screens closed and not yet collected


def release_later(screen, delay: float = 0.3) -> None:
    """``screen`` was closed: collect what it leaves (cycles included) once nothing refers to it
    any more, then keep the rest again.

    Not from the screen's own handlers: while they run, the screen is referenced by its message
    loop, by the message that scheduled the call and by the context variables of any task or
    timer made there. So the collection is a plain event-loop callback made with an empty
    context, a moment later; a screen still referenced then is tried again (everything stays
    unfrozen meanwhile, so an ordinary full collection may free it too)."""
    import asyncio
    import contextvars
    import weakref

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no event loop any more: the app is ending, nothing to keep tidy
        return
    _closed.append(weakref.ref(screen))
    loop.call_later(delay, _release, 0, context=contextvars.Context())


def _release(attempt: int) -> None:
    import asyncio
    import contextvars

    gc.unfreeze()
    gc.collect()
    _closed[:] = [ref for ref in _closed if ref() is not None]
    if _closed and attempt < 10:
        asyncio.get_running_loop().call_later(0.3, _release, attempt + 1, context=contextvars.Context())
        return
    _closed.clear()  # freed (or held by something for good: keeping it then is no worse)
    gc.freeze()
