"""``serve --hub``: the server jupyter-server-proxy starts in a JupyterHub user's server
(see torchcourse/serve/hub.py for how access works there)."""

from __future__ import annotations

from aiohttp import web

from torchcourse.serve.hub import export_progress
from torchcourse.serve.server import NO_STORE, SECURITY_HEADERS, STATIC_CACHE, CourseServer


class HubCourseServer(CourseServer):
    """``serve --hub``: one learner (the hub user), behind jupyter-server-proxy, on a Unix socket.

    The Jupyter server in front decides who gets in (the hub's login and its own origin checks on
    the websocket), so every request that reaches this socket is the user's own."""

    def __init__(self, argv: list[str], *, title: str, unix_socket: str | None, port: int = 0) -> None:
        import secrets

        super().__init__(argv, token=secrets.token_urlsafe(32), title=title, port=port)
        self.unix_socket = unix_socket

    def learner(self, request: web.Request) -> str | None:
        return ""

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        request["learner"] = ""
        response = await handler(request)
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        cacheable = request.path.startswith(("/static/", "/favicon"))
        response.headers.setdefault("Cache-Control", STATIC_CACHE if cacheable else NO_STORE)
        return response

    def make_site(self, runner: web.AppRunner):
        if self.unix_socket:
            return web.UnixSite(runner, self.unix_socket)
        return super().make_site(runner)

    def bound_port(self, site) -> int:
        if self.unix_socket:
            return 0
        return super().bound_port(site)

    async def _end(self, service, websocket) -> None:
        await super()._end(service, websocket)
        await export_progress(self.argv, self.learner_env(""))
