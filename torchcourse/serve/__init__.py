"""``torchcourse serve``: the same app, course and progress in a browser tab, for one learner or,
with a users file, for a class (each learner their own progress; docs/classroom.md).

Built on textual-serve (pinned): its aiohttp server runs the app's command once per websocket and
draws the terminal stream with xterm.js from the assets in its wheel, so it works offline. This
package adds what a course served on a port needs:

- :mod:`torchcourse.serve.access` — the token (random per start, or ``TORCHCOURSE_TOKEN``) and
  the rule that a non-loopback host needs an explicit token; imported without aiohttp.
- :mod:`torchcourse.serve.server` — the aiohttp app: a middleware that refuses every request
  without the token (403, in Chinese), the page (the course's title, a font stack that draws CJK
  and the course's emoji, a favicon, nothing of the server's paths or environment), and one app
  process per tab that ends the way a closed terminal ends (SIGHUP: the reading place and the
  queued writes saved, every snippet stopped).
- :mod:`torchcourse.serve.users` — a class's users file (learner name → token; ``FILE:LINE``
  messages) and each learner's data directory; :mod:`torchcourse.serve.classroom` — the sandbox
  check a class needs and the class's one shared runner service (``serve --users``).
- :mod:`torchcourse.serve.cli` — ``cmd_serve`` for the command line and ``checks`` for ``doctor``.

Layers: this is a feature package; it imports textual_serve and aiohttp, never Textual's app or
``torchcourse.tui`` (the app runs in its own process, started as ``python -m torchcourse``).
"""
