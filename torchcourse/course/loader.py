"""Load a course root (a folder with ``course.toml``) into a :class:`Course`.

Loading never raises for bad content: every problem becomes a :class:`Problem` with file and
line, collected on ``course.problems``. Only a missing course root raises ``CourseError``.
"""

from __future__ import annotations

import os
import pickle
import re
import threading
import time
import zlib
from functools import lru_cache
from pathlib import Path

from torchcourse.course.model import Chapter, Course, Problem, Route

# torchcourse.course.chapter (the parser) is imported on a cache miss only, and tomllib and
# hashlib when the whole-course snapshot misses: the app's start-up needs neither.

DEFAULT_CPM = 170


class CourseError(Exception):
    pass


def _line_of(text: str, needle_re: str, after: int = 0) -> int:
    """1-based line of the first match of ``needle_re`` at or after line ``after`` (1-based)."""
    lines = text.splitlines()
    rx = re.compile(needle_re)
    for i in range(max(0, after - 1), len(lines)):
        if rx.search(lines[i]):
            return i + 1
    return max(1, after)


def _table_lines(text: str, header: str) -> list[int]:
    """1-based lines of every ``[[header]]`` in the TOML text."""
    rx = re.compile(r"^\s*\[\[\s*" + re.escape(header) + r"\s*\]\]\s*$")
    return [i + 1 for i, ln in enumerate(text.splitlines()) if rx.match(ln)]


_PARSED_FIELDS = ("source", "parts", "sections", "snippets", "callouts", "reading_chars", "minutes")


@lru_cache(maxsize=1)
def _parser_fingerprint() -> bytes:
    """The parser's own source: any change to it invalidates every cached chapter (read once)."""
    here = Path(__file__).resolve().parent
    return b"".join((here / name).read_bytes() for name in ("chapter.py", "model.py", "loader.py"))


_LAZY_LOCK = threading.RLock()  # a lazily loaded chapter is parsed once, by whichever thread asks first


def _parse_cached(chapter: Chapter, source: str, cpm: int, cache_dir: Path | None,
                  lazy_problems: list[Problem] | None = None) -> list[Problem]:
    """:func:`parse_chapter`, remembered in a disposable cache keyed on everything it reads.

    The key is the chapter's text, id, kind, path, reading speed and the parser's own source, so
    a stale entry can never be served; an unreadable entry is simply parsed again.

    With ``lazy_problems`` (a lazy load), a chapter not in the cache is not parsed now: its
    reading time is counted from the text (cheap), and its blocks are parsed on first use, their
    problems then added to ``lazy_problems`` (the course's list).
    """
    if cache_dir is None:
        from torchcourse.course.chapter import parse_chapter

        return parse_chapter(chapter, source, cpm)
    import hashlib

    h = hashlib.sha256()
    for part in (_parser_fingerprint(), chapter.id.encode(), chapter.kind.encode(), str(chapter.file).encode(), str(cpm).encode(), source.encode("utf-8")):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    entry = Path(cache_dir) / "chapters" / f"{h.hexdigest()}.pickle"
    try:
        with open(entry, "rb") as fh:
            fields, problems = pickle.load(fh)
        for name in _PARSED_FIELDS:
            setattr(chapter, name, fields[name])
        return problems
    except Exception:  # missing, truncated, or from another version: parse again
        pass
    if lazy_problems is not None:
        from torchcourse.course.chapter import minutes_for, reading_chars
        from torchcourse.course.model import LAZY_FIELDS

        chapter.source = source
        chapter.reading_chars = reading_chars(source)
        chapter.minutes = minutes_for(chapter.reading_chars, cpm)
        for name in LAZY_FIELDS:
            chapter.__dict__.pop(name, None)

        def parse_later(ch: Chapter) -> None:
            with _LAZY_LOCK:
                if "_parse_later" not in ch.__dict__:
                    return  # another thread did it
                # parsed into a copy, then moved over: no reader ever sees half-filled lists
                fresh = Chapter(ch.id, ch.title, ch.promise, ch.file, ch.kind, ch.available, ch.target_minutes, ch.checkpoint)
                lazy_problems.extend(_store_parsed(fresh, source, cpm, entry))
                for name in _PARSED_FIELDS:
                    ch.__dict__[name] = getattr(fresh, name)
                del ch.__dict__["_parse_later"]

        chapter.__dict__["_parse_later"] = parse_later
        return []
    return _store_parsed(chapter, source, cpm, entry)


def _store_parsed(chapter: Chapter, source: str, cpm: int, entry: Path) -> list[Problem]:
    from torchcourse.course.chapter import parse_chapter

    problems = parse_chapter(chapter, source, cpm)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(({name: getattr(chapter, name) for name in _PARSED_FIELDS}, problems), fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except OSError:  # a read-only cache only costs speed
        pass
    return problems


CHAPTER_KEYS = ("id", "file", "title", "promise", "kind", "planned", "target_minutes", "checkpoint")
COURSE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
# A chapter id is what links (``[文字](02#anchor)``), ``torchcourse run 02:id`` and progress name
# a chapter by: ASCII letters and digits only, so every link form can address it.
CHAPTER_ID_RE = re.compile(r"^[A-Za-z0-9]{1,32}$")
PRELOAD_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
DEFAULT_PRELOAD = ("torch",)


def decode_text(raw: bytes) -> tuple[str, list[tuple[int, str]]]:
    """``raw`` as UTF-8 text (a leading byte-order mark dropped); every undecodable byte becomes
    U+FFFD, and each line holding one is reported once: (1-based line, what is wrong)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    bad: list[tuple[int, str]] = []
    for n, line in enumerate(raw.split(b"\n"), 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.append((n, f"第 {len(line[: exc.start].decode('utf-8', 'replace')) + 1} 列的字节 0x{line[exc.start]:02x}"))
    return raw.decode("utf-8", errors="replace"), bad


# str.splitlines() also ends a line at these; Markdown (and an editor) does not. A chapter holding
# one would have its lines counted two ways (problems named at the wrong line, a closed fence taken
# for an unclosed one): each is read as a space and reported.
_ODD_BREAK_RE = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def odd_line_breaks(source: str) -> tuple[str, list[tuple[int, str]]]:
    """``source`` with every character that only ``str.splitlines`` takes for a line break read
    as a space, and (1-based line, what) for each line that held one."""
    if not _ODD_BREAK_RE.search(source):
        return source, []
    found = []
    for n, line in enumerate(re.split(r"\r\n|\r|\n", source), 1):
        m = _ODD_BREAK_RE.search(line)
        if m:
            found.append((n, f"第 {m.start() + 1} 列的 U+{ord(m.group()):04X}"))
    return _ODD_BREAK_RE.sub(" ", source), found


def read_chapter_source(path: Path) -> tuple[str, list[Problem]]:
    """A chapter file's text as the parser takes it, and the problems of its bytes: invalid UTF-8
    (read as U+FFFD: one problem, no cascade) and odd line breaks (read as spaces). OSError when
    it cannot be read."""
    source, bad_bytes = decode_text(path.read_bytes())
    source, odd = odd_line_breaks(source)
    return source, [Problem(path, n, f"不是合法的 UTF-8（{what}）；把文件存成 UTF-8") for n, what in bad_bytes] + [
        Problem(path, n, f"{what} 在有的工具里算换行、有的不算（行号会对不上）；"
                         "这里把它当空格读：删掉它，或换成普通换行") for n, what in odd]


def derived_course_id(root: Path) -> str:
    """The identity of a course whose course.toml names none: stable for its folder."""
    import hashlib

    return "dir-" + hashlib.sha256(str(Path(root).resolve()).encode("utf-8")).hexdigest()[:12]


def course_id_of(root: Path) -> str:
    """The course's identity without loading its chapters (for the progress commands): the ``id``
    of its course.toml, or :func:`derived_course_id` when it has none or cannot be read."""
    import tomllib

    try:
        data = tomllib.loads((Path(root) / "course.toml").read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return derived_course_id(root)
    value = data.get("id")
    return value if isinstance(value, str) and COURSE_ID_RE.match(value) else derived_course_id(root)


def course_aliases_of(root: Path) -> tuple[str, ...]:
    """The course's former ids (``aliases = ["old-id"]`` in course.toml): progress kept under one
    of them is carried over to the current id the first time the course is opened."""
    import tomllib

    try:
        data = tomllib.loads((Path(root) / "course.toml").read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ()
    value = data.get("aliases", [])
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str) and COURSE_ID_RE.match(v))


def _shipped_id_problems(root: Path, course_id: str, toml_path: Path, text: str) -> list[Problem]:
    """A course copied from the shipped one (or from ``new``'s template) that kept its id would
    share its learners' progress: a chapter never read shows as read."""
    from torchcourse import paths

    shipped = paths.shipped_content_dir()
    try:
        if Path(root).resolve() == shipped.resolve():
            return []
    except OSError:
        return []
    taken = {"my-course": "torchcourse new 的模板"}
    if course_id_of(shipped) == course_id:
        taken[course_id] = "torchcourse 自带的课程"
    if course_id not in taken:
        return []
    return [Problem(toml_path, _line_of(text, r"^\s*id\s*="), f"课程 id {course_id!r} 是 {taken[course_id]}的 id：进度按 id 保存，读者会在这里看到那门课的进度；给这门课一个自己的 id（例如 {course_id}-{Path(root).resolve().name[:20]}）")]


def _data_files(value, root: Path, toml_path: Path, line: int, problems: list[Problem]) -> tuple[str, ...]:
    """course.toml's ``data = ["heights.csv"]``: files inside the course folder that every snippet
    finds in its run directory (by their base names)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        problems.append(Problem(toml_path, line, f"data 必须是课程目录里的文件列表（data = [\"heights.csv\"]），这里是 {value!r}"))
        return ()
    out: list[str] = []
    names: dict[str, str] = {}
    base = Path(root).resolve()
    for rel in value:
        path = (Path(root) / rel).resolve()
        name = path.name
        if base not in path.parents:
            problems.append(Problem(toml_path, line, f"data 文件 {rel!r} 在课程目录之外，不予读取"))
        elif not path.is_file():
            problems.append(Problem(toml_path, line, f"data 文件 {rel!r} 在 {base} 里不存在（或不是文件）"))
        elif name == "snippet.py" or name in names:
            problems.append(Problem(toml_path, line, f"data 文件 {rel!r}：运行目录里已经有一个叫 {name!r} 的文件了（{names.get(name, '代码块本身')}）；给它改个名"))
        else:
            names[name] = rel
            out.append(str(path))
    return tuple(out)


def alias_problems(data: dict, text: str, toml_path: Path, course_id: str) -> list[Problem]:
    value = data.get("aliases")
    if value is None:
        return []
    m = re.search(r"^\s*aliases\s*=", text, re.M)
    line = text.count("\n", 0, m.start()) + 1 if m else 1
    if not isinstance(value, list) or not all(isinstance(v, str) and COURSE_ID_RE.match(v) for v in value):
        return [Problem(toml_path, line, f"aliases 必须是这门课以前用过的 id 的列表（aliases = [\"old-id\"]），这里是 {value!r}")]
    if course_id in value:
        return [Problem(toml_path, line, f"aliases 里列了这门课现在的 id {course_id!r}：只列以前用过的 id")]
    return []


# A snapshot is trusted only for files unchanged for this long before it was written: a file
# rewritten within the file system's timestamp granularity of an earlier write (same size, same
# mtime) can then never be mistaken for the old one ("racily clean", as git calls it).
SETTLED_S = 2.0


def _stat_signature(paths: list[Path]) -> tuple:
    out = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append((str(p), None))
        else:
            out.append((str(p), st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _snapshot_inputs(root: Path, course: Course | None) -> list[Path]:
    """Every file a load reads or checks: course.toml, the chapters, the checkpoints, the parser."""
    here = Path(__file__).resolve().parent
    files = [Path(root) / "course.toml", *(here / n for n in ("chapter.py", "model.py", "loader.py"))]
    if course is not None:
        files += [c.file for c in course.chapters] + [c.checkpoint for c in course.chapters if c.checkpoint]
    return files


def _snapshot_path(root: Path, cache_dir: Path) -> Path:
    key = os.path.abspath(root)
    return Path(cache_dir) / "course" / f"{zlib.crc32(key.encode('utf-8')):08x}.pickle"


def _load_snapshot(root: Path, cache_dir: Path) -> Course | None:
    """The whole course as last loaded, when no file it came from has changed since (by size,
    mtime and inode; unpickling one file is far cheaper than reading, hashing and parsing them).

    Each chapter's blocks and text are kept in the file as bytes of their own and unpickled on
    their first use: the home screen needs the chapters' titles and minutes, and unpickling
    every chapter's blocks was most of a warm load (5-6 ms of it; the rest now takes ~1 ms)."""
    try:
        with open(_snapshot_path(root, cache_dir), "rb") as fh:
            stored_root, files, signature, course, bodies = pickle.load(fh)
        if stored_root != os.path.abspath(root) or not isinstance(course, Course):
            return None
        if _stat_signature([Path(f) for f in files]) != signature:
            return None
        for chapter in course.chapters:
            body = bodies.get(chapter.id)
            if body is not None:
                chapter.__dict__["_parse_later"] = _body_loader(body)
        return course
    except Exception:  # missing, truncated, from another version: load normally
        return None


def _body_loader(body: bytes):
    def load_body(chapter: Chapter) -> None:
        with _LAZY_LOCK:
            if "_parse_later" not in chapter.__dict__:
                return  # another thread did it
            fields = pickle.loads(body)
            chapter.__dict__.update(fields)  # one step: no reader ever sees half of them
            del chapter.__dict__["_parse_later"]

    return load_body


def _save_snapshot(root: Path, cache_dir: Path, course: Course) -> None:
    files = _snapshot_inputs(root, course)
    signature = _stat_signature(files)
    settled = time.time_ns() - int(SETTLED_S * 1e9)
    parser = {str(p) for p in _snapshot_inputs(root, None)[1:]}  # code: never rewritten within a tick
    if any(entry[1] is not None and entry[2] > settled for entry in signature if entry[0] not in parser):
        return  # content just written: wait until it has settled before trusting its timestamp
    import copy

    from torchcourse.course.model import LAZY_FIELDS

    # The course is in use (the app saves from a background thread): pickle a copy of it whose
    # chapters leave their blocks to ``bodies``, never the course itself.
    head = copy.copy(course)
    head.memo = {}
    head.chapters, bodies = [], {}
    for chapter in course.chapters:
        fields = {name: getattr(chapter, name) for name in LAZY_FIELDS}  # parses what is pending
        light = copy.copy(chapter)
        for name in (*LAZY_FIELDS, "_parse_later"):
            light.__dict__.pop(name, None)
        head.chapters.append(light)
        bodies[chapter.id] = pickle.dumps(fields, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        entry = _snapshot_path(root, cache_dir)
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump((os.path.abspath(root), [str(f) for f in files], signature, head, bodies), fh,
                        protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except OSError:  # a read-only cache only costs speed
        pass


def load_course(root: Path, *, cache_dir: Path | None = None, lazy: bool = False) -> Course:
    """Load the course at ``root``. With ``cache_dir``, parsed chapters are cached there, and so
    is the whole course (served while none of its files has changed).

    ``lazy`` (the app's start, with a ``cache_dir``): a chapter not in the cache is parsed on the
    first use of its blocks (``parts``, ``snippets``…) rather than now; its problems join
    ``course.problems`` then. :func:`parse_pending` parses the rest (the app does it once its
    first screen is up)."""
    root = Path(root)
    if cache_dir is not None:
        course = _load_snapshot(root, cache_dir)
        if course is not None:
            return course
    course = _load_course(root, cache_dir, lazy=lazy and cache_dir is not None)
    if cache_dir is not None and (root / "course.toml").is_file():
        if all(c.parsed for c in course.chapters):
            _save_snapshot(root, cache_dir, course)
        else:
            course.memo["snapshot_to"] = (root, cache_dir)  # parse_pending writes it once all is parsed
    return course


def parse_pending(course: Course) -> int:
    """Parse every chapter a lazy load left for later (and then keep the course's snapshot, so the
    next start is a warm one); returns how many problems that added."""
    before = len(course.problems)
    for chapter in course.chapters:
        if not chapter.parsed:
            chapter.parts  # noqa: B018 - the first use parses it
    target = course.memo.pop("snapshot_to", None)
    if target is not None:
        _save_snapshot(target[0], target[1], course)
    return len(course.problems) - before


_TOML_REASONS = (  # tomllib's messages, by prefix
    ("Invalid value", "这里的值写得不对（字符串要加引号）"),
    ("Expected '=' after a key", "键后面缺 ="),
    ("Invalid statement", "这一行既不是 键 = 值 也不是 [表头]"),
    ("Cannot overwrite a value", "同一个键写了两次"),
    ("Cannot declare", "同一个表声明了两次"),
    ("Unclosed array", "数组缺右方括号 ]"),
    ("Unclosed inline table", "内联表缺右花括号 }"),
    ("Unterminated string", "字符串缺收尾的引号"),
    ("Illegal character", "字符串里有不允许的字符"),
    ("Invalid initial character for a key part", "键的开头字符不对"),
    ("Expected newline or end of document", "这一行在值后面还有多余的内容"),
)


def toml_reason(exc: Exception) -> str:
    """tomllib's error in Chinese, with where it is (``第 3 行第 5 列`` / ``文件末尾``)."""
    text = str(exc)
    m = re.search(r"\s*\((at line (\d+), column (\d+)|at end of document)\)\s*$", text)
    where = ""
    if m:
        where = f"（第 {m.group(2)} 行第 {m.group(3)} 列）" if m.group(2) else "（在文件末尾）"
        text = text[: m.start()]
    for prefix, zh in _TOML_REASONS:
        if text.startswith(prefix):
            return zh + where
    return f"{text}{where}"


def _load_course(root: Path, cache_dir: Path | None, lazy: bool = False) -> Course:
    import tomllib

    toml_path = root / "course.toml"
    if not toml_path.is_file():
        raise CourseError(f"{toml_path}: 这里没有 course.toml（{root} 不是课程目录？--content 要指向含 course.toml 的目录）")
    problems: list[Problem] = []
    empty = Course("", root, DEFAULT_CPM, [], [], (root / "checkpoints").resolve(), problems)
    try:
        raw_bytes = toml_path.read_bytes()
    except OSError as exc:
        problems.append(Problem(toml_path, 1, f"读不了 course.toml：{exc}"))
        return empty
    if raw_bytes.startswith(b"\xef\xbb\xbf"):
        raw_bytes = raw_bytes[3:]  # a UTF-8 byte-order mark (some editors write one): accepted
    try:
        text = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw_bytes[: exc.start].count(b"\n") + 1
        problems.append(Problem(toml_path, line, f"course.toml 不是合法的 UTF-8（偏移 {exc.start} 处的字节 0x{raw_bytes[exc.start]:02x}）；把它存成 UTF-8"))
        return empty
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        problems.append(Problem(toml_path, int(m.group(1)) if m else 1, f"TOML 写法有误：{toml_reason(exc)}"))
        return empty

    def key_line(key: str, after: int = 0) -> int:
        return _line_of(text, r"^\s*" + re.escape(key) + r"\s*=", after)

    def inside_root(rel, what: str, line: int) -> Path | None:
        """``root / rel`` resolved, or None (a problem) when it points outside the course root."""
        target = (root / rel).resolve()
        base = root.resolve()
        if target != base and base not in target.parents:
            problems.append(Problem(toml_path, line, f"{what} {rel!r} 在课程根目录 {base} 之外，不予读取"))
            return None
        return target

    title = data.get("title", "")
    if not isinstance(title, str):
        problems.append(Problem(toml_path, key_line("title"), f"title 必须是字符串，这里是 {title!r}"))
        title = ""
    if not title:
        problems.append(Problem(toml_path, 1, "course.toml 缺少 title（课程的标题）"))
    course_id = data.get("id")
    if course_id is None:
        course_id = derived_course_id(root)
    elif not isinstance(course_id, str) or not COURSE_ID_RE.match(course_id):
        problems.append(Problem(toml_path, _line_of(text, r"^\s*id\s*="), f"课程 id 必须是 1 到 64 个字母、数字、'.'、'-' 或 '_'，这里是 {course_id!r}"))
        course_id = derived_course_id(root)
    cpm = data.get("chars_per_minute", DEFAULT_CPM)
    if not isinstance(cpm, int) or isinstance(cpm, bool) or cpm <= 0:
        problems.append(Problem(toml_path, _line_of(text, r"^\s*chars_per_minute"), f"chars_per_minute 必须是正整数，这里是 {cpm!r}"))
        cpm = DEFAULT_CPM
    cp_rel = data.get("checkpoints", "checkpoints")
    if not isinstance(cp_rel, str):
        problems.append(Problem(toml_path, key_line("checkpoints"), f"checkpoints 必须是一个文件夹名（字符串），这里是 {cp_rel!r}"))
        cp_rel = "checkpoints"
    # the checkpoints folder lives inside the course root or beside it (the shipped course keeps
    # content/ and checkpoints/ side by side); each checkpoint file must be inside that folder
    checkpoints_dir = (root / cp_rel).resolve()
    if not (checkpoints_dir == root.resolve().parent or root.resolve().parent in checkpoints_dir.parents):
        problems.append(Problem(toml_path, key_line("checkpoints"), f"checkpoints 文件夹 {cp_rel!r} 既不在课程根目录里，也不在它的上一级目录里，不予读取"))
        checkpoints_dir = (root / "checkpoints").resolve()

    chapters: list[Chapter] = []
    chapter_lines = _table_lines(text, "chapters")
    raw_chapters = data.get("chapters", [])
    if not isinstance(raw_chapters, list) or not raw_chapters or not all(isinstance(r, dict) for r in raw_chapters):
        if isinstance(raw_chapters, list) and raw_chapters:
            problems.append(Problem(toml_path, key_line("chapters"), f"chapters 必须是 [[chapters]] 表，这里是 {raw_chapters!r:.80}"))
        else:
            problems.append(Problem(toml_path, 1, "course.toml 里没有 [[chapters]]"))
        raw_chapters = []
    for n, raw in enumerate(raw_chapters):
        line = chapter_lines[n] if n < len(chapter_lines) else 1
        unknown = sorted(set(raw) - set(CHAPTER_KEYS))
        for key in unknown:
            import difflib

            guess = difflib.get_close_matches(key, CHAPTER_KEYS, n=1)
            hint = f"（是不是想写 {guess[0]}？）" if guess else ""
            problems.append(Problem(toml_path, key_line(key, line), f"章节条目里有未知的键 {key!r}{hint}（已知的：{', '.join(CHAPTER_KEYS)}）"))
        missing = [k for k in ("id", "file", "title", "promise") if not raw.get(k)]
        if missing:
            problems.append(Problem(toml_path, line, f"章节条目缺少 {', '.join(missing)}"))
            continue
        # A wrong id or file drops the entry (nothing can name or read it); a wrong value of any
        # other key is reported once and replaced by its default, so that the chapter stays in
        # the course and one typo does not cascade into its routes, links and checkpoint.
        wrong = [f"{k} 必须是字符串，这里是 {raw[k]!r}" for k in ("id", "file") if not isinstance(raw[k], str)]
        if wrong:
            for w in wrong:
                problems.append(Problem(toml_path, key_line(w.split(" ", 1)[0], line), f"章节条目：{w}"))
            continue
        cid = raw["id"]

        def lenient(key: str, message: str, default):
            problems.append(Problem(toml_path, key_line(key, line), f"第 {cid} 章：{message}"))
            raw[key] = default

        for k in ("title", "promise", "kind", "checkpoint"):
            if k in raw and not isinstance(raw[k], str):
                lenient(k, f"{k} 必须是字符串，这里是 {raw[k]!r}", str(raw[k]) if k in ("title", "promise") else None)
        if "planned" in raw and not isinstance(raw["planned"], bool):
            lenient("planned", f"planned 必须是 true 或 false，这里是 {raw['planned']!r}", False)
        tm = raw.get("target_minutes")
        if tm is not None and (isinstance(tm, bool) or not isinstance(tm, (int, float)) or not (0 < tm < 100_000)):
            lenient("target_minutes", f"target_minutes 必须是正的分钟数，这里是 {tm!r}", None)
            tm = None
        if not CHAPTER_ID_RE.match(cid):
            problems.append(Problem(toml_path, key_line("id", line), f"章节 id {cid!r} 只能用 ASCII 字母和数字（最多 32 个，如 01、A、basics）：链接（[文字](02#anchor)）和 'torchcourse run 02:id' 都指不到别的 id"))
            continue
        if any(c.id == cid for c in chapters):
            problems.append(Problem(toml_path, line, f"章节 id {cid!r} 重复了"))
            continue
        twin = next((c for c in chapters if c.id.lower() == cid.lower()), None)
        if twin is not None:
            problems.append(Problem(toml_path, key_line("id", line), f"章节 id {cid!r} 和章节 {twin.id!r} 只差大小写：链接、'torchcourse run' 和不分大小写的文件系统都分不清它们；把其中一个改名"))
        kind = raw.get("kind") or "chapter"
        if kind not in ("chapter", "appendix"):
            problems.append(Problem(toml_path, line, f"第 {cid} 章：kind 必须是 'chapter' 或 'appendix'，这里是 {kind!r}"))
            kind = "chapter"
        planned = raw.get("planned", False)
        file = inside_root(raw["file"], f"第 {cid} 章：file", key_line("file", line))
        if file is None:
            continue
        same = next((c for c in chapters if c.file == file), None)
        if same is not None:
            problems.append(Problem(toml_path, key_line("file", line), f"第 {cid} 章：file {raw['file']!r} 已经是第 {same.id} 章的文件了：一个文件只能是一章（否则章节地图会列出两次，verify 也会运行两次）"))
            planned = True  # kept (its routes and links name it), never read twice
        checkpoint = raw.get("checkpoint")
        cp_path = None
        if checkpoint:
            cp_path = (checkpoints_dir / checkpoint).resolve()
            if checkpoints_dir not in cp_path.parents:
                problems.append(Problem(toml_path, key_line("checkpoint", line), f"第 {cid} 章：checkpoint {checkpoint!r} 在检查点文件夹 {checkpoints_dir} 之外，不予读取"))
                cp_path = None
        chapter = Chapter(
            id=cid,
            title=raw["title"],
            promise=raw["promise"],
            file=file,
            kind=kind,
            available=not planned,
            target_minutes=tm,
            checkpoint=cp_path,
            planned=bool(planned),
        )
        chapters.append(chapter)
        if planned:
            continue
        if not file.is_file():
            problems.append(Problem(toml_path, line, f"第 {cid} 章：找不到文件 {file}（还没写好之前，给它标上 planned = true）"))
            chapter.available = False
            continue
        try:
            source, found = read_chapter_source(file)
        except OSError as exc:
            problems.append(Problem(file, 1, f"读不了这一章的文件：{exc}"))
            chapter.available = False
            continue
        problems.extend(found)
        problems.extend(_parse_cached(chapter, source, cpm, cache_dir, problems if lazy else None))
        if chapter.checkpoint is not None and not chapter.checkpoint.is_file():
            problems.append(Problem(toml_path, line, f"第 {cid} 章：找不到检查点文件 {chapter.checkpoint}"))

    routes: list[Route] = []
    route_lines = _table_lines(text, "routes")
    ids = {c.id for c in chapters}
    raw_routes = data.get("routes", [])
    if not isinstance(raw_routes, list) or not all(isinstance(r, dict) for r in raw_routes):
        problems.append(Problem(toml_path, key_line("routes"), f"routes 必须是 [[routes]] 表，这里是 {raw_routes!r:.80}"))
        raw_routes = []
    refused = {c.get("id") for c in raw_chapters if isinstance(c.get("id"), str)} - ids
    route_ids: dict[str, int] = {}
    for n, raw in enumerate(raw_routes):
        line = route_lines[n] if n < len(route_lines) else 1
        missing = [k for k in ("id", "name", "audience", "chapters") if not raw.get(k)]
        if missing:
            problems.append(Problem(toml_path, line, f"路线条目缺少 {', '.join(missing)}"))
            continue
        wrong = [f"{k} 必须是字符串，这里是 {raw[k]!r}" for k in ("id", "name", "audience") if not isinstance(raw[k], str)]
        if not isinstance(raw["chapters"], list) or not all(isinstance(x, str) for x in raw["chapters"]):
            wrong.append(f"chapters 必须是章节 id（字符串）的列表，这里是 {raw['chapters']!r}")
        if wrong:
            for w in wrong:
                problems.append(Problem(toml_path, key_line(w.split(" ", 1)[0], line), f"路线条目：{w}"))
            continue
        rid = raw["id"]
        if rid in route_ids:  # the home screen lists routes by id: two of one id cannot both show
            problems.append(Problem(toml_path, key_line("id", line), f"路线 id {rid!r} 重复了（第一次出现在第 {route_ids[rid]} 行）；后一条路线不予采用"))
            continue
        route_ids[rid] = key_line("id", line)
        seq = list(raw["chapters"])
        chapters_line = _line_of(text, r"^\s*chapters\s*=", line)
        kept: list[str] = []
        for cid in seq:
            if cid in kept:
                problems.append(Problem(toml_path, chapters_line, f"路线 {rid}：章节 {cid!r} 列了两次；一条路线每一章只读一次"))
            elif cid in ids:
                kept.append(cid)
            elif cid in refused:
                pass  # its chapter entry was refused above (that problem names why)
            else:
                problems.append(Problem(toml_path, chapters_line, f"路线 {rid}：未知的章节 {cid!r}（现有章节：{', '.join(sorted(ids))}）"))
        if not kept:
            problems.append(Problem(toml_path, line, f"路线 {rid}：没有一章可用（每一章要么不予读取，要么未知）；选这条路线的读者没有东西可读"))
        default = raw.get("default", False)
        if not isinstance(default, bool):
            problems.append(Problem(toml_path, key_line("default", line), f"路线 {rid}：default 必须是 true 或 false，这里是 {default!r}"))
            default = False
        elif default and any(r.default for r in routes):
            first = next(r for r in routes if r.default)
            problems.append(Problem(toml_path, key_line("default", line), f"路线 {rid}：default = true，可路线 {first.id} 已经是默认路线了：新读者只跟一条路线"))
            default = False
        routes.append(Route(rid, raw["name"], raw["audience"], kept, default=default))

    preload = data.get("preload", list(DEFAULT_PRELOAD))
    if not isinstance(preload, list) or not all(isinstance(m, str) and PRELOAD_RE.match(m) for m in preload):
        problems.append(Problem(toml_path, key_line("preload"), f"preload 必须是预热运行器先导入的模块名列表（preload = [\"torch\"]；什么都不预先导入就写 []），这里是 {preload!r}"))
        # still a problem; meanwhile do what the author plainly meant (preload = "numpy"), not torch
        preload = [preload] if isinstance(preload, str) and PRELOAD_RE.match(preload) else list(DEFAULT_PRELOAD)
    problems.extend(alias_problems(data, text, toml_path, course_id))
    data_files = _data_files(data.get("data"), root, toml_path, key_line("data"), problems)
    problems.extend(_shipped_id_problems(root, course_id, toml_path, text))
    not_covered = data.get("not_covered", "")
    if not isinstance(not_covered, str):
        problems.append(Problem(toml_path, key_line("not_covered"), f"not_covered 必须是字符串（报错反查遇到课程没讲的报错时给出的建议），这里是 {not_covered!r}"))
        not_covered = ""
    recorded = _recorded(data, text, toml_path, tuple(dict.fromkeys(preload)), problems)
    course = Course(title, root, cpm, chapters, routes, checkpoints_dir, problems, id=course_id,
                    preload=tuple(dict.fromkeys(preload)), not_covered=not_covered.strip(), data=data_files,
                    recorded=recorded)
    for route in routes:
        route.minutes = route_reading_minutes(course, route)
    return course


def _recorded(data: dict, text: str, toml_path: Path, preload: tuple[str, ...], problems: list[Problem]) -> dict[str, tuple[str, ...]]:
    """``[recorded]``: module -> the releases the outputs are recorded on (the reference first).
    Each module must be one the course preloads; each release a version number, once."""
    from torchcourse.course.releases import release_of

    raw = data.get("recorded", {})
    table_line = _line_of(text, r"^\s*\[recorded\]", 0)
    if not isinstance(raw, dict):
        problems.append(Problem(toml_path, _line_of(text, r"^\s*recorded\s*=", 0), f"recorded 必须是一个表：[recorded] 下每个模块一行，如 torch = [\"2.13.0\", \"2.14.1\"]（第一个是参考版本），这里是 {raw!r:.80}"))
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for module, releases in raw.items():
        line = _line_of(text, r"^\s*" + re.escape(module) + r"\s*=", table_line)
        if module not in preload:
            problems.append(Problem(toml_path, line, f"[recorded] 里写了 {module!r}，可课程没有预先导入它（preload = {list(preload)!r}）：只记录预先导入的模块的版本"))
            continue
        if not isinstance(releases, list) or not releases or not all(isinstance(v, str) for v in releases):
            problems.append(Problem(toml_path, line, f"[recorded] {module} 必须是非空的版本号列表，参考版本在前（如 [\"2.13.0\", \"2.14.1\"]），这里是 {releases!r:.80}"))
            continue
        bad = [v for v in releases if release_of(v) is None or "+" in v]
        if bad:
            problems.append(Problem(toml_path, line, f"[recorded] {module}：{bad[0]!r} 不是 2.13.0 这样的版本号"))
            continue
        seen = [release_of(v) for v in releases]
        if len(set(seen)) != len(seen):
            problems.append(Problem(toml_path, line, f"[recorded] {module} 把同一个版本列了两次：{releases!r}"))
            continue
        out[module] = tuple(releases)
    return out


def chapter_stamp(chapter: Chapter) -> tuple | None:
    """(size, mtime, inode) of a chapter's file, None when it cannot be read: the preview loop
    compares it to notice that an author saved the file."""
    try:
        st = os.stat(chapter.file)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def reload_chapter(course: Course, chapter_id: str) -> list[Problem] | None:
    """Read one written chapter's file again and parse it in place (the preview loop: an author
    edits in one terminal, the app shows the new text). The chapter object stays the same (every
    screen holding it sees the new blocks); its problems on ``course.problems`` are replaced, and
    what other modules remembered about it in ``course.memo`` is dropped. Returns the chapter's
    new problems, or None (nothing changed) when the file cannot be read now."""
    from torchcourse.course.chapter import parse_chapter

    chapter = course.chapter(chapter_id)
    if chapter is None or not chapter.available:
        return None
    try:
        source, found = read_chapter_source(chapter.file)
    except OSError:
        return None
    fresh = Chapter(chapter.id, chapter.title, chapter.promise, chapter.file, chapter.kind, True,
                    chapter.target_minutes, chapter.checkpoint, planned=chapter.planned)
    found += parse_chapter(fresh, source, course.chars_per_minute)
    with _LAZY_LOCK:
        chapter.__dict__.pop("_parse_later", None)
        for name in _PARSED_FIELDS:
            chapter.__dict__[name] = getattr(fresh, name)
        course.problems[:] = [p for p in course.problems if p.file != chapter.file] + found
        for key in [k for k in course.memo if isinstance(k, tuple) and len(k) > 1 and k[1] == chapter.id]:
            del course.memo[key]
        course.memo.get("checkpoints", {}).pop(chapter.id, None)
        course.memo.pop("error_index", None)  # built from every chapter's rows and outputs: this one's may have changed
    for route in course.routes:
        if chapter.id in route.chapters:
            route.minutes = route_reading_minutes(course, route)
    return found


def route_reading_minutes(course, route) -> int:
    """A route's ⏱: its chapters' minutes; the appendix is a table to consult, not reading."""
    return sum(chapter_minutes(ch) for cid in route.chapters
               if (ch := course.chapter(cid)) is not None and ch.kind != "appendix")


def chapter_minutes(chapter: Chapter | None) -> int:
    """Computed minutes for a written chapter; the target for one not yet written."""
    if chapter is None:
        return 0
    if chapter.available:
        return chapter.minutes
    return int(chapter.target_minutes or 0)


def __getattr__(name: str):
    if name == "minutes_for":  # re-exported, imported lazily
        from torchcourse.course.chapter import minutes_for

        return minutes_for
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CourseError", "load_course", "parse_pending", "chapter_minutes", "minutes_for", "course_id_of", "derived_course_id",
           "chapter_stamp", "reload_chapter", "decode_text"]
