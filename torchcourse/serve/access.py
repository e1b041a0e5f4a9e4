"""Who may open the served course: the token and the host rule (no aiohttp here)."""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets

TOKEN_ENV = "TORCHCOURSE_TOKEN"
MIN_TOKEN_CHARS = 16


class AccessError(ValueError):
    """The host/token combination cannot be served (the message says why, in Chinese)."""


def is_loopback(host: str) -> bool:
    """``localhost`` and loopback addresses (127.0.0.0/8, ::1); anything else reaches a network."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name other than localhost: it may resolve to any interface


def choose_token(host: str, environ=None) -> tuple[str, bool]:
    """The token to require and whether it came from the environment.

    Loopback: ``TORCHCOURSE_TOKEN`` if set, else a fresh random one. Any other host: only with a
    token the operator chose (the environment variable); a random token printed on a shared
    machine's console is not a decision anyone made (a users file is the classroom issue's).
    """
    environ = os.environ if environ is None else environ
    given = environ.get(TOKEN_ENV, "")
    if given:
        if len(given) < MIN_TOKEN_CHARS or any(c.isspace() for c in given):
            raise AccessError(f"环境变量 {TOKEN_ENV} 的值太短或含空白：至少 {MIN_TOKEN_CHARS} 个字符、不含空格（可用 python -c \"import secrets; print(secrets.token_urlsafe(24))\" 生成）。")
        return given, True
    if not is_loopback(host):
        raise AccessError(
            f"--host {host} 会让同一网络里的任何人都能打开教程、以你的身份运行代码；"
            f"要这样做，先在环境变量 {TOKEN_ENV} 里设一个令牌（至少 {MIN_TOKEN_CHARS} 个字符），"
            "把它只告诉该用的人。只在本机用就不要加 --host（默认只监听 127.0.0.1）。"
        )
    return secrets.token_urlsafe(24), False


def token_matches(candidate: str | None, token: str) -> bool:
    if not candidate:
        return False
    return hmac.compare_digest(candidate.encode("utf-8", "replace"), token.encode("utf-8"))
