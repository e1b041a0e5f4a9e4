"""Load checkpoint files (``checkpoints/ID.toml``) into :class:`Question` objects and validate them.

The format is documented for authors in ``content/README.md`` (section "Checkpoints").
Loading never raises for bad content: every problem becomes a :class:`Problem` with the file
and line. tomllib gives no positions, so lines are found in the text: each ``[[questions]]``
header, then the ``key =`` line inside that question's block.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from torchcourse.course.model import Chapter, Course, Problem

KINDS = ("single", "multi", "fill", "predict", "open")
KIND_NAMES = {"single": "单选", "multi": "多选", "fill": "填空", "predict": "预测输出", "open": "简答"}
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")
QUESTION_KEYS = {"id", "kind", "prompt", "choices", "answer", "accept", "snippet", "reference", "explain", "section", "was"}
TOP_KEYS = {"chapter", "questions"}
# keys that only make sense for some kinds (a key given to another kind is a mistake)
KEY_KINDS = {
    "choices": {"single", "multi", "predict"},
    "answer": {"single", "multi", "predict"},
    "accept": {"fill", "predict"},
    "snippet": {"predict"},
    "reference": {"open"},
}


@dataclass
class Question:
    id: str
    kind: str  # single | multi | fill | predict | open
    prompt: str
    explain: str
    section: str | None = None  # anchor in the chapter that teaches it
    choices: list[str] = field(default_factory=list)
    answer: int | list[int] | None = None  # single/predict: index from 0; multi: list of indexes
    accept: list[str] = field(default_factory=list)  # fill, or predict graded like fill
    snippet: str | None = None  # predict: snippet id of this chapter
    reference: str | None = None  # open: the reference answer
    chapter_id: str = ""
    line: int = 1  # 1-based line of its [[questions]] header
    was: tuple[str, ...] = ()  # ``was = "old-id"``: former ids; learners' answers under them are carried over

    @property
    def kind_name(self) -> str:
        """The kind as the learner reads it (Chinese)."""
        return KIND_NAMES.get(self.kind, self.kind)

    @property
    def has_choices(self) -> bool:
        """Answered by picking choices (single, multi, predict with choices)."""
        return self.kind in ("single", "multi") or (self.kind == "predict" and bool(self.choices))

    @property
    def multiple(self) -> bool:
        return self.kind == "multi"

    @property
    def answer_indexes(self) -> list[int]:
        if isinstance(self.answer, list):
            return list(self.answer)
        if isinstance(self.answer, int):
            return [self.answer]
        return []

    @property
    def key(self) -> str:
        return f"{self.chapter_id}:{self.id}"


@dataclass
class Checkpoint:
    chapter_id: str
    path: Path
    questions: list[Question]
    problems: list[Problem] = field(default_factory=list)


# ----------------------------------------------------------------------------- line finding


def _header_lines(text: str, header: str = "questions") -> list[int]:
    rx = re.compile(r"^\s*\[\[\s*" + re.escape(header) + r"\s*\]\]\s*(#.*)?$")
    return [i + 1 for i, ln in enumerate(text.splitlines()) if rx.match(ln)]


def _key_line(lines: list[str], key: str, start: int, end: int) -> int:
    """1-based line of ``key =`` between lines ``start`` and ``end`` (1-based, end exclusive)."""
    rx = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
    for i in range(max(0, start - 1), min(len(lines), end - 1)):
        if rx.match(lines[i]):
            return i + 1
    return start


def _toml_error_line(exc: tomllib.TOMLDecodeError, text: str) -> int:
    m = re.search(r"line (\d+)", str(exc))
    if m:
        return int(m.group(1))
    return max(1, len(text.splitlines()))  # "at end of document"


# ----------------------------------------------------------------------------- loading


def load_checkpoint(path: Path, chapter: Chapter | None = None, chapter_id: str | None = None) -> Checkpoint:
    """Read one checkpoint file. Problems go on ``checkpoint.problems``; questions with a
    problem that makes them unusable (no id, unknown kind, bad answer) are left out.

    With ``chapter`` (a parsed chapter), section anchors and predict snippets are checked
    against it; pass ``chapter=None`` for a chapter that is not written yet.
    """
    path = Path(path)
    cid = chapter.id if chapter is not None else (chapter_id or path.stem)
    problems: list[Problem] = []
    cp = Checkpoint(cid, path, [], problems)

    def bad(line: int, message: str) -> None:
        problems.append(Problem(path, line, message))

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        bad(1, "找不到检查点文件")
        return cp
    except OSError as exc:
        bad(1, f"读不了检查点文件：{exc}")
        return cp
    from torchcourse.course.loader import decode_text, toml_reason  # a BOM is accepted; bad bytes at their line

    text, undecodable = decode_text(raw)
    if undecodable:
        line, what = undecodable[0]
        bad(line, f"不是合法的 UTF-8（{what}）；把文件存成 UTF-8")
        return cp
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        bad(_toml_error_line(exc, text), f"TOML 写法有误：{toml_reason(exc)}")
        return cp

    lines = text.splitlines()
    end_of_file = len(lines) + 1
    headers = _header_lines(text)

    declared = data.get("chapter")
    chapter_line = _key_line(lines, "chapter", 1, (headers[0] if headers else end_of_file))
    if declared is None:
        bad(1, f'缺少顶层的 chapter = "{cid}"（这个文件属于哪一章）')
    elif str(declared) != cid:
        bad(chapter_line, f"chapter = {declared!r} 和使用这个文件的章节 {cid!r} 对不上")
    for key in sorted(set(data) - TOP_KEYS):
        bad(_key_line(lines, key, 1, end_of_file), f"未知的顶层键 {key!r}（已知的：chapter, [[questions]]）")

    raw_questions = data.get("questions")
    if raw_questions is None:
        bad(1, "这个文件里没有 [[questions]]")
        return cp
    if not isinstance(raw_questions, list) or not all(isinstance(q, dict) for q in raw_questions):
        bad(_key_line(lines, "questions", 1, end_of_file), "questions 必须是表的数组：每道题写成一个 [[questions]]")
        return cp
    if not raw_questions:
        bad(1, "这个文件里没有 [[questions]]")
        return cp

    snippet_ids = {s.id: s for s in chapter.snippets} if chapter is not None else {}
    anchors = {s.anchor for s in chapter.sections} if chapter is not None else set()
    seen: dict[str, int] = {}

    for n, raw in enumerate(raw_questions):
        start = headers[n] if n < len(headers) else 1
        end = headers[n + 1] if n + 1 < len(headers) else end_of_file

        def at(key: str) -> int:
            return _key_line(lines, key, start, end)

        usable = True
        qid = raw.get("id")
        label = f"第 {n + 1} 题"
        if not isinstance(qid, str) or not qid:
            bad(start, f"{label}没有 id（起一个稳定的名字，如 id = \"stride-after-t\"）")
            usable = False
            qid = f"#{n + 1}"
        else:
            label = f"题目 {qid!r}"
            if not ID_RE.match(qid):
                bad(at("id"), f"题目 id {qid!r} 只能用字母、数字、'-' 和 '_'")
            if qid in seen:
                bad(at("id"), f"题目 id {qid!r} 重复了（第一次出现在第 {seen[qid]} 行）")
                usable = False
            seen.setdefault(qid, start)

        for key in sorted(set(raw) - QUESTION_KEYS):
            bad(at(key), f"{label}：未知的键 {key!r}（已知的：{', '.join(sorted(QUESTION_KEYS))}）")

        was = raw.get("was", [])
        was = [was] if isinstance(was, str) else was
        if not isinstance(was, list) or not all(isinstance(w, str) and ID_RE.match(w) for w in was):
            bad(at("was"), f"{label}：was 必须是这道题以前的 id（was = \"old-id\"）或这些 id 的列表，这里是 {raw.get('was')!r}")
            was = []
        elif qid in was:
            bad(at("was"), f"{label}：was 里列了这道题现在的 id")
            was = []

        kind = raw.get("kind")
        if kind not in KINDS:
            where = at("kind") if "kind" in raw else start
            bad(where, f"{label}：未知的题型 {kind!r}（只能是 {' | '.join(KINDS)}）")
            usable = False
            kind = None

        def text_field(key: str, required: bool) -> str | None:
            value = raw.get(key)
            if value is None:
                if required:
                    bad(start, f"{label}：缺少 {key}")
                return None
            if not isinstance(value, str) or not value.strip():
                bad(at(key), f"{label}：{key} 必须是非空的文字")
                return None
            return value

        prompt = text_field("prompt", True)
        explain = text_field("explain", True)
        section = text_field("section", True)
        if prompt is None:
            usable = False
        if section is not None and chapter is not None and section not in anchors:
            import difflib

            anchors = [s.anchor for s in chapter.sections]
            near = difflib.get_close_matches(section, anchors, n=3, cutoff=0.4)
            hint = f"；最接近的：{', '.join(near)}" if near else f"；现有锚点：{', '.join(anchors[:12])}" + (" …" if len(anchors) > 12 else "")
            bad(at("section"), f"{label}：section {section!r} 不是第 {cid} 章（{chapter.file.name}）的锚点{hint}")

        if kind is not None:
            for key, kinds in KEY_KINDS.items():
                if key in raw and kind not in kinds:
                    bad(at(key), f"{label}：{kind} 题不用写 {key}")

        choices: list[str] = []
        answer: int | list[int] | None = None
        accept: list[str] = []
        snippet: str | None = None
        reference: str | None = None

        def read_choices() -> list[str] | None:
            value = raw.get("choices")
            if value is None:
                bad(start, f"{label}：缺少 choices")
                return None
            if not isinstance(value, list) or not all(isinstance(c, str) and c.strip() for c in value):
                bad(at("choices"), f"{label}：choices 必须是非空字符串的列表")
                return None
            if len(value) < 2:
                bad(at("choices"), f"{label}：至少要 2 个选项，这里只有 {len(value)} 个")
                return None
            if len(set(value)) != len(value):
                bad(at("choices"), f"{label}：有两个选项的文字相同")
            return list(value)

        def read_index(value, n_choices: int) -> int | None:
            if isinstance(value, bool) or not isinstance(value, int):
                bad(at("answer"), f"{label}：answer 必须是选项的序号（从 0 数起），这里是 {value!r}")
                return None
            if not 0 <= value < n_choices:
                bad(at("answer"), f"{label}：answer {value} 超出范围：共 {n_choices} 个选项，序号是 0..{n_choices - 1}")
                return None
            return value

        def read_accept() -> list[str] | None:
            value = raw.get("accept")
            if isinstance(value, str):
                value = [value]
            if isinstance(value, list) and value and all(isinstance(a, str) for a in value) and not all(a.strip() for a in value):
                blank = next(i for i, a in enumerate(value) if not a.strip())
                bad(at("accept"), f"{label}：accept 里序号 {blank} 的答案（{value[blank]!r}）只有空格：每个可接受的答案都要有文字")
                return None
            if not isinstance(value, list) or not value or not all(isinstance(a, str) and a.strip() for a in value):
                bad(at("accept") if "accept" in raw else start, f"{label}：accept 必须是非空的可接受答案列表")
                return None
            return list(value)

        if kind in ("single", "multi") or (kind == "predict" and "choices" in raw):
            c = read_choices()
            if c is None:
                usable = False
            else:
                choices = c
                if "answer" not in raw:
                    bad(start, f"{label}：缺少 answer")
                    usable = False
                elif kind == "multi":
                    value = raw["answer"]
                    if not isinstance(value, list) or not value:
                        bad(at("answer"), f"{label}：multi 题的 answer 是非空的序号列表（从 0 数起），如 [0, 2]")
                        usable = False
                    else:
                        idx = [read_index(v, len(c)) for v in value]
                        if any(i is None for i in idx):
                            usable = False
                        elif len(set(idx)) != len(idx):
                            bad(at("answer"), f"{label}：answer 把同一个序号写了两次")
                            usable = False
                        else:
                            answer = sorted(idx)  # type: ignore[arg-type]
                else:
                    answer = read_index(raw["answer"], len(c))
                    if answer is None:
                        usable = False
        if kind == "fill" or (kind == "predict" and "choices" not in raw):
            if kind == "predict" and "accept" not in raw:
                bad(start, f"{label}：predict 题要写 choices + answer，或者 accept")
                usable = False
            else:
                a = read_accept()
                if a is None:
                    usable = False
                else:
                    accept = a
        if kind == "predict" and "choices" in raw and "accept" in raw:
            bad(at("accept"), f"{label}：choices + answer 和 accept 只能写一种，不能都写")
        if kind == "predict":
            snippet = text_field("snippet", True)
            if snippet is None:
                usable = False
            elif chapter is not None:
                snip = snippet_ids.get(snippet)
                if snip is None:
                    bad(at("snippet"), f"{label}：snippet {snippet!r} 不是第 {cid} 章（{chapter.file.name}）的代码块")
                elif snip.norun or snip.gpu:
                    why = "norun" if snip.norun else "gpu"
                    bad(at("snippet"), f"{label}：snippet {snippet!r} 标了 {why}；predict 题要用在这里能运行的代码块")
                elif snip.expected is not None and isinstance(answer, int) and choices and 0 <= answer < len(choices):
                    contradiction = predict_key_contradiction(choices, answer, snip.expected)
                    if contradiction:
                        bad(at("answer"), f"{label}：{contradiction}")
                elif snip.expected is not None and accept and not choices:
                    contradiction = predict_accept_contradiction(accept, snip.expected)
                    if contradiction:
                        bad(at("accept"), f"{label}：{contradiction}")
        if kind == "open":
            reference = text_field("reference", True)
            if reference is None:
                usable = False

        if usable and kind is not None and prompt is not None:
            cp.questions.append(
                Question(
                    id=qid,
                    kind=kind,
                    prompt=prompt,
                    explain=explain or "",
                    section=section,
                    choices=choices,
                    answer=answer,
                    accept=accept,
                    snippet=snippet,
                    reference=reference,
                    chapter_id=cid,
                    line=start,
                    was=tuple(was),
                )
            )
    current = {q.id for q in cp.questions}
    for q in cp.questions:
        for old in q.was:
            if old in current:
                bad(q.line, f"题目 {q.id!r}：was = {old!r} 是这个文件里另一道题的 id：答案没法同时转给两道题")
    problems.sort(key=lambda p: p.line)
    return cp


def checkpoint_for(course: Course, chapter_id: str) -> Checkpoint | None:
    """The loaded checkpoint of a chapter, or None when it has no checkpoint file configured.

    Loaded once per course and file version: review, completion and the quiz all ask for the
    same files many times, so the parse is remembered on ``course.memo`` until the file's size
    or modification time changes.
    """
    chapter = course.chapter(chapter_id)
    if chapter is None or chapter.checkpoint is None:
        return None
    try:
        st = chapter.checkpoint.stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    memo = course.memo.setdefault("checkpoints", {})
    hit = memo.get(chapter.id)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    cp = load_checkpoint(chapter.checkpoint, chapter if chapter.available else None, chapter_id=chapter.id)
    memo[chapter.id] = (stamp, cp)
    return cp


def questions_for(course: Course, chapter_id: str) -> list[Question]:
    """The usable questions of a chapter's checkpoint (empty when there is none)."""
    cp = checkpoint_for(course, chapter_id)
    return cp.questions if cp is not None else []


def _squash(text: str) -> str:
    return " ".join(text.split())


def predict_key_contradiction(choices: list[str], answer: int, expected: str) -> str | None:
    """Why a predict key contradicts the snippet's expected output, or None.

    Evidence is only literal: a choice that is, white space folded, a whole line of the output.
    When some choices are such lines and the keyed one is not, the key is wrong; a keyed choice
    written as printed output (``tensor(…``, a number, ``True``/``False``/``None``, no Chinese
    words around it) must occur somewhere in the output.
    """
    lines = {_squash(ln) for ln in expected.split("\n") if ln.strip()}
    present = [i for i, c in enumerate(choices) if _squash(c) in lines]
    key = _squash(choices[answer])
    if len(present) >= 2:
        shown = "、".join(f"{i}: {choices[i]!r}" for i in present)
        return (f"选项 {shown} 都是代码块期望输出里的整行：运行过它的读者分不出哪个是答案；"
                "除了答案，每个选项都要是它不会打印的行")
    if present and answer not in present:
        shown = "、".join(f"{i}: {choices[i]!r}" for i in present)
        return f"答案是选项 {answer}（{choices[answer]!r}），可代码块的期望输出里整行打印出来的是选项 {shown}，不是答案"
    literal = key.startswith(("tensor(", "Parameter", "torch.Size(")) or key in ("True", "False", "None") or key.replace(".", "", 1).lstrip("-").isdigit()
    if literal and not any("\u4e00" <= ch <= "\u9fff" for ch in key) and key not in _squash(expected):
        return f"答案是选项 {answer}（{choices[answer]!r}），写成了打印输出的样子，可代码块的期望输出里从没打印过它"
    return None


_PRINTED_RE = re.compile(
    r"^(?:[\(\[].*[\)\]]|(?:tensor|parameter|torch\.size|array)\(.*|true|false|none|[-+]?\d*\.\d+(?:e[-+]?\d+)?|[-+]?\d+e[-+]?\d+)$"
)


def _printed_form(text: str) -> bool:
    """An accepted answer written as Python prints a value: a tuple or list, ``tensor(…``,
    ``torch.Size(…``, True/False/None, a float. Bare integers and words are not (``2`` may
    count names the output lists)."""
    return bool(_PRINTED_RE.match(text))


def predict_accept_contradiction(accept: list[str], expected: str) -> str | None:
    """Why the typed answers a predict question accepts contradict its snippet's expected
    output, or None. Compared as the grader compares (``grading.normalize``: whitespace, case
    and full-width forms ignored): when every accepted spelling written as printed output
    (see :func:`_printed_form`) is missing from the output, a learner who types what the code
    prints is told they are wrong."""
    import unicodedata

    from torchcourse.quiz.answertext import _CJK_PUNCT, normalize

    # the output as the grader sees text, but with its spaces kept: they separate words
    out = unicodedata.normalize("NFKC", expected).translate(_CJK_PUNCT).casefold()
    printed = [a for a in accept if _printed_form(normalize(a))]
    if not printed:
        return None

    def occurs(a: str) -> bool:
        needle = normalize(a)  # no whitespace left: any spacing in the output matches
        body = r"\s*".join(re.escape(ch) for ch in needle)
        return re.search(r"(?<![0-9a-z_])" + body + r"(?![0-9a-z_])", out) is not None

    if any(occurs(a) for a in printed):
        return None
    lines = [ln.strip() for ln in expected.split("\n") if ln.strip()]
    shown = f"它打印的是 {lines[0]}" if len(lines) == 1 else f"它打印了 {len(lines)} 行，第一行是 {lines[0]!r}" if lines else "它什么也没打印"
    spell = "、".join(repr(a) for a in printed)
    return (f"accept {spell} 写成了打印输出的样子，可代码块的期望输出里从没打印过它"
            f"（{shown}）：照真实输出填写的读者会被判错")


def validate_checkpoints(course: Course) -> list[Problem]:
    """Every problem in every checkpoint file the course uses, plus stray files nobody uses.

    A checkpoint of a chapter still marked ``planned`` is checked for its own shape only
    (sections and snippets are checked once the chapter is written).
    """
    problems: list[Problem] = []
    used: set[Path] = set()
    for chapter in course.chapters:
        if chapter.checkpoint is None:
            continue
        used.add(chapter.checkpoint.resolve())
        if not chapter.checkpoint.is_file():
            continue  # the loader reports a missing file for written chapters
        problems.extend(checkpoint_for(course, chapter.id).problems)
    if course.chapters and course.checkpoints_dir.is_dir():  # no chapters (malformed course.toml): nothing to match against
        for path in sorted(course.checkpoints_dir.glob("*.toml")):
            if path.resolve() not in used:
                problems.append(Problem(path, 1, "检查点文件没有被 course.toml 里的任何一章使用（在那一章写上 checkpoint = \"%s\"）" % path.name))
    return problems


__all__ = ["KINDS", "KIND_NAMES", "Question", "Checkpoint", "load_checkpoint", "checkpoint_for", "questions_for", "validate_checkpoints"]


def adopt_renamed_questions(course: Course, store, chapter_ids=None) -> int:
    """Carry learners' answers over to renamed questions (``was = "old-id"`` in a checkpoint file):
    answers stored under a former id move to the current one, unless the current id already has
    answers. Returns how many questions were carried over."""
    moved = 0
    for chapter in course.chapters:
        if chapter_ids is not None and chapter.id not in chapter_ids:
            continue
        cp = checkpoint_for(course, chapter.id) if chapter.checkpoint is not None else None
        for q in cp.questions if cp is not None else ():
            for old in q.was:
                try:
                    if store.rename_question(chapter.id, old, q.id):
                        moved += 1
                        break
                except Exception:  # a store that cannot be written now: the answers stay where they are
                    return moved
    return moved
