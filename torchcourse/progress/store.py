"""The progress store: one SQLite database under the user data directory.

Guarantees (each is tested with real processes in ``tests/test_progress*.py``):

- WAL journal, ``synchronous=FULL``, a busy timeout, and every method is one transaction
  (writes take ``BEGIN IMMEDIATE``): two ``torchcourse`` processes writing at once lose
  nothing, and a process killed with SIGKILL mid-write leaves a consistent file holding
  every committed row.
- A corrupt or unreadable database file is never deleted: it is renamed aside with a
  timestamp, a fresh database is started, and ``open_store`` returns a notice naming
  where the old file went.
- A data directory that cannot be written raises :class:`StoreError` naming the directory.
- Schema upgrades run through :mod:`torchcourse.progress.schema` (``PRAGMA user_version``).
- One connection shared by threads (``check_same_thread=False``) behind a lock, so the UI
  may call from worker threads.

Times are stored as UTC ISO-8601 strings with microseconds; they come back as aware
datetimes. Days (activity, streak) are the local calendar days of those times.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from contextlib import contextmanager
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

from torchcourse.paths import os_reason
from torchcourse.progress.schema import CURRENT_VERSION, MIGRATIONS, SHIPPED_COURSE_ID, backfill_parts

BUSY_TIMEOUT_S = 30.0
EXPORT_FORMAT = "torchcourse-progress"
EXPORT_VERSION = 4  # 2: the file names its course ("course"); version 1 files carry none; 3: "edits"; 4: "parts_read"

# SQLite primary result codes that mean "this file is not a usable database".
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_SQLITE_CANTOPEN = 14
_SQLITE_IOERR = 10
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


class StoreError(Exception):
    """A problem the learner must act on; the message is ready to print (in Chinese, once)."""


class _Busy(Exception):
    """Another process holds a lock while this one opens the database: wait and try again."""


_SQLITE_REASONS = {
    "file is not a database": "这个文件不是 SQLite 数据库",
    "database disk image is malformed": "数据库文件内部已损坏",
    "unable to open database file": "打不开数据库文件",
    "disk I/O error": "读写磁盘出错",
}


def _sqlite_reason(detail: str) -> str:
    """SQLite's English reason in the learner's language; an unknown one is kept as SQLite said it."""
    return _SQLITE_REASONS.get(detail, f"SQLite 报告：{detail}")


class _Unusable(Exception):
    """The database file exists but is corrupt or unreadable: move it aside."""

    def __init__(self, detail: str, unreadable: bool = False):
        super().__init__(detail)
        self.unreadable = unreadable


# Rows read back from the database, immutable. A NamedTuple is defined in ~0.2 ms at import,
# a frozen dataclass in ~1.4 ms (it compiles its methods), and the home screen's start-up pays it.
PAST_FINAL_BREAK = 1_000_000  # furthest_break / position part of a learner past a chapter's last break


class ChapterProgress(NamedTuple):
    chapter_id: str
    furthest_break: int = 0  # 1-based index of the furthest 🛑 reached; 0 = none yet
    completed: bool = False
    completed_at: str | None = None  # ISO-8601 UTC


class Answer(NamedTuple):
    chapter_id: str
    question_id: str
    answer: str
    correct: bool
    at: datetime
    shown: tuple[int, ...] | None = None  # the choices' order as shown (file indexes); None: unknown
    attempt_id: int | None = None  # the chapter quiz attempt it belongs to (None: review, before v6)


class Attempt(NamedTuple):
    """One attempt at a chapter's checkpoint quiz (schema v6)."""

    id: int
    chapter_id: str
    seed: int  # the choice order of every question is drawn from it
    started_at: datetime
    finished_at: datetime | None
    answers: tuple[Answer, ...] = ()  # the answers given in it, oldest first


class Edit(NamedTuple):
    """The learner's own version of a snippet (edited in the reader)."""

    chapter_id: str
    snippet_id: str
    code: str
    updated_at: datetime


class Run(NamedTuple):
    chapter_id: str
    snippet_id: str
    verdict: str
    at: datetime


_ANSWER_COLUMNS = "chapter_id, question_id, answer, correct, at, shown, attempt_id"


def _order_text(order) -> str | None:
    return None if order is None else ",".join(str(int(i)) for i in order)


def _order(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(t) for t in text.split(","))
    except ValueError:
        return None


def _answer(r) -> "Answer":
    return Answer(r[0], r[1], r[2], bool(r[3]), _parse_time(r[4]), _order(r[5]), r[6])


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(at: datetime | None) -> str:
    """UTC ISO text of ``at`` (naive datetimes are taken as local time); now if None."""
    if at is None:
        at = _now()
    elif at.tzinfo is None:
        at = at.astimezone()
    return at.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _parse_time(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value


def _local_day(text: str) -> date:
    value = _parse_time(text)
    try:
        return value.astimezone().date()
    except (OverflowError, ValueError):  # a date at the edge of the calendar: its UTC day
        return value.date()


def _error_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


_JSON_REASONS = (  # json.decoder's messages, by prefix
    ("Expecting value", "这里应该有一个值"),
    ("Expecting property name", "这里应该是带双引号的键名"),
    ("Expecting ',' delimiter", "这里缺一个逗号"),
    ("Expecting ':' delimiter", "这里缺一个冒号"),
    ("Extra data", "一段完整的 JSON 之后还有多余的内容"),
    ("Unterminated string", "字符串没有收尾的引号"),
    ("Invalid control character", "字符串里有控制字符"),
    ("Invalid \\u", "无效的 \\u 转义"),
    ("Invalid \\escape", "无效的转义"),
    ("Illegal trailing comma", "最后一项后面多了一个逗号"),
)


def json_reason(msg: str) -> str:
    """json's error message in Chinese (the original words when it is not a known one)."""
    for prefix, zh in _JSON_REASONS:
        if msg.startswith(prefix):
            return zh
    return f"语法错误：{msg}"


def _readonly_message(directory: Path, detail: object) -> str:
    return (
        f"无法写入进度目录 {directory}（只读或没有权限）：{detail}。"
        f"请让这个目录可写，或者把环境变量 TORCHCOURSE_HOME 指向一个可写的目录。"
    )


def _file_in_the_way(directory: Path) -> Path | None:
    """The directory itself or the nearest of its parents that exists but is not a directory."""
    for p in (directory, *directory.parents):
        try:
            if p.exists():
                return None if p.is_dir() else p
        except OSError:
            return None
    return None


def _check_writable_dir(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = _file_in_the_way(directory)
        if blocker is not None:
            where = "进度目录的位置上" if blocker == directory else f"进度目录 {directory} 的路径上"
            raise StoreError(
                f"无法创建进度目录 {directory}：{where}已经有一个文件 {blocker}，它不是目录。"
                f"请把这个文件移走或改名（torchcourse 没有改动它），或者把环境变量 TORCHCOURSE_HOME 指向别的目录。"
            ) from None
        raise StoreError(_readonly_message(directory, os_reason(exc))) from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise StoreError(_readonly_message(directory, os_reason(exc))) from None


_OUR_TABLES = {"settings", "chapters", "answers"}  # present from version 1 on
_ALL_OUR_TABLES = {"settings", "chapters", "answers", "runs", "breaks", "snippet_edits", "parts_read", "settings_v3", "chapters_v3", "quiz_attempts"}


def _foreign_reason(path: Path) -> str | None:
    """Look at an existing database READ-ONLY (nothing is switched to WAL, nothing migrated):
    why it is not a torchcourse progress database, or None when it is one (or empty, or
    unreadable: those cases are left to :func:`_connect`)."""
    from urllib.parse import quote

    try:
        if path.stat().st_size == 0:
            return None
    except OSError:
        return None
    try:
        ro = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        ro.execute("BEGIN")  # one snapshot: another process may be creating the schema right now
        version = ro.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in ro.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        ro.execute("COMMIT")
        if version == 0:
            if not tables:  # new, or another process is creating its schema right now (not committed: not seen)
                return None
            if tables <= _ALL_OUR_TABLES:
                # the schema is made in one transaction that sets the version last, so no torchcourse
                # leaves these committed at version 0, and every migration would stop at one of them
                raise StoreError(
                    f"进度库 {path} 没有建完：它的结构版本是 0，却已经有 torchcourse 的表 {', '.join(sorted(tables))}，"
                    f"本程序不能在它上面接着建表。文件没有被改动；请把它移走或改名（torchcourse 会新建一个空的进度库），"
                    f"或者把环境变量 TORCHCOURSE_HOME 指向别的目录。"
                )
            return f"它已有别的表：{', '.join(sorted(tables))[:200]}"
        if version > CURRENT_VERSION:
            return None  # reported by _connect as "written by a newer torchcourse"
        missing = _OUR_TABLES - tables
        if version >= 4:
            missing |= {"snippet_edits"} - tables
        if version >= 5:
            missing |= {"parts_read"} - tables
        if version >= 6:
            missing |= {"quiz_attempts"} - tables
        if missing:
            return f"结构版本 {version}，却缺少表 {', '.join(sorted(missing))}"
        if version >= 3:
            cols = {r[1] for r in ro.execute("PRAGMA table_info(chapters)")}
            if "course_id" not in cols:
                return "chapters 表缺少 course_id 列"
        return None
    except sqlite3.Error as exc:
        if _error_code(exc) in (_SQLITE_BUSY, _SQLITE_LOCKED):
            raise _Busy(str(exc)) from exc
        return None  # corrupt / unreadable: _connect decides
    finally:
        ro.close()


def _connect(path: Path) -> sqlite3.Connection:
    """Open, verify and migrate ``path``. Raises _Unusable for a corrupt/unreadable file."""
    existed = path.exists()
    if existed:
        why = _foreign_reason(path)
        if why is not None:
            raise StoreError(
                f"{path} 是一个 SQLite 数据库，但不是 torchcourse 的进度库（{why}）。文件没有被改动；"
                f"请移走它，或者把环境变量 TORCHCOURSE_HOME 指向别的目录。"
            )
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        if existed and _error_code(exc) in (_SQLITE_CANTOPEN, _SQLITE_IOERR, _SQLITE_NOTADB, _SQLITE_CORRUPT):
            raise _Unusable(str(exc), unreadable=_error_code(exc) in (_SQLITE_CANTOPEN, _SQLITE_IOERR)) from exc
        raise StoreError(f"无法打开进度库 {path}：{exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > CURRENT_VERSION:
            raise StoreError(
                f"进度库 {path} 是更新版本的 torchcourse 写的（结构版本 {version}，本程序只认识到 {CURRENT_VERSION}），"
                f"请升级 torchcourse；文件没有被改动。"
            )
        rows = conn.execute("PRAGMA quick_check").fetchall()
        if rows != [("ok",)]:
            raise _Unusable("; ".join(str(r[0]) for r in rows[:3]))
        conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("PRAGMA synchronous = FULL")
        _migrate(conn)
        return conn
    except sqlite3.Error as exc:
        conn.close()
        code = _error_code(exc)
        if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
            raise _Busy(str(exc)) from exc
        if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
            raise _Unusable(str(exc)) from exc
        if existed and code in (_SQLITE_CANTOPEN, _SQLITE_IOERR):
            raise _Unusable(str(exc), unreadable=True) from exc
        if "readonly" in str(exc) or code == 8:  # SQLITE_READONLY
            raise StoreError(_readonly_message(path.parent, exc)) from exc
        raise StoreError(f"无法打开进度库 {path}：{exc}") from exc
    except BaseException:
        conn.close()
        raise


def _migrate(conn: sqlite3.Connection) -> None:
    if conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read inside the write lock: another process may have migrated meanwhile.
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        while version < CURRENT_VERSION:
            MIGRATIONS[version](conn)
            version += 1
        conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _move_aside(path: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 2
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    try:
        os.replace(path, target)
    except FileNotFoundError:  # another process moved it first
        pass
    except OSError as exc:
        raise StoreError(
            f"进度文件 {path} 已损坏，但无法把它移开：{exc}"
        ) from exc
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            try:
                os.replace(side, target.with_name(target.name + suffix))
            except OSError:
                pass
    return target


def open_store(path: Path | None = None, course_id: str = SHIPPED_COURSE_ID, aliases: tuple[str, ...] = (),
               root: Path | None = None) -> tuple["Store", str | None]:
    """Open (creating or migrating) the progress database, for the course ``course_id``.

    Every read and write of the returned store concerns that course only.

    ``aliases``: the course's former ids (course.toml's ``aliases``): when nothing is stored under
    ``course_id`` yet, the progress of the first alias that has some is moved to it.

    Returns ``(store, notice)``; ``notice`` is a Chinese message to show the learner when a
    corrupt database was moved aside or progress was carried over, else None. Raises
    :class:`StoreError` when the data directory cannot be written.
    """
    if path is None:
        from torchcourse import paths

        path = paths.database_path()
    path = Path(path)
    _check_writable_dir(path.parent)
    try:
        store, notice = Store(_connect_retrying(path), path, course_id), None
    except _Unusable as exc:
        moved = _move_aside(path)
        what = "进度文件无法读取" if exc.unreadable else "进度文件已损坏"
        notice = f"{what}，已移到 {moved}，已新建一个空的进度库（原因：{_sqlite_reason(str(exc))}）"
        store = Store(_connect_retrying(path), path, course_id)
    adopted = store.adopt_aliases(aliases) if aliases else None
    if root is not None:
        store.remember_root(root)
    if adopted:
        moved_note = f"课程 id 从 {adopted!r} 改成了 {course_id!r}（course.toml 的 aliases）：原来的进度已经接过来了"
        notice = f"{notice}\n{moved_note}" if notice else moved_note
    return store, notice


def _connect_retrying(path: Path) -> sqlite3.Connection:
    """:func:`_connect`, tried again while another process holds a lock SQLite will not wait for.

    Two ``torchcourse`` processes starting at once on a new database race to switch it to WAL and
    to create the schema; SQLite can answer such a race with SQLITE_BUSY / SQLITE_LOCKED without
    calling the busy handler. That is a reason to wait, never to report the file as broken.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.01
    while True:
        try:
            return _connect(path)
        except _Busy:
            if time.monotonic() >= deadline:
                raise StoreError(f"进度库 {path} 一直被另一个进程占用，请稍后再试。")
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


class Store:
    """All reads and writes of progress. Every public method is one transaction."""

    def __init__(self, conn: sqlite3.Connection, path: Path, course_id: str = SHIPPED_COURSE_ID):
        self._conn = conn
        self.path = path
        self.course_id = course_id
        self._lock = threading.RLock()

    # -- plumbing -------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None  # type: ignore[assignment]

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def _tx(self, write: bool):
        with self._lock:
            if self._conn is None:
                raise StoreError("进度库已关闭")
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield conn
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(f"读写进度库 {self.path} 时出错：{exc}") from exc

    def remember_root(self, root: Path) -> None:
        """Record the folder this course id was last opened from (``check`` warns when another
        folder claims the same id: a course copied as a template that kept its id)."""
        value = str(Path(root).resolve())
        try:
            with self._tx(write=True) as c:
                if self._get(c, "course_root") != value:
                    self._set(c, "course_root", value)
        except StoreError:
            pass  # a read-only data directory: nothing to remember

    def rename_question(self, chapter_id: str, old: str, new: str) -> bool:
        """Move the answers of question ``old`` to ``new`` (the author renamed it and said so with
        ``was``), unless ``new`` already has answers. True when something moved."""
        with self._tx(write=True) as c:
            if c.execute("SELECT 1 FROM answers WHERE course_id = ? AND chapter_id = ? AND question_id = ? LIMIT 1",
                         (self.course_id, chapter_id, new)).fetchone():
                return False
            cur = c.execute("UPDATE answers SET question_id = ? WHERE course_id = ? AND chapter_id = ? AND question_id = ?",
                            (new, self.course_id, chapter_id, old))
            return cur.rowcount > 0

    def adopt_aliases(self, aliases) -> str | None:
        """Move the progress stored under the first of ``aliases`` that has any to this course's
        id, when nothing is stored under this id yet (the author renamed the course and listed
        its old id in ``aliases``). Returns the alias adopted, or None."""
        aliases = [a for a in aliases if a and a != self.course_id]
        if not aliases:
            return None
        with self._tx(write=True) as c:
            tables = [name for (name,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                      if any(col[1] == "course_id" for col in c.execute(f"PRAGMA table_info({name})"))]

            def has_rows(cid: str) -> bool:
                return any(c.execute(f"SELECT 1 FROM {t} WHERE course_id = ? LIMIT 1", (cid,)).fetchone() for t in tables)

            if has_rows(self.course_id):
                return None
            for alias in aliases:
                if has_rows(alias):
                    for t in tables:
                        c.execute(f"UPDATE {t} SET course_id = ? WHERE course_id = ?", (self.course_id, alias))
                    return alias
        return None

    def _set(self, conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute(
            "INSERT INTO settings (course_id, key, value) VALUES (?, ?, ?) ON CONFLICT(course_id, key) DO UPDATE SET value = excluded.value",
            (self.course_id, key, value),
        )

    def _get(self, conn: sqlite3.Connection, key: str) -> str | None:
        row = conn.execute("SELECT value FROM settings WHERE course_id = ? AND key = ?", (self.course_id, key)).fetchone()
        return row[0] if row else None

    # -- route and position -----------------------------------------------------------------

    def get_route(self) -> str | None:
        with self._tx(False) as c:
            return self._get(c, "route")

    def set_route(self, route_id: str) -> None:
        with self._tx(True) as c:
            self._set(c, "route", str(route_id))

    _PLACE_KEYS = ("position_line", "position_offset", "position_digest")

    def set_position(self, chapter_id: str, part: int, line: int | None = None, offset: int = 0,
                     digest: str | None = None, route: str | None = None) -> None:
        """Remember the last place read (``part`` is the 0-based part index), for "继续".

        ``line`` (1-based source line of the block at the top of the view), ``offset`` (rows of
        that block above the view) and ``digest`` (of the chapter's text then) are the exact
        place; without them the place is the start of the part. ``route``: the route the learner
        was on (default: the stored one), so that 继续 can tell a place saved on the current
        route from one left behind by a route switch. The place is also kept as the chapter's
        own (:meth:`chapter_place`), for reopening that chapter later."""
        with self._tx(True) as c:
            self._set(c, "position_chapter", str(chapter_id))
            self._set(c, "position_part", str(int(part)))
            self._set(c, "position_route", str(route if route is not None else self._get(c, "route") or ""))
            self._clear_place(c)
            if line is not None:
                self._set(c, "position_line", str(int(line)))
                self._set(c, "position_offset", str(max(0, int(offset))))
                self._set(c, "position_digest", str(digest or ""))
                self._set(c, f"place:{chapter_id}", f"{int(part)} {int(line)} {max(0, int(offset))} {digest or ''}")
            else:
                self._set(c, f"place:{chapter_id}", f"{int(part)}")

    def chapter_place(self, chapter_id: str) -> dict | None:
        """The last place read in this chapter: {"part", "line", "offset", "digest"} (line None:
        the part's start), or None when it was never read here."""
        with self._tx(False) as c:
            raw = self._get(c, f"place:{chapter_id}")
        fields = (raw or "").split(" ")
        if not fields[0].isdigit():
            return None
        ok = len(fields) >= 3 and fields[1].isdigit() and fields[2].isdigit()
        return {"part": int(fields[0]), "line": int(fields[1]) if ok else None, "offset": int(fields[2]) if ok else 0,
                "digest": (fields[3] if len(fields) > 3 else "") if ok else None}

    def placed_chapters(self) -> set[str]:
        """The chapters that have a place of their own (read in, at least once)."""
        with self._tx(False) as c:
            rows = c.execute("SELECT key FROM settings WHERE course_id = ? AND key LIKE 'place:%'", (self.course_id,)).fetchall()
        return {r[0][len("place:"):] for r in rows}

    def position_route(self) -> str | None:
        """The route the last position was saved on ("" when none was chosen; None: not recorded)."""
        with self._tx(False) as c:
            return self._get(c, "position_route")

    def _clear_place(self, c: sqlite3.Connection) -> None:
        c.execute(
            f"DELETE FROM settings WHERE course_id = ? AND key IN ({', '.join('?' * len(self._PLACE_KEYS))})",
            (self.course_id, *self._PLACE_KEYS),
        )

    def reading_place(self) -> dict | None:
        """The exact last place: {"chapter", "part", "line", "offset", "digest"} (line None: the part's start)."""
        with self._tx(False) as c:
            pos = self._position(c)
            if pos is None:
                return None
            line, offset, digest = (self._get(c, k) for k in self._PLACE_KEYS)
        ok = line is not None and line.isdigit()
        return {
            "chapter": pos[0], "part": pos[1], "line": int(line) if ok else None,
            "offset": int(offset) if ok and offset and offset.isdigit() else 0, "digest": digest if ok else None,
        }

    def last_position(self) -> tuple[str, int] | None:
        with self._tx(False) as c:
            return self._position(c)

    def _position(self, c: sqlite3.Connection) -> tuple[str, int] | None:
        chapter_id = self._get(c, "position_chapter")
        part = self._get(c, "position_part")
        if chapter_id is None or part is None or not part.lstrip("-").isdigit():
            return None
        return chapter_id, int(part)

    # -- chapters ---------------------------------------------------------------------------

    def reach_break(self, chapter_id: str, break_index: int, at: datetime | None = None, *, final: bool = False) -> None:
        """Break point ``break_index`` (1-based) of the chapter was reached.

        Keeps the maximum, logs the event for the activity calendar, and sets the last
        position to the part right after that break (0-based part index ``break_index``),
        unless the position is already further into this chapter.

        ``final``: it is the chapter's last break. Then :data:`PAST_FINAL_BREAK` is stored instead
        of its index (and as the position's part), so that a break the author inserts later does
        not move a learner who finished the chapter back into it (readers clamp it to the
        chapter's break count).
        """
        break_index = int(break_index)
        if break_index < 1:
            raise ValueError(f"break_index is 1-based, got {break_index}")
        stored = PAST_FINAL_BREAK if final else break_index
        with self._tx(True) as c:
            c.execute(
                "INSERT INTO chapters (course_id, chapter_id, furthest_break) VALUES (?, ?, ?) "
                "ON CONFLICT(course_id, chapter_id) DO UPDATE SET furthest_break = max(furthest_break, excluded.furthest_break)",
                (self.course_id, chapter_id, stored),
            )
            c.execute("INSERT INTO breaks (course_id, chapter_id, break_index, at) VALUES (?, ?, ?, ?)", (self.course_id, chapter_id, break_index, _iso(at)))
            pos = self._position(c)
            # a break behind the resume place of the same chapter (scrolled back up past it, or
            # seen again on the way down) never moves 继续 back
            if pos is None or pos[0] != chapter_id or pos[1] < stored:
                self._set(c, "position_chapter", chapter_id)
                self._set(c, "position_part", str(stored))
                self._set(c, "position_route", self._get(c, "route") or "")
                self._clear_place(c)

    def set_completed(self, chapter_id: str, completed: bool = True) -> None:
        with self._tx(True) as c:
            if completed:
                c.execute(
                    "INSERT INTO chapters (course_id, chapter_id, completed, completed_at) VALUES (?, ?, 1, ?) "
                    "ON CONFLICT(course_id, chapter_id) DO UPDATE SET completed = 1, "
                    "completed_at = coalesce(chapters.completed_at, excluded.completed_at)",
                    (self.course_id, chapter_id, _iso(None)),
                )
            else:
                c.execute("UPDATE chapters SET completed = 0, completed_at = NULL WHERE course_id = ? AND chapter_id = ?", (self.course_id, chapter_id))

    def chapter_progress(self, chapter_id: str) -> ChapterProgress:
        with self._tx(False) as c:
            row = c.execute(
                "SELECT chapter_id, furthest_break, completed, completed_at FROM chapters WHERE course_id = ? AND chapter_id = ?", (self.course_id, chapter_id)
            ).fetchone()
        return ChapterProgress(row[0], row[1], bool(row[2]), row[3]) if row else ChapterProgress(chapter_id)

    def all_progress(self) -> dict[str, ChapterProgress]:
        with self._tx(False) as c:
            rows = c.execute("SELECT chapter_id, furthest_break, completed, completed_at FROM chapters WHERE course_id = ? ORDER BY chapter_id", (self.course_id,)).fetchall()
        return {r[0]: ChapterProgress(r[0], r[1], bool(r[2]), r[3]) for r in rows}

    # -- parts really read (the minutes read are counted from these) -------------------------

    def mark_part_read(self, chapter_id: str, part_index: int, at: datetime | None = None) -> bool:
        """Part ``part_index`` (0-based) of the chapter was really read (scrolled through, or
        stayed in long enough: the reader decides). True when it was not recorded before."""
        part_index = int(part_index)
        if part_index < 0:
            raise ValueError(f"part_index is 0-based, got {part_index}")
        with self._tx(True) as c:
            cur = c.execute(
                "INSERT OR IGNORE INTO parts_read (course_id, chapter_id, part_index, at) VALUES (?, ?, ?, ?)",
                (self.course_id, chapter_id, part_index, _iso(at)),
            )
            return cur.rowcount > 0

    def parts_read(self, chapter_id: str | None = None) -> dict[str, set[int]]:
        """{chapter id: the 0-based indexes of its parts read} (one chapter when ``chapter_id``)."""
        sql = "SELECT chapter_id, part_index FROM parts_read WHERE course_id = ?"
        params: tuple = (self.course_id,)
        if chapter_id is not None:
            sql += " AND chapter_id = ?"
            params = (self.course_id, chapter_id)
        with self._tx(False) as c:
            rows = c.execute(sql, params).fetchall()
        out: dict[str, set[int]] = {}
        for cid, part in rows:
            out.setdefault(cid, set()).add(int(part))
        return out

    # -- answers and runs -------------------------------------------------------------------

    def record_answer(self, chapter_id: str, question_id: str, answer: str, correct: bool, at: datetime | None = None,
                      shown: list[int] | tuple[int, ...] | None = None, attempt_id: int | None = None) -> None:
        """Store one answer. ``shown``: the order its choices were shown in (file indexes from 0);
        ``attempt_id``: the chapter quiz attempt (:meth:`start_attempt`) it belongs to."""
        with self._tx(True) as c:
            c.execute(
                "INSERT INTO answers (course_id, chapter_id, question_id, answer, correct, at, shown, attempt_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (self.course_id, chapter_id, question_id, str(answer), int(bool(correct)), _iso(at), _order_text(shown), attempt_id),
            )

    # -- quiz attempts ----------------------------------------------------------------------

    def start_attempt(self, chapter_id: str, seed: int, at: datetime | None = None) -> int:
        """A new attempt at a chapter's quiz; every attempt of that chapter still open is closed
        (the learner chose to start again). Returns its id."""
        when = _iso(at)
        with self._tx(True) as c:
            c.execute(
                "UPDATE quiz_attempts SET finished_at = ? WHERE course_id = ? AND chapter_id = ? AND finished_at IS NULL",
                (when, self.course_id, chapter_id),
            )
            cur = c.execute(
                "INSERT INTO quiz_attempts (course_id, chapter_id, seed, started_at) VALUES (?, ?, ?, ?)",
                (self.course_id, chapter_id, int(seed), when),
            )
            return int(cur.lastrowid)

    def finish_attempt(self, attempt_id: int, at: datetime | None = None) -> None:
        with self._tx(True) as c:
            c.execute(
                "UPDATE quiz_attempts SET finished_at = ? WHERE course_id = ? AND id = ? AND finished_at IS NULL",
                (_iso(at), self.course_id, int(attempt_id)),
            )

    def open_attempt(self, chapter_id: str) -> Attempt | None:
        """The latest attempt at this chapter's quiz that was left before its end, with its answers."""
        with self._tx(False) as c:
            row = c.execute(
                "SELECT id, chapter_id, seed, started_at, finished_at FROM quiz_attempts "
                "WHERE course_id = ? AND chapter_id = ? AND finished_at IS NULL ORDER BY id DESC LIMIT 1",
                (self.course_id, chapter_id),
            ).fetchone()
            if row is None:
                return None
            answers = c.execute(
                f"SELECT {_ANSWER_COLUMNS} FROM answers WHERE course_id = ? AND attempt_id = ? ORDER BY at, id",
                (self.course_id, row[0]),
            ).fetchall()
        return Attempt(int(row[0]), row[1], int(row[2]), _parse_time(row[3]), None, tuple(_answer(r) for r in answers))

    def answers(self, chapter_id: str | None = None, question_id: str | None = None) -> list[Answer]:
        sql = f"SELECT {_ANSWER_COLUMNS} FROM answers"
        where, params = ["course_id = ?"], [self.course_id]
        if chapter_id is not None:
            where.append("chapter_id = ?")
            params.append(chapter_id)
        if question_id is not None:
            where.append("question_id = ?")
            params.append(question_id)
        sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY at, id"
        with self._tx(False) as c:
            rows = c.execute(sql, params).fetchall()
        return [_answer(r) for r in rows]

    def record_run(self, chapter_id: str, snippet_id: str, verdict: str, at: datetime | None = None) -> None:
        with self._tx(True) as c:
            c.execute(
                "INSERT INTO runs (course_id, chapter_id, snippet_id, verdict, at) VALUES (?, ?, ?, ?, ?)",
                (self.course_id, chapter_id, snippet_id, str(verdict), _iso(at)),
            )

    def runs(self, chapter_id: str | None = None) -> list[Run]:
        sql = "SELECT chapter_id, snippet_id, verdict, at FROM runs WHERE course_id = ?"
        params: tuple = (self.course_id,)
        if chapter_id is not None:
            sql += " AND chapter_id = ?"
            params = (self.course_id, chapter_id)
        sql += " ORDER BY at, id"
        with self._tx(False) as c:
            rows = c.execute(sql, params).fetchall()
        return [Run(r[0], r[1], r[2], _parse_time(r[3])) for r in rows]

    # -- edited snippets ----------------------------------------------------------------------

    def save_edit(self, chapter_id: str, snippet_id: str, code: str, at: datetime | None = None) -> None:
        """Keep the learner's version of a snippet (replacing an earlier edit of it)."""
        with self._tx(True) as c:
            c.execute(
                "INSERT INTO snippet_edits (course_id, chapter_id, snippet_id, code, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(course_id, chapter_id, snippet_id) DO UPDATE SET code = excluded.code, updated_at = excluded.updated_at",
                (self.course_id, chapter_id, snippet_id, code, _iso(at)),
            )

    def edit(self, chapter_id: str, snippet_id: str) -> str | None:
        """The learner's code for this snippet, or None when it is the book's."""
        with self._tx(False) as c:
            row = c.execute(
                "SELECT code FROM snippet_edits WHERE course_id = ? AND chapter_id = ? AND snippet_id = ?",
                (self.course_id, chapter_id, snippet_id),
            ).fetchone()
        return None if row is None else row[0]

    def edits(self, chapter_id: str | None = None) -> list[Edit]:
        sql = "SELECT chapter_id, snippet_id, code, updated_at FROM snippet_edits WHERE course_id = ?"
        params: tuple = (self.course_id,)
        if chapter_id is not None:
            sql += " AND chapter_id = ?"
            params = (self.course_id, chapter_id)
        sql += " ORDER BY chapter_id, snippet_id"
        with self._tx(False) as c:
            rows = c.execute(sql, params).fetchall()
        return [Edit(r[0], r[1], r[2], _parse_time(r[3])) for r in rows]

    def delete_edit(self, chapter_id: str, snippet_id: str) -> bool:
        """Restore the book's version; True when there was an edit to forget."""
        with self._tx(True) as c:
            cur = c.execute(
                "DELETE FROM snippet_edits WHERE course_id = ? AND chapter_id = ? AND snippet_id = ?",
                (self.course_id, chapter_id, snippet_id),
            )
            return cur.rowcount > 0

    # -- activity ---------------------------------------------------------------------------

    def activity(self) -> dict[date, int]:
        """Events per local calendar day: break points reached, answers given, snippets run."""
        with self._tx(False) as c:
            times = [
                r[0]
                for r in c.execute(
                    "SELECT at FROM breaks WHERE course_id = ?1 UNION ALL SELECT at FROM answers WHERE course_id = ?1 "
                    "UNION ALL SELECT at FROM runs WHERE course_id = ?1",
                    (self.course_id,),
                )
            ]
        counts = Counter(_local_day(t) for t in times)
        return dict(sorted(counts.items()))

    def streak(self, today: date | None = None) -> int:
        """Consecutive active days ending today (or ending yesterday if today has none yet)."""
        days = set(self.activity())
        today = today or date.today()
        day = today if today in days else today - timedelta(days=1)
        n = 0
        while day in days:
            n += 1
            day -= timedelta(days=1)
        return n

    # -- export / import / reset ------------------------------------------------------------

    def export_data(self) -> dict:
        with self._tx(False) as c:
            position = self._position(c)
            data = {
                "format": EXPORT_FORMAT,
                "version": EXPORT_VERSION,
                "schema": CURRENT_VERSION,
                "exported_at": _iso(None),
                "course": self.course_id,
                "route": self._get(c, "route"),
                "position": {"chapter": position[0], "part": position[1]} if position else None,
                "chapters": [
                    {"chapter_id": r[0], "furthest_break": r[1], "completed": bool(r[2]), "completed_at": r[3]}
                    for r in c.execute("SELECT chapter_id, furthest_break, completed, completed_at FROM chapters WHERE course_id = ? ORDER BY chapter_id", (self.course_id,))
                ],
                "answers": [
                    {"chapter_id": r[0], "question_id": r[1], "answer": r[2], "correct": bool(r[3]), "at": r[4],
                     **({"shown": list(_order(r[5]))} if _order(r[5]) else {}),
                     **({"attempt_started_at": r[6]} if r[6] is not None else {})}
                    for r in c.execute(
                        "SELECT a.chapter_id, a.question_id, a.answer, a.correct, a.at, a.shown, q.started_at FROM answers a "
                        "LEFT JOIN quiz_attempts q ON q.course_id = a.course_id AND q.id = a.attempt_id "
                        "WHERE a.course_id = ? ORDER BY a.at, a.id", (self.course_id,))
                ],
                # a quiz left half-way is resumed on the other machine too: its attempt and seed
                "attempts": [
                    {"chapter_id": r[0], "seed": r[1], "started_at": r[2], "finished_at": r[3]}
                    for r in c.execute("SELECT chapter_id, seed, started_at, finished_at FROM quiz_attempts WHERE course_id = ? ORDER BY started_at, id", (self.course_id,))
                ],
                "runs": [
                    {"chapter_id": r[0], "snippet_id": r[1], "verdict": r[2], "at": r[3]}
                    for r in c.execute("SELECT chapter_id, snippet_id, verdict, at FROM runs WHERE course_id = ? ORDER BY at, id", (self.course_id,))
                ],
                "breaks": [
                    {"chapter_id": r[0], "break_index": r[1], "at": r[2]}
                    for r in c.execute("SELECT chapter_id, break_index, at FROM breaks WHERE course_id = ? ORDER BY at, id", (self.course_id,))
                ],
                "edits": [
                    {"chapter_id": r[0], "snippet_id": r[1], "code": r[2], "updated_at": r[3]}
                    for r in c.execute("SELECT chapter_id, snippet_id, code, updated_at FROM snippet_edits WHERE course_id = ? ORDER BY chapter_id, snippet_id", (self.course_id,))
                ],
                "parts_read": [
                    {"chapter_id": r[0], "part": r[1], "at": r[2]}
                    for r in c.execute("SELECT chapter_id, part_index, at FROM parts_read WHERE course_id = ? ORDER BY chapter_id, part_index", (self.course_id,))
                ],
            }
        return data

    def export_json(self, path: Path) -> None:
        """Write everything to ``path`` as JSON (atomically: a temp file, then rename)."""
        path = Path(path)
        import json  # only export/import need it (start-up time)

        text = json.dumps(self.export_data(), ensure_ascii=False, indent=2) + "\n"
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StoreError(f"无法写入 {path}：{os_reason(exc)}") from exc

    def import_json(self, path: Path, text: str | None = None, break_counts: dict[str, int] | None = None,
                    aliases: tuple[str, ...] = ()) -> dict:
        """Merge an export file into this store; never overwrites, never loses local rows.

        furthest_break: the larger; completed: either; answers, runs and breaks: added unless
        one with the same ids and time is already here. Route and position are taken only
        when this store has none. An edited snippet is taken only when this store has no edit
        of that snippet (a local edit is never overwritten). The whole file is validated before
        anything is written. Returns how many rows were merged: {"chapters", "answers", "runs",
        "breaks", "edits"}. ``text``: the file's content already read (``import -`` reads stdin),
        ``path`` then only names it in messages. ``break_counts``: the open course's chapters and
        their number of break points; a furthest break beyond its chapter's is refused, and a file
        without ``parts_read`` backfills parts only for chapters the course has (without it, every
        chapter's parts up to its furthest break).
        """
        import json

        path = Path(path)
        try:
            raw = path.read_text(encoding="utf-8") if text is None else text
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"无法读取 {path}：{os_reason(exc)}，什么都没有导入。") from exc
        try:
            data = json.loads(raw)
        except RecursionError:
            raise StoreError(f"{path}: 括号嵌套太深，不是 torchcourse 导出的进度文件，什么都没有导入。") from None
        except json.JSONDecodeError as exc:
            raise StoreError(
                f"{path}:{exc.lineno}: 不是有效的 JSON（第 {exc.lineno} 行第 {exc.colno} 列：{json_reason(exc.msg)}），什么都没有导入。"
            ) from exc
        rows = _validate_export(data, path)
        # a file of one of the course's former ids (course.toml ``aliases``) is this course's
        if rows["course"] is not None and rows["course"] != self.course_id and rows["course"] not in aliases:
            raise StoreError(
                f"{path}：这是课程 {rows['course']!r} 的进度，当前课程是 {self.course_id!r}，什么都没有导入。"
                f"用 --content 打开那门课程再导入。"
            )
        if break_counts is not None:
            for i, ch in enumerate(rows["chapters"]):
                n = break_counts.get(ch["chapter_id"])
                if n is not None and ch["furthest_break"] > n and ch["furthest_break"] != PAST_FINAL_BREAK:
                    raise StoreError(
                        f"{path}: chapters[{i}].furthest_break：第 {ch['chapter_id']} 章只有 {n} 个停顿点，"
                        f"这里却是 {ch['furthest_break']}，什么都没有导入。"
                    )
        cid = self.course_id
        counts = {"chapters": 0, "answers": 0, "runs": 0, "breaks": 0, "edits": 0}
        with self._tx(True) as c:
            if rows["route"] is not None and self._get(c, "route") is None:
                self._set(c, "route", rows["route"])
            if rows["position"] is not None and self._position(c) is None:
                self._set(c, "position_chapter", rows["position"][0])
                self._set(c, "position_part", str(rows["position"][1]))
            for ch in rows["chapters"]:
                before = c.execute("SELECT furthest_break, completed, completed_at FROM chapters WHERE course_id = ? AND chapter_id = ?", (cid, ch["chapter_id"])).fetchone()
                c.execute(
                    "INSERT INTO chapters (course_id, chapter_id, furthest_break, completed, completed_at) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT(course_id, chapter_id) DO UPDATE SET "
                    "furthest_break = max(chapters.furthest_break, excluded.furthest_break), "
                    "completed = max(chapters.completed, excluded.completed), "
                    "completed_at = CASE WHEN chapters.completed THEN chapters.completed_at ELSE excluded.completed_at END",
                    (cid, ch["chapter_id"], ch["furthest_break"], int(ch["completed"]), ch["completed_at"] if ch["completed"] else None),
                )
                after = c.execute("SELECT furthest_break, completed, completed_at FROM chapters WHERE course_id = ? AND chapter_id = ?", (cid, ch["chapter_id"])).fetchone()
                counts["chapters"] += int(before != after)
            attempt_ids: dict[tuple[str, str], int] = {}  # (chapter, started_at) -> this store's attempt
            for q in rows["attempts"]:
                key = (q["chapter_id"], q["started_at"])
                found = c.execute("SELECT id FROM quiz_attempts WHERE course_id = ? AND chapter_id = ? AND started_at = ?", (cid, *key)).fetchone()
                if found is None:
                    cur = c.execute(
                        "INSERT INTO quiz_attempts (course_id, chapter_id, seed, started_at, finished_at) VALUES (?, ?, ?, ?, ?)",
                        (cid, q["chapter_id"], q["seed"], q["started_at"], q["finished_at"]),
                    )
                    attempt_ids[key] = int(cur.lastrowid)
                else:
                    attempt_ids[key] = int(found[0])
            # of a chapter's attempts left open, only the latest stays open (as start_attempt keeps it)
            for chapter in {q["chapter_id"] for q in rows["attempts"]}:
                open_ = c.execute("SELECT id FROM quiz_attempts WHERE course_id = ? AND chapter_id = ? AND finished_at IS NULL "
                                  "ORDER BY started_at DESC, id DESC", (cid, chapter)).fetchall()
                for (old_id,) in open_[1:]:
                    c.execute("UPDATE quiz_attempts SET finished_at = started_at WHERE id = ?", (old_id,))
            for a in rows["answers"]:
                if not c.execute(
                    "SELECT 1 FROM answers WHERE course_id = ? AND chapter_id = ? AND question_id = ? AND at = ?", (cid, a["chapter_id"], a["question_id"], a["at"])
                ).fetchone():
                    attempt = attempt_ids.get((a["chapter_id"], a["attempt_started_at"])) if a["attempt_started_at"] else None
                    c.execute(
                        "INSERT INTO answers (course_id, chapter_id, question_id, answer, correct, at, shown, attempt_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (cid, a["chapter_id"], a["question_id"], a["answer"], int(a["correct"]), a["at"], _order_text(a["shown"]), attempt),
                    )
                    counts["answers"] += 1
            for r in rows["runs"]:
                if not c.execute(
                    "SELECT 1 FROM runs WHERE course_id = ? AND chapter_id = ? AND snippet_id = ? AND at = ?", (cid, r["chapter_id"], r["snippet_id"], r["at"])
                ).fetchone():
                    c.execute(
                        "INSERT INTO runs (course_id, chapter_id, snippet_id, verdict, at) VALUES (?, ?, ?, ?, ?)",
                        (cid, r["chapter_id"], r["snippet_id"], r["verdict"], r["at"]),
                    )
                    counts["runs"] += 1
            for b in rows["breaks"]:
                if not c.execute(
                    "SELECT 1 FROM breaks WHERE course_id = ? AND chapter_id = ? AND break_index = ? AND at = ?", (cid, b["chapter_id"], b["break_index"], b["at"])
                ).fetchone():
                    c.execute("INSERT INTO breaks (course_id, chapter_id, break_index, at) VALUES (?, ?, ?, ?)", (cid, b["chapter_id"], b["break_index"], b["at"]))
                    counts["breaks"] += 1
            for e in rows["edits"]:
                cur = c.execute(
                    "INSERT OR IGNORE INTO snippet_edits (course_id, chapter_id, snippet_id, code, updated_at) VALUES (?, ?, ?, ?, ?)",
                    (cid, e["chapter_id"], e["snippet_id"], e["code"], e["updated_at"]),
                )
                counts["edits"] += cur.rowcount
            # a file written before "parts_read" existed: its chapters count as a v4 database did
            parts = rows["parts_read"]
            if parts is None:
                parts = [
                    {"chapter_id": ch["chapter_id"], "part": i, "at": ch["completed_at"] or _iso(None)}
                    for ch in rows["chapters"] if break_counts is None or ch["chapter_id"] in break_counts
                    for i in backfill_parts(ch["furthest_break"], ch["completed"])
                ]
            for pr in parts:
                c.execute(
                    "INSERT OR IGNORE INTO parts_read (course_id, chapter_id, part_index, at) VALUES (?, ?, ?, ?)",
                    (cid, pr["chapter_id"], pr["part"], pr["at"]),
                )
        return counts

    def reset(self, chapter_id: str | None = None) -> None:
        """Forget one chapter's progress (answers, runs, breaks, edited snippets included), or everything."""
        with self._tx(True) as c:
            if chapter_id is None:
                for table in ("chapters", "answers", "runs", "breaks", "snippet_edits", "parts_read", "settings", "quiz_attempts"):
                    c.execute(f"DELETE FROM {table} WHERE course_id = ?", (self.course_id,))
                return
            for table in ("chapters", "answers", "runs", "breaks", "snippet_edits", "parts_read", "quiz_attempts"):
                c.execute(f"DELETE FROM {table} WHERE course_id = ? AND chapter_id = ?", (self.course_id, chapter_id))
            c.execute("DELETE FROM settings WHERE course_id = ? AND key = ?", (self.course_id, f"place:{chapter_id}"))
            pos = self._position(c)
            if pos is not None and pos[0] == chapter_id:
                c.execute("DELETE FROM settings WHERE course_id = ? AND key IN ('position_chapter', 'position_part', 'position_route')", (self.course_id,))
                self._clear_place(c)


_MIN_YEAR, _MAX_YEAR = 1970, 2999  # any date outside is not a real answer time
_MAX_COUNT = 1_000_000  # break indexes and part numbers: far above any chapter, far below 64 bits


def _validate_export(data: object, path: Path) -> dict:
    """Check an export file's structure; return normalized rows. Raises StoreError naming the item."""

    def bad(where: str, why: str) -> StoreError:
        return StoreError(f"{path}: {where}：{why}，什么都没有导入。")

    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise bad("文件头", f"不是 torchcourse 导出的进度文件（缺少 \"format\": \"{EXPORT_FORMAT}\"）")
    if not isinstance(data.get("version"), int) or data["version"] > EXPORT_VERSION:
        raise bad("version", f"不认识的版本 {data.get('version')!r}（本程序支持到 {EXPORT_VERSION}）")

    def text(item: dict, key: str, where: str) -> str:
        value = item.get(key)
        if not isinstance(value, str) or not value:
            raise bad(f"{where}.{key}", f"应为非空字符串，实际是 {value!r}")
        return value

    def when(item: dict, key: str, where: str) -> str:
        value = text(item, key, where)
        try:
            parsed = _parse_time(value)
            if not (_MIN_YEAR <= parsed.year <= _MAX_YEAR):
                raise bad(f"{where}.{key}", f"时间 {value!r} 不在 {_MIN_YEAR}–{_MAX_YEAR} 年之间")
            return _iso(parsed)
        except (ValueError, OverflowError):
            raise bad(f"{where}.{key}", f"不是 ISO 时间：{value!r}") from None

    def count(value, where: str, low: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or not (low <= value <= _MAX_COUNT):
            raise bad(where, f"应为 {low} 到 {_MAX_COUNT} 之间的整数，实际是 {str(value)[:40]!r}")
        return value

    def seed(value, where: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or not (0 <= value < 2**32):
            raise bad(where, f"应为 0 到 {2**32 - 1} 之间的整数，实际是 {str(value)[:40]!r}")
        return value

    def items(key: str) -> list[dict]:
        value = data.get(key, [])
        if not isinstance(value, list):
            raise bad(key, "应为列表")
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise bad(f"{key}[{i}]", "应为对象")
        return value

    course = data.get("course")
    if course is not None and (not isinstance(course, str) or not course):
        raise bad("course", f"应为非空字符串，实际是 {course!r}")
    out: dict = {"course": course, "route": None, "position": None, "chapters": [], "answers": [], "runs": [], "breaks": [], "edits": [],
                 "parts_read": None, "attempts": []}
    route = data.get("route")
    if route is not None:
        if not isinstance(route, str):
            raise bad("route", f"应为字符串，实际是 {route!r}")
        out["route"] = route
    pos = data.get("position")
    if pos is not None:
        if not isinstance(pos, dict) or not isinstance(pos.get("chapter"), str) or not isinstance(pos.get("part"), int):
            raise bad("position", f"应为 {{\"chapter\": 字符串, \"part\": 整数}}，实际是 {str(pos)[:80]!r}")
        count(pos["part"], "position.part", 0)
        out["position"] = (pos["chapter"], pos["part"])
    for i, ch in enumerate(items("chapters")):
        where = f"chapters[{i}]"
        fb = count(ch.get("furthest_break", 0), f"{where}.furthest_break", 0)
        done = ch.get("completed", False)
        if not isinstance(done, bool):
            raise bad(f"{where}.completed", f"应为 true/false，实际是 {done!r}")
        done_at = when(ch, "completed_at", where) if ch.get("completed_at") is not None else None
        out["chapters"].append({"chapter_id": text(ch, "chapter_id", where), "furthest_break": fb, "completed": done, "completed_at": done_at})
    for i, a in enumerate(items("answers")):
        where = f"answers[{i}]"
        if not isinstance(a.get("correct"), bool):
            raise bad(f"{where}.correct", f"应为 true/false，实际是 {a.get('correct')!r}")
        if not isinstance(a.get("answer"), str):
            raise bad(f"{where}.answer", f"应为字符串，实际是 {a.get('answer')!r}")
        shown = a.get("shown")
        if shown is not None and (
            not isinstance(shown, list) or not shown or len(shown) > 100
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in shown) or sorted(shown) != list(range(len(shown)))
        ):
            raise bad(f"{where}.shown", f"应为选项序号 0..n-1 的一种排列，实际是 {str(shown)[:60]!r}")
        out["answers"].append(
            {"chapter_id": text(a, "chapter_id", where), "question_id": text(a, "question_id", where), "answer": a["answer"], "correct": a["correct"], "at": when(a, "at", where),
             "shown": shown, "attempt_started_at": when(a, "attempt_started_at", where) if a.get("attempt_started_at") is not None else None}
        )
    for i, q in enumerate(items("attempts")):
        where = f"attempts[{i}]"
        out["attempts"].append(
            {"chapter_id": text(q, "chapter_id", where), "seed": seed(q.get("seed"), f"{where}.seed"),
             "started_at": when(q, "started_at", where),
             "finished_at": when(q, "finished_at", where) if q.get("finished_at") is not None else None}
        )
    for i, r in enumerate(items("runs")):
        where = f"runs[{i}]"
        out["runs"].append(
            {"chapter_id": text(r, "chapter_id", where), "snippet_id": text(r, "snippet_id", where), "verdict": text(r, "verdict", where), "at": when(r, "at", where)}
        )
    for i, b in enumerate(items("breaks")):
        where = f"breaks[{i}]"
        bi = count(b.get("break_index"), f"{where}.break_index", 1)
        out["breaks"].append({"chapter_id": text(b, "chapter_id", where), "break_index": bi, "at": when(b, "at", where)})
    for i, e in enumerate(items("edits")):
        where = f"edits[{i}]"
        if not isinstance(e.get("code"), str):
            raise bad(f"{where}.code", f"应为字符串，实际是 {e.get('code')!r}")
        out["edits"].append(
            {"chapter_id": text(e, "chapter_id", where), "snippet_id": text(e, "snippet_id", where), "code": e["code"], "updated_at": when(e, "updated_at", where)}
        )
    if "parts_read" in data:  # None: an older file; import derives them from its chapters
        out["parts_read"] = []
        for i, pr in enumerate(items("parts_read")):
            where = f"parts_read[{i}]"
            part = count(pr.get("part"), f"{where}.part", 0)
            out["parts_read"].append({"chapter_id": text(pr, "chapter_id", where), "part": part, "at": when(pr, "at", where)})
    return out


def known_course_root(course_id: str, path: Path | None = None) -> str | None:
    """The folder the course ``course_id`` was last opened from, read without creating or
    changing the database (None when there is none, or it cannot be read)."""
    if path is None:
        from torchcourse import paths

        path = paths.database_path()
    if not Path(path).is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, timeout=1.0)
        try:
            row = conn.execute("SELECT value FROM settings WHERE course_id = ? AND key = 'course_root'", (course_id,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None
