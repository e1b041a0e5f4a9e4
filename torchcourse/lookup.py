"""Error lookup ("which section explains this error?") and full-text search of the course.

No textual, no torch. Two sources of error entries:

1. the appendix chapter (``kind = "appendix"``): every row of a Markdown table whose header is
   ``| 报错原文 | 原因 | 讲解 |`` (format in ``content/README.md``);
2. every written chapter's snippets: an expected output holding a traceback's final
   ``SomeError: message`` line (or a printed one) or a ``...Warning: message`` line yields an
   entry whose cause is the snippet's section title.

Matching (:func:`lookup_error`) is fuzzy on purpose: a learner pastes a whole traceback with
other tensor sizes, numbers, addresses and quotes than the stored text. Both sides are
normalized (digits, hex addresses, quotes, case, spaces), then scored by token overlap
(words; Chinese as character bigrams) and the longest common substring.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher

from torchcourse.course.model import Chapter, Course, Problem

APPENDIX_HEADER = ("报错原文", "原因", "讲解")
LINK_RE = re.compile(r"\[(?P<label>[^\]]*)\]\((?P<chapter>[A-Za-z0-9_\-]+)?#(?P<anchor>[A-Za-z0-9_\-]+)\)")
# A line naming an exception or warning: "RuntimeError: …", "torch.OutOfMemoryError: …",
# "/path/x.py:3: UserWarning: …" (the warnings module's format).
ERROR_LINE_RE = re.compile(
    r"^(?:\S.*?:\d+: )?(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Interrupt))(?::\s*(?P<msg>.*))?$"
)
TRACEBACK_HEAD = "Traceback (most recent call last):"
MAX_TEXT = 400


@dataclass(frozen=True)
class ErrorEntry:
    text: str  # the error excerpt, e.g. "RuntimeError: view size is not compatible …"
    cause: str  # one sentence (appendix) or the explaining section's title (snippets)
    chapter_id: str  # the chapter that explains it
    anchor: str  # section anchor in that chapter
    section_title: str
    source: str = "appendix"  # "appendix" or "snippet"
    origin: str = ""  # "A:12" (appendix file line) or "03:view-error" (CHAPTER:SNIPPET)

    @property
    def link(self) -> str:
        return f"{self.chapter_id}#{self.anchor}"


@dataclass(frozen=True)
class Hit:
    entry: ErrorEntry
    score: float


@dataclass(frozen=True)
class TextHit:
    chapter_id: str
    part: int  # 0-based part index
    line: int  # 1-based line in the chapter file
    anchor: str | None  # the enclosing section, if any
    excerpt: str


# ---------------------------------------------------------------------------------------
# Entries


def _split_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [c.strip().replace("\\|", "|") for c in cells]


def _strip_code(cell: str) -> str:
    cell = cell.strip()
    m = re.fullmatch(r"(`+)\s?(.*?)\s?\1", cell)
    if m:
        return m.group(2)
    return cell.replace("`", "")


def _appendix_rows(chapter: Chapter):
    """Yield (line, text, cause, link cell) for every row of every 报错原文 table."""
    lines = chapter.source.splitlines()
    in_table = False
    in_fence = False
    for i, ln in enumerate(lines, start=1):
        if re.match(r"^\s*(```|~~~)", ln):
            in_fence = not in_fence
            in_table = False
            continue
        if in_fence:
            continue
        if not ln.strip().startswith("|"):
            in_table = False
            continue
        cells = _split_row(ln)
        if tuple(cells[:3]) == APPENDIX_HEADER:
            in_table = True
            continue
        if not in_table or all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
            continue
        yield i, cells


def _section_title(course: Course, chapter_id: str, anchor: str, fallback: str) -> str:
    ch = course.chapter(chapter_id)
    sec = ch.section(anchor) if ch is not None and ch.available else None
    return sec.title if sec else fallback


def appendix_entries(course: Course) -> list[ErrorEntry]:
    out = []
    for ch in course.chapters:
        if ch.kind != "appendix" or not ch.available:
            continue
        for line, cells in _appendix_rows(ch):
            if len(cells) < 3:
                continue
            text, cause = _strip_code(cells[0]), cells[1].strip()
            m = LINK_RE.search(cells[2])
            if not text or m is None:
                continue
            target = m.group("chapter") or ch.id
            label = m.group("label")
            fallback = label.split("§", 1)[1].strip() if "§" in label else label
            out.append(ErrorEntry(text, cause, target, m.group("anchor"), _section_title(course, target, m.group("anchor"), fallback), "appendix", f"{ch.id}:{line}"))
    return out


def appendix_problems(course: Course) -> list[Problem]:
    """Rows of the appendix tables that the lookup cannot use, with file and line."""
    problems = []
    for ch in course.chapters:
        if ch.kind != "appendix" or not ch.available:
            continue
        for line, cells in _appendix_rows(ch):
            if len(cells) < 3:
                problems.append(Problem(ch.file, line, f"error table row needs 3 cells (| 报错原文 | 原因 | 讲解 |), got {len(cells)}"))
                continue
            if not _strip_code(cells[0]):
                problems.append(Problem(ch.file, line, "error table row has an empty 报错原文 cell"))
            m = LINK_RE.search(cells[2])
            if m is None:
                problems.append(Problem(ch.file, line, f"讲解 cell needs a link like [03 §标题](03#anchor), got {cells[2]!r}"))
                continue
            target_id = m.group("chapter") or ch.id
            target = course.chapter(target_id)
            if target is None:
                problems.append(Problem(ch.file, line, f"link to unknown chapter {target_id!r}"))
            elif target.available and target.section(m.group("anchor")) is None:
                problems.append(Problem(ch.file, line, f"link to unknown section #{m.group('anchor')} of chapter {target_id}"))
    return problems


def errors_in_output(output: str) -> list[str]:
    """The error / warning excerpts of one snippet's output (final traceback line, warnings)."""
    found = []
    lines = output.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        m = ERROR_LINE_RE.match(ln)
        if m and not ln[:1].isspace():
            kind = m.group("type")
            msg = (m.group("msg") or "").strip()
            text = f"{kind}: {msg}" if msg else kind
            if not kind.endswith("Warning"):
                # messages continued on indented lines (load_state_dict lists its keys so)
                j = i + 1
                while j < len(lines) and lines[j][:1] == "\t" and len(text) < MAX_TEXT:
                    text += " " + lines[j].strip()
                    j += 1
                i = j - 1
            found.append(text[:MAX_TEXT])
        i += 1
    return found


def snippet_entries(course: Course) -> list[ErrorEntry]:
    out = []
    for ch in course.chapters:
        if not ch.available:
            continue
        for snip in ch.snippets:
            if not snip.expected:
                continue
            for text in errors_in_output(snip.expected):
                anchor = snip.section or (ch.sections[0].anchor if ch.sections else "")
                sec = ch.section(anchor) if anchor else None
                title = sec.title if sec else ch.title
                out.append(ErrorEntry(text, title, ch.id, anchor, title, "snippet", snip.key))
    return out


def error_entries(course: Course) -> list[ErrorEntry]:
    """Appendix rows first, then errors seen in the chapters' snippets; duplicates dropped."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for e in [*appendix_entries(course), *snippet_entries(course)]:
        key = (normalize(e.text), e.chapter_id, e.anchor)
        if key in seen:
            continue
        seen.add(key)
        out.append(e)
    return out


# ---------------------------------------------------------------------------------------
# Matching

_QUOTES = "'\"`‘’“”«»「」『』"
_STOP = {"the", "a", "an", "of", "to", "is", "in", "for", "and", "or", "be", "it", "at", "on", "with", "this", "that", "by", "as", "are", "was", "file", "line", "most", "recent", "call", "last", "traceback"}
_TYPE_WORD = re.compile(r"\w*(?:error|exception|warning)")
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"


def normalize(text: str) -> str:
    s = text.casefold()
    s = re.sub(r"0x[0-9a-f]+", "0x", s)
    s = re.sub(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?", "0", s)
    s = s.translate({ord(q): " " for q in _QUOTES})
    return re.sub(r"\s+", " ", s).strip()


def tokens(normalized: str) -> set[str]:
    out = set()
    for word in re.findall(r"[a-z_][a-z0-9_]*", normalized):
        # exception type names are compared apart (see lookup_error), not as shared words
        if len(word) > 1 and word not in _STOP and not _TYPE_WORD.fullmatch(word):
            out.add(word)
            if "_" in word:
                out.update(w for w in word.split("_") if len(w) > 1 and w not in _STOP)
    for run in re.findall(f"[{_CJK}]+", normalized):
        if len(run) == 1:
            out.add(run)
        out.update(run[k : k + 2] for k in range(len(run) - 1))
    return out


def units(normalized: str) -> list[str]:
    return re.findall(f"[a-z0-9_]+|[{_CJK}]|[^\\sa-z0-9_{_CJK}]", normalized)


def _error_lines(text: str) -> str:
    """The part of a pasted text that names the error (a traceback's final lines)."""
    if TRACEBACK_HEAD in text:
        text = text.rsplit(TRACEBACK_HEAD, 1)[1]
    found = errors_in_output(text)
    return "\n".join(found)


def _type_of(text: str) -> str | None:
    m = ERROR_LINE_RE.match(text.strip().splitlines()[0]) if text.strip() else None
    return m.group("type").rsplit(".", 1)[-1].lower() if m else None


def _score(qn: str, qt: set[str], en: str, et: set[str], hay: str, use_lcs: bool = True) -> float:
    """0..1: token overlap with the error text (and the cause), plus the longest common
    substring with the error text and its cause (which lets a few words or Chinese match)."""
    if not qt or not et or not qn:
        return 0.0
    inter = len(qt & et)
    cosine = inter / (len(qt) * len(et)) ** 0.5
    recall = inter / len(et)
    if not use_lcs:
        return 0.4 * cosine + 0.3 * recall if inter else 0.0
    # longest common run of units (words, single CJK characters, punctuation marks)
    probe = units(qn)[-200:]
    hay_units = units(hay)
    m = SequenceMatcher(None, probe, hay_units, autojunk=False).find_longest_match(0, len(probe), 0, len(hay_units))
    if inter == 0 and m.size < 3:
        return 0.0
    lcs = 0.0 if m.size < min(len(probe), 2) else m.size / min(len(probe), len(units(en)))
    return 0.4 * cosine + 0.3 * recall + 0.3 * min(lcs, 1.0)


def lookup_error(course: Course, text: str, limit: int = 10, entries: list[ErrorEntry] | None = None) -> list[Hit]:
    """Entries best matching a pasted error (a line, a whole traceback, or a few keywords).

    Hits scoring under 0.2, or under half the best hit's score, are dropped.
    """
    text = text.strip()
    if not text:
        return []
    entries = error_entries(course) if entries is None else entries
    queries = [text]
    main = _error_lines(text)
    if main and main != text:
        queries.append(main)
    prepared = []
    for q in queries:
        qn = normalize(q)
        # a whole traceback: its error lines get the substring comparison, the rest only tokens
        prepared.append((qn, tokens(qn), len(queries) == 1 or q is not text))
    qtype = _type_of(main) if main else None
    hits = []
    for e in entries:
        en = normalize(e.text)
        cause = normalize(e.cause)
        et = tokens(en) | {t for t in tokens(cause) if not t.isascii()}
        hay = f"{en} | {cause}"
        score = max(_score(qn, qt, en, et, hay, lcs) for qn, qt, lcs in prepared)
        if score <= 0:
            continue
        etype = _type_of(e.text)
        if qtype and etype:
            score += 0.1 if qtype == etype else -0.15
        if score >= 0.2:
            hits.append(Hit(e, round(min(score, 1.0), 4)))
    if hits:
        best = max(h.score for h in hits)
        hits = [h for h in hits if h.score >= best * 0.5]
    hits.sort(key=lambda h: (-h.score, h.entry.source != "appendix", h.entry.chapter_id, h.entry.anchor))
    return hits[:limit]


# ---------------------------------------------------------------------------------------
# Full-text search


_MD_LINK_RE = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")
_MD_ANCHOR_RE = re.compile(r"\s*\{#[^}]*\}\s*$")
_MD_LEAD_RE = re.compile(r"^\s*(?:#{1,6}\s+|>\s?|[-*+]\s+)+")
_MD_COMMENT_RE = re.compile(r"<!--(?P<body>.*?)-->")
_BREAK_LABEL_RE = re.compile(r"\s*break\s*:\s*(?P<label>.*?)\s*$")


def _plain(line: str) -> str:
    """A Markdown line as the reader shows it: no link targets, backticks, bold marks, heading
    hashes or anchors; of an HTML comment only a break point's label (the reader shows it in
    the 🛑 banner). Searched and shown in search results."""
    def comment(m: re.Match) -> str:
        label = _BREAK_LABEL_RE.match(m.group("body"))
        return label.group("label") if label else ""

    line = _MD_COMMENT_RE.sub(comment, line)
    if line.lstrip().startswith("```"):  # a fence delimiter: ```python {#id timeout=…}
        return ""
    line = _MD_LINK_RE.sub(r"\1", line)
    line = _MD_ANCHOR_RE.sub("", line)
    line = _MD_LEAD_RE.sub("", line)
    return line.replace("`", "").replace("**", "")


def _excerpt(line: str, start: int, length: int, width: int = 100) -> str:
    line = line.strip()
    if len(line) <= width:
        return line
    start = max(0, min(start - width // 3, len(line) - width))
    out = line[start : start + width]
    return ("…" if start > 0 else "") + out + ("…" if start + width < len(line) else "")


def search_text(course: Course, query: str, limit: int = 50) -> list[TextHit]:
    """Case-insensitive search of every written chapter's text (Chinese included), in course order.

    A line matches when it holds the whole query, or every one of its space-separated words.
    """
    q = query.strip().casefold()
    if not q:
        return []
    words = q.split()
    hits: list[TextHit] = []
    for ch in course.chapters:
        if not ch.available or not ch.source:
            continue
        sections = sorted(ch.sections, key=lambda s: s.line)
        for n, raw in enumerate(ch.source.splitlines(), start=1):
            raw = _plain(raw)
            low = raw.casefold()
            pos = low.find(q)
            if pos < 0:
                if len(words) < 2 or not all(w in low for w in words):
                    continue
                pos = low.find(words[0])
            part = ch.part_at(n)
            if part is None:
                part = ch.parts[-1].index if ch.parts else 0
            anchor = None
            for s in sections:
                if s.line <= n:
                    anchor = s.anchor
                else:
                    break
            hits.append(TextHit(ch.id, part, n, anchor, _excerpt(raw, pos, len(q))))
            if len(hits) >= limit:
                return hits
    return hits


# ---------------------------------------------------------------------------------------
# torchcourse why


def where_label(course: Course, entry: ErrorEntry) -> str:
    return f"→ {course.chapter_label(entry.chapter_id)} §{entry.section_title} ({entry.link})"


def cmd_why(args) -> int:
    from torchcourse.cli import _course

    text = " ".join(args.text)
    if text.strip() == "-":
        text = sys.stdin.read()
    course = _course(args)
    entries = error_entries(course)
    hits = lookup_error(course, text, entries=entries)
    if getattr(args, "json", False):
        print(json.dumps([{**asdict(h.entry), "link": h.entry.link, "score": h.score} for h in hits], ensure_ascii=False, indent=2))
        return 0 if hits else 1
    if not hits:
        if not entries:
            print("课程里还没有可查的报错条目（写好的章节里还没有报错示例）。", file=sys.stderr)
        else:
            print(
                "没有找到和这段报错相近的条目。\n"
                "试试：只粘贴最后一行（形如 RuntimeError: ...）；或者换几个关键词，比如 retain_graph、inplace、view；\n"
                "整段 traceback 可以这样传：torchcourse why - < 报错.txt",
                file=sys.stderr,
            )
        words = [w for w in re.split(r"\s+", _error_lines(text) or text) if len(w) > 3][:3]
        text_hits = search_text(course, " ".join(words), limit=5) if words else []
        if text_hits:
            print("全文里出现这些词的地方：", file=sys.stderr)
            for t in text_hits:
                print(f"  {t.chapter_id}:{t.line}  {t.excerpt}", file=sys.stderr)
        return 1
    for n, h in enumerate(hits[:5], start=1):
        excerpt = h.entry.text if len(h.entry.text) <= 160 else h.entry.text[:157] + "..."
        print(f"{n}. {excerpt}")
        if h.entry.cause and h.entry.cause != h.entry.section_title:
            print(f"   原因：{h.entry.cause}")
        print(f"   {where_label(course, h.entry)}")
    return 0
