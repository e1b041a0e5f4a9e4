"""The app's snippet runner, built on first use: :class:`LazyRunner` wraps the real
:class:`torchcourse.runner.Runner` (created by :func:`default_runner_factory`), so that home never
pays for it and a chapter can start its warm process in the background. No Textual here."""

from __future__ import annotations

import threading
from typing import Callable


class LazyRunner:
    """Builds the real runner on the first snippet run (thread-safe); same ``run``/``close`` API."""

    def __init__(self, factory: Callable[[], object]) -> None:
        self._factory = factory
        self._runner = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._runner is not None

    # "idle" (nothing asked yet), "prestart" (asked), "starting" (torch loading in the warm
    # process), "ready", "cold" (no warm process: each run starts its own interpreter)
    state = "idle"

    def prestart(self, on_change: Callable[[str], None] | None = None) -> None:
        """Build the runner and start its warm process in a background thread, so that the first
        run does not wait for torch to load (called when a chapter opens: home pays nothing).
        ``on_change(state)`` is called from that thread when the state changes."""
        if self.state != "idle":
            return
        self.state = "prestart"

        def say(state: str) -> None:
            self.state = state
            if on_change is not None:
                on_change(state)

        def start() -> None:
            try:
                runner = self.get()
                if not getattr(runner, "warm", False):  # every run is a fresh interpreter: nothing to warm
                    say("cold")
                    return
                say("starting")
                runner.start()
                say("ready")
            except Exception:
                say("cold")

        threading.Thread(target=start, name="tc-runner-prestart", daemon=True).start()

    def get(self):
        with self._lock:
            if self._runner is None:
                self._runner = self._factory()
            return self._runner

    def run(self, snippet, **kwargs):
        return self.get().run(snippet, **kwargs)

    def close(self) -> None:
        with self._lock:
            runner, self._runner = self._runner, None
        if runner is not None:
            runner.close()


def default_runner_factory(course_id: str, preload: tuple[str, ...] | None = None, data: tuple[str, ...] = (),
                           recorded: dict | None = None):
    """The app's runner: the class's shared runner when ``TORCHCOURSE_CLASS_RUNNER`` names its
    socket (the learner from ``TORCHCOURSE_LEARNER``; its output cache in this learner's own cache
    directory), else a Runner of this app's own."""
    from torchcourse import paths

    from torchcourse.runner.classroom_client import client_from_env

    client = client_from_env(cache_dir=paths.run_cache_dir(course_id), preload=preload, recorded=recorded, data=data)
    if client is not None:
        return client
    from torchcourse.runner import Runner

    return Runner(cache_dir=paths.run_cache_dir(course_id), warm=True, preload=preload, data=data, recorded=recorded)
