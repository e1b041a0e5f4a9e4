"""What one client address can hold of serve: open connections, and how long a request's head may take.

- **Head wait**: aiohttp's keep-alive timer starts when a connection opens and runs while the
  connection waits for a complete request head, so ``keepalive_timeout=HEAD_WAIT`` closes a
  connection that sends nothing, or trickles its headers, after ``HEAD_WAIT`` seconds (a running
  request or an open websocket is not waiting and is never cut). An idle keep-alive connection
  between two requests closes after the same time; the browser simply opens another.
- **Connections per address**: at most ``MAX_CONNECTIONS_PER_ADDRESS`` open TCP connections from
  one address. At the cap, the address's oldest connection with no request running (one that
  sent nothing yet, trickles a head, or idles between requests) is closed to make room: a
  browser simply opens another when it needs one, and a client that holds connections without
  using them can no longer lock a whole classroom behind one NAT out. Failing that, the oldest
  whose response its client does not read (the kernel's buffers full, aiohttp's writing paused):
  such a request never ends, and 256 of them would lock every other client of the address out
  (the page's own files fit in the buffers; a response larger than them does not). Only when every one of them is running a request that
  moves (an open websocket is one) is the next answered ``503`` and closed before any of it is read. 60 learners with two tabs each hold about 200. A Unix socket
  (``serve --hub``, one learner's server behind JupyterHub's proxy) has no address and no cap.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

log = logging.getLogger("torchcourse.serve")

HEAD_WAIT = 15.0  # seconds a connection may take to send a request's head (or stay idle between requests)
MAX_CONNECTIONS_PER_ADDRESS = 256  # a class of 60 behind one NAT, two tabs and a few idle connections each, stays below

OVER_CAP = (
    "HTTP/1.1 503 Service Unavailable\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "Connection: close\r\n"
    "Retry-After: 15\r\n"
    "Content-Length: {length}\r\n\r\n"
)
OVER_CAP_TEXT = "503：这个地址同时打开的连接太多（上限 {limit} 个），请稍后再试。\n"


class ConnectionCap:
    """Counts the open connections of each client address on an aiohttp ``web.Server`` and refuses
    the ones over ``limit`` (wraps the server's ``connection_made`` / ``connection_lost``)."""

    def __init__(self, server, limit: int = MAX_CONNECTIONS_PER_ADDRESS) -> None:
        self.limit = limit
        self.open: Counter[str] = Counter()
        self._address_of: dict[object, str] = {}  # handler -> its address, in the order they came
        self._said: set[str] = set()  # addresses at the cap whose refusal is in the log already
        self._made, self._lost = server.connection_made, server.connection_lost
        server.connection_made = self.connection_made
        server.connection_lost = self.connection_lost

    def connection_made(self, handler, transport) -> None:
        self._made(handler, transport)
        peer = transport.get_extra_info("peername")
        if not isinstance(peer, tuple) or not peer:  # a Unix socket: one learner's proxy, no address
            return
        address = str(peer[0])
        if self.open[address] >= self.limit:
            mine = [h for h, a in self._address_of.items() if a == address]
            idle = next((h for h in mine if not getattr(h, "_request_in_progress", True)), None)
            if idle is None:  # a response its client does not read (writing paused): no use to anyone
                idle = next((h for h in mine if getattr(h, "writing_paused", False)), None)
            if idle is not None:
                self._forget(idle)
                idle.force_close()  # (its client opens another connection when it needs one)
            else:
                if address not in self._said:
                    self._said.add(address)
                    log.info("地址 %s 同时打开的连接到了上限（%d 个，都在处理请求），多出的连接答 503", address, self.limit)
                body = OVER_CAP_TEXT.format(limit=self.limit).encode()
                transport.write(OVER_CAP.format(length=len(body)).encode() + body)
                transport.pause_reading()  # none of it is read
                # closed once aiohttp's request loop for it has started: closed here, before that,
                # the loop found its connection gone and logged an AssertionError per refusal
                # (17 MB of log in 45 s from one client)
                loop = asyncio.get_running_loop()
                loop.call_soon(loop.call_soon, handler.force_close)
                return
        self.open[address] += 1
        self._address_of[handler] = address

    def _forget(self, handler) -> None:
        address = self._address_of.pop(handler, None)
        if address is not None:
            self.open[address] -= 1
            self._said.discard(address)
            if self.open[address] <= 0:
                del self.open[address]

    def connection_lost(self, handler, exc: BaseException | None = None) -> None:
        self._forget(handler)
        self._lost(handler, exc)

