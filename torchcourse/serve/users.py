"""A class's learners: the users file (TOML, learner name → token) and each learner's data directory.

The file, one line per learner::

    # torchcourse serve --users class.toml
    alice = "Zq3…"          # at least 16 characters, no whitespace
    "张三" = "k9P…"          # a name that is not a bare TOML key is quoted

A name becomes a directory name (the learner's ``TORCHCOURSE_HOME`` is ``<data root>/<name>``),
so it is letters and digits of any script, ``_``, ``-`` and ``.`` (not first), at most 64
characters. Two learners never share a name or a token (a token names its learner). Every problem
is reported as ``FILE:LINE: 问题`` in Chinese; nothing here imports aiohttp.

The data root is ``<users file's directory>/<users file's stem>-data`` unless ``--data-root``
says otherwise: ``class.toml`` → ``class-data/alice/``.
"""

from __future__ import annotations

import os
import re
import secrets
import tomllib
from pathlib import Path

from torchcourse.serve.access import MIN_TOKEN_CHARS

MAX_NAME_CHARS = 64
HOLD_FILE = "serve-hold"  # <data root>/<name>/serve-hold: serve ends that learner's sessions and refuses them
_KEY = re.compile(r"""^\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*=""")
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


class UsersError(ValueError):
    """The users file cannot be used; the message is ``FILE:LINE: 问题`` (Chinese)."""


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a learner's name (a directory name), or None."""
    if not name:
        return "学员名字是空的"
    if len(name) > MAX_NAME_CHARS:
        return f"学员名字太长（{len(name)} 个字符，最多 {MAX_NAME_CHARS} 个）"
    if name[0] in ".-":
        return f"学员名字 {name!r} 不能以 {name[0]!r} 开头（它要当目录名用）"
    bad = sorted({c for c in name if not (c.isalnum() or c in "_-.")})
    if bad:
        shown = "、".join(repr(c) for c in bad)
        return f"学员名字 {name!r} 里有不能放进目录名的字符 {shown}（只能用字母、数字、汉字、_、-、.）"
    return None


def token_problem(token: object) -> str | None:
    if not isinstance(token, str):
        return f"令牌要写成带引号的字符串（收到的是 {type(token).__name__}）"
    if len(token) < MIN_TOKEN_CHARS:
        return f"令牌太短（{len(token)} 个字符，至少 {MIN_TOKEN_CHARS} 个）"
    if any(c.isspace() for c in token):
        return "令牌里有空白字符"
    return None


def _key_lines(text: str) -> list[tuple[int, str]]:
    """(line number, key) of each ``key = …`` line, as written (for messages that name the line)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        m = _KEY.match(line)
        if m:
            key = m.group(1) if m.group(1) is not None else m.group(2) if m.group(2) is not None else m.group(3)
            if m.group(1) is not None:
                try:
                    key = tomllib.loads(f"k = \"{key}\"")["k"]  # the escapes as TOML reads them
                except tomllib.TOMLDecodeError:
                    pass
            out.append((n, key))
    return out


def load_users(path: Path) -> dict[str, str]:
    """Learner name → token, in file order; :class:`UsersError` names the file and line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        from torchcourse.paths import os_reason

        raise UsersError(f"{path}: 读不了学员名单：{os_reason(exc)}（用 torchcourse serve --add-user 名字 --users {path} 新建）") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise UsersError(f"{path}:{line}: 不是 UTF-8 文本") from None
    lines = _key_lines(text)
    seen: dict[str, int] = {}
    for n, key in lines:  # before tomllib, whose duplicate-key error is English and vague
        if key in seen:
            raise UsersError(f"{path}:{n}: 学员 {key!r} 重复了（第 {seen[key]} 行已经有这个名字）")
        seen[key] = n
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"at line (\d+)", str(exc))
        where = f"{path}:{m.group(1)}" if m else str(path)
        from torchcourse.course.loader import toml_reason

        raise UsersError(f"{where}: 不是合法的 TOML（{toml_reason(exc)}）；每行写成 名字 = \"令牌\"") from None
    line_of = {key: n for n, key in lines}
    users: dict[str, str] = {}
    owner: dict[str, str] = {}
    for name, token in data.items():
        where = f"{path}:{line_of.get(name, 1)}"
        if isinstance(token, dict):
            raise UsersError(f"{where}: [{name}] 是一个表；学员名单每行写成 名字 = \"令牌\"，不用表")
        problem = name_problem(name) or token_problem(token)
        if problem:
            raise UsersError(f"{where}: {problem}")
        if token in owner:
            raise UsersError(f"{where}: 学员 {name!r} 的令牌和 {owner[token]!r} 的一样（每人的令牌必须不同：令牌决定打开谁的进度）")
        owner[token] = name
        users[name] = token
    if not users:
        raise UsersError(f"{path}:1: 学员名单是空的（用 torchcourse serve --add-user 名字 --users {path} 加一个）")
    return users


def default_data_root(users_file: Path) -> Path:
    users_file = Path(users_file).expanduser().resolve()
    return users_file.with_name(f"{users_file.stem}-data")


def learner_home(data_root: Path, name: str) -> Path:
    """The learner's ``TORCHCOURSE_HOME`` (progress in ``data/``, snippet cache in ``cache/``)."""
    return Path(data_root) / name


def _toml_key(name: str) -> str:
    if _BARE.match(name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add_user(path: Path, name: str) -> str:
    """Add ``name`` with a fresh random token (the file is created with mode 0600); returns it."""
    path = Path(path)
    problem = name_problem(name)
    if problem:
        raise UsersError(f"{path}: {problem}")
    existing: dict[str, str] = {}
    if path.exists():
        existing = load_users(path) if path.stat().st_size else {}
        if name in existing:
            line = dict((k, n) for n, k in _key_lines(path.read_text(encoding="utf-8"))).get(name, 1)
            raise UsersError(f"{path}:{line}: 学员 {name!r} 已经在名单里了（要换令牌就删掉这一行再加一次）")
    token = secrets.token_urlsafe(24)
    while token in existing.values():  # pragma: no cover (2**192 tokens)
        token = secrets.token_urlsafe(24)
    line = f"{_toml_key(name)} = \"{token}\"\n"
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write("# torchcourse serve --users 的学员名单：每行 名字 = \"令牌\"（令牌就是进门的钥匙，别外传）\n")
                f.write(line)
        else:
            text = path.read_text(encoding="utf-8")
            with open(path, "a", encoding="utf-8") as f:
                f.write(("" if not text or text.endswith("\n") else "\n") + line)
    except OSError as exc:
        from torchcourse.paths import os_reason

        raise UsersError(f"{path}: 写不了学员名单：{os_reason(exc)}") from None
    return token


def file_mode_problem(path: Path) -> str | None:
    """A users file others can read lets them in as anyone: say so (POSIX only)."""
    if os.name != "posix":
        return None
    mode = Path(path).stat().st_mode & 0o777
    if mode & 0o077:
        return f"{path}: 学员名单的权限是 {mode:o}，别的用户也能读到所有人的令牌；改成只有你能读：chmod 600 {path}"
    return None
