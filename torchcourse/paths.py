"""The one module that owns every path torchcourse reads or writes.

- ``TORCHCOURSE_HOME`` relocates data and cache together (``$HOME/data``, ``$HOME/cache``).
- Otherwise platformdirs' per-user data and cache directories are used.
- ``TORCHCOURSE_CONTENT`` (or ``--content DIR``) points at another course root: a folder
  holding ``course.toml``; default is the course shipped with the package.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "torchcourse"
HOME_ENV = "TORCHCOURSE_HOME"
CONTENT_ENV = "TORCHCOURSE_CONTENT"

_PKG = Path(__file__).resolve().parent


def home_override() -> Path | None:
    value = os.environ.get(HOME_ENV)
    return Path(value).expanduser().resolve() if value else None


def data_dir() -> Path:
    home = home_override()
    if home is not None:
        return home / "data"
    from platformdirs import user_data_path

    return user_data_path(APP_NAME, appauthor=False)


def cache_dir() -> Path:
    home = home_override()
    if home is not None:
        return home / "cache"
    from platformdirs import user_cache_path

    return user_cache_path(APP_NAME, appauthor=False)


def run_cache_dir(course_id: str) -> Path:
    """Cached snippet outputs of one course (each course keeps its own)."""
    return cache_dir() / "runs" / course_id


def database_path() -> Path:
    return data_dir() / "progress.sqlite3"


def shipped_content_dir() -> Path:
    """The course shipped with the package (wheel) or sitting in the source tree (editable)."""
    installed = _PKG / "_course" / "content"
    if (installed / "course.toml").is_file():
        return installed
    return _PKG.parent / "content"


def content_dir(override: str | os.PathLike[str] | None = None) -> Path:
    if override:
        return Path(override).expanduser().resolve()
    env = os.environ.get(CONTENT_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return shipped_content_dir()


_OS_REASONS = {
    "ENOENT": "没有这个文件或目录",
    "EISDIR": "这是一个目录，不是文件",
    "ENOTDIR": "路径中有一段不是目录",
    "EACCES": "没有权限",
    "EPERM": "不允许这样操作",
    "EROFS": "文件系统是只读的",
    "ENOSPC": "磁盘满了",
    "EDQUOT": "超出了磁盘配额",
    "EEXIST": "已经存在",
    "ENAMETOOLONG": "文件名太长",
    "ELOOP": "符号链接绕成了环",
    "EIO": "读写出错（EIO）",
    "EBADF": "文件已关闭",
}


def os_reason(exc: BaseException) -> str:
    """Why an ``OSError`` (or a decode error) happened, in the learner's language: the message
    of the errno's name (``ENOENT`` → 没有这个文件或目录), else the system's own words with the
    errno's name so that it can still be looked up."""
    if isinstance(exc, UnicodeDecodeError):
        return f"不是 UTF-8 文本（第 {exc.start + 1} 个字节是 0x{exc.object[exc.start]:02x}）"
    import errno

    name = errno.errorcode.get(getattr(exc, "errno", None) or -1)
    if name in _OS_REASONS:
        return _OS_REASONS[name]
    detail = getattr(exc, "strerror", None) or str(exc)
    return f"{detail}（{name}）" if name else detail
