"""Error lookup: which section explains this error?

No textual, no torch. The entries are the appendix's rows (parsed and validated by
``torchcourse.course.appendix``: the appendix is content, like a chapter). Only a course without
an appendix falls back on the errors its snippets print (a traceback's final
``SomeError: message`` line, a printed one, or a ``...Warning: message`` line), each pointing at
the snippet's section.

Matching (:func:`lookup_error`) is fuzzy on purpose: a learner pastes a whole traceback with
other tensor shapes, numbers, names, op names and addresses than the stored text. Both sides are
normalized (:func:`normalize`; the entries once per course, :func:`error_index`), then scored by
token overlap (words; Chinese as character bigrams) and the longest common run of words. A text
that scores under ``MIN_SCORE`` against every entry gets no hit: the course does not cover it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from torchcourse.course.appendix import ErrorEntry, appendix_entries
from torchcourse.course.model import Course

# A line naming an exception or warning: "RuntimeError: …", "torch.OutOfMemoryError: …",
# "/path/x.py:3: UserWarning: …" (the warnings module's format).
ERROR_LINE_RE = re.compile(
    r"^(?:\S.*?:\d+: )?(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Interrupt))(?::\s*(?P<msg>.*))?$"
)
TRACEBACK_HEAD = "Traceback (most recent call last):"
_TRACEBACK_LINE = re.compile(r"^Traceback \(most recent call last\):[ \t]*$", re.M)
MAX_TEXT = 400
MIN_SCORE = 0.3  # below this a hit is noise: the answer is "not in this course"


@dataclass(frozen=True)
class Hit:
    entry: ErrorEntry
    score: float


# ---------------------------------------------------------------------------------------
# Entries


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
                # messages continued on indented lines: load_state_dict lists its keys after tabs;
                # an empty "RuntimeError:" (multiprocessing's) puts its whole message below, indented
                j = i + 1
                while j < len(lines) and len(text) < MAX_TEXT and (
                    lines[j][:1] == "\t" or (not msg and (lines[j][:1] == " " or not lines[j].strip()))
                ):
                    if lines[j].strip():
                        text += (" " if msg or text != kind else ": ") + lines[j].strip()
                    j += 1
                i = j - 1
            found.append(text[:MAX_TEXT])
        i += 1
    return found


def snippet_entries(course: Course) -> list[ErrorEntry]:
    """Errors seen in the chapters' snippet outputs, each pointing at the snippet's section."""
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
    """What the lookup answers from: the appendix rows. Only a course without an appendix falls
    back on the errors seen in its chapters' snippets (each pointing at the snippet's section)."""
    entries = appendix_entries(course)
    if entries:
        return entries
    seen: set[tuple[str, str, str]] = set()
    out = []
    for e in snippet_entries(course):
        key = (normalize(e.text), e.chapter_id, e.anchor)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


# ---------------------------------------------------------------------------------------
# Matching

_QUOTES = "'\"`‘’“”«»「」『』"
_STOP = {"the", "a", "an", "of", "to", "is", "in", "for", "and", "or", "be", "it", "at", "on", "with", "this", "that", "by", "as", "are", "was", "file", "line", "most", "recent", "call", "last", "traceback"}
_TYPE_WORD = re.compile(r"\w*(?:error|exception|warning)")
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_OP_BACKWARD = re.compile(r"\b[A-Z][A-Za-z0-9]*?Backward\d*\b")  # ExpBackward0, SigmoidBackward0
_HEX = re.compile(r"(?<![0-9a-z])0x[0-9a-z]*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")
_NUMBER_LIST = re.compile(r"0(?:\s*,\s*0)+")  # a shape [3, 4] against [10]: one number


def normalize(text: str) -> str:
    """What two reports of the same error share: op names in ``…Backward0``, numbers, shapes
    (``[3, 4]`` = ``[10]``), addresses, quotes, case and spacing are evened out."""
    s = _OP_BACKWARD.sub("OpBackward", text).casefold()
    s = _HEX.sub("0x", s)
    s = _NUMBER.sub("0", s)
    s = _NUMBER_LIST.sub("0", s)
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
    heads = list(_TRACEBACK_LINE.finditer(text))
    if heads:
        # the last traceback of the run (not "Original Traceback …" inside a DataLoader's message)
        head, tail = text[: heads[-1].start()], text[heads[-1].end() :]
        # warnings printed before the traceback (anomaly mode's "Error detected in …") count too
        found = [t for t in errors_in_output(head) if t.split(":", 1)[0].endswith("Warning")] + errors_in_output(tail)
    else:
        found = errors_in_output(text)
    return "\n".join(found)


def _type_of(text: str) -> str | None:
    m = ERROR_LINE_RE.match(text.strip().splitlines()[0]) if text.strip() else None
    return m.group("type").rsplit(".", 1)[-1].lower() if m else None


@dataclass(frozen=True)
class _Prepared:
    """One entry, normalized once (see :func:`prepare`)."""

    entry: ErrorEntry
    norm: str  # the normalized excerpt
    tokens: frozenset  # of the excerpt
    tokens_zh: frozenset  # of the excerpt, plus the Chinese of the cause: for a query in Chinese
    hay: tuple  # units of "excerpt | cause": the longest common run is searched in it
    length: int  # units of the excerpt alone
    etype: str | None


@dataclass(frozen=True)
class ErrorIndex:
    entries: tuple  # of ErrorEntry, in order
    prepared: tuple  # of _Prepared


def prepare(entries: list[ErrorEntry]) -> ErrorIndex:
    out = []
    for e in entries:
        en = normalize(e.text)
        cause = normalize(e.cause)
        et = tokens(en)
        zh = et | {t for t in tokens(cause) if not t.isascii()}
        out.append(_Prepared(e, en, frozenset(et), frozenset(zh), tuple(units(f"{en} | {cause}")), len(units(en)), _type_of(e.text)))
    return ErrorIndex(tuple(entries), tuple(out))


def error_index(course: Course) -> ErrorIndex:
    """The course's entries, normalized once and remembered on the course."""
    index = course.memo.get("error_index")
    if index is None:
        index = course.memo["error_index"] = prepare(error_entries(course))
    return index


CONTAINED_BONUS = 0.15


def _score(probe: list[str] | None, qt: set[str], p: _Prepared, qn: str = "") -> float:
    """0..1: token overlap with the excerpt (and the cause's Chinese), plus the longest common
    run of units with the excerpt and its cause (which lets a few words or Chinese match).
    An excerpt found whole in the query's error lines (normalized) is the strongest evidence
    there is: it gets ``CONTAINED_BONUS`` on top, so the entry written for exactly this
    message beats a more general one that only nearly matches."""
    et = p.tokens_zh if any(not t.isascii() for t in qt) else p.tokens
    if not qt or not et:
        return 0.0
    inter = len(qt & et)
    cosine = inter / (len(qt) * len(et)) ** 0.5
    recall = inter / len(et)
    if probe is None:
        return 0.4 * cosine + 0.3 * recall if inter else 0.0
    hay = p.hay
    m = SequenceMatcher(None, probe, hay, autojunk=False).find_longest_match(0, len(probe), 0, len(hay))
    if inter == 0 and m.size < 3:
        return 0.0
    lcs = 0.0 if m.size < min(len(probe), 2) else m.size / max(1, min(len(probe), p.length))
    # of two excerpts found whole, the longer (more specific) one wins
    bonus = CONTAINED_BONUS + 0.05 * min(1.0, len(p.norm) / len(qn)) if p.length >= 4 and p.norm in qn else 0.0
    return 0.4 * cosine + 0.3 * recall + 0.3 * min(lcs, 1.0) + bonus


def lookup_error(course: Course, text: str, limit: int = 10, entries: list[ErrorEntry] | ErrorIndex | None = None) -> list[Hit]:
    """Entries best matching a pasted error (a line, a whole traceback, or a few keywords).

    Hits scoring under ``MIN_SCORE``, or under half the best hit's score, are dropped: a text
    that matches nothing gets no hit at all, never the least bad entry.
    """
    text = text.strip()
    if not text:
        return []
    if entries is None:
        index = error_index(course)
    elif isinstance(entries, ErrorIndex):
        index = entries
    else:
        index = prepare(entries)
    main = _error_lines(text)
    queries: list[tuple[str, bool]] = []  # (text, compare runs of units too)
    if main and main != text:
        # a whole traceback: its error lines get the run comparison, the rest only tokens
        queries.append((text, False))
        queries.append((main, True))
        last = main.splitlines()[-1]
        if last != main and not (_type_of(last) or "warning").endswith("warning"):
            queries.append((last, True))  # the exception that ended the run, on its own
    else:
        queries.append((text, True))
    prepared = []
    for q, use_runs in queries:
        qn = normalize(q)
        prepared.append((units(qn)[-200:] if use_runs else None, tokens(qn), qn if use_runs else ""))
    qtype = _type_of(main) if main else None
    qtypes = {_type_of(ln) for ln in main.splitlines()} - {None} if main else set()
    scored: list[tuple[float, ErrorEntry]] = []
    for p in index.prepared:
        score = max(_score(probe, qt, p, qn) for probe, qt, qn in prepared)
        if score <= 0:
            continue
        if qtype and p.etype:
            score += 0.1 if p.etype in qtypes else -0.15
        if score >= MIN_SCORE:
            scored.append((score, p.entry))
    if not scored:
        return []
    best = max(sc for sc, _ in scored)
    # ranked by the raw score (it may pass 1 with the bonus); reported capped at 1
    scored = sorted((x for x in scored if x[0] >= best * 0.5), key=lambda x: (-x[0], x[1].source != "appendix", x[1].chapter_id, x[1].anchor))
    return [Hit(e, round(min(sc, 1.0), 4)) for sc, e in scored[:limit]]


# ---------------------------------------------------------------------------------------
# Full-text search


def where_label(course: Course, entry: ErrorEntry) -> str:
    """Where an entry is explained, as the learner finds it: chapter and section (and the link
    the app and ``torchcourse read`` understand), never a file line."""
    return f"→ {course.chapter_label(entry.chapter_id)} §{entry.section_title} ({entry.link})"
