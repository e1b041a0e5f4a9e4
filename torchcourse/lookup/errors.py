"""Error lookup: which section explains this error?

No textual, no torch. The entries are the appendix's rows (parsed and validated by
``torchcourse.course.appendix``: the appendix is content, like a chapter), each with the
matching-only wordings of ``A-variants.toml`` beside the appendix (other releases, CUDA machines;
see content/README.md). Only a course without an appendix falls back on the errors its snippets
print (a traceback's final ``SomeError: message`` line, a printed one, or a
``...Warning: message`` line), each pointing at the snippet's section.

Matching (:func:`lookup_error`) is keyed on what makes an error distinctive, not on shared words:

1. The pasted text is cleaned (full-width punctuation, Markdown marks, log and rank prefixes,
   Rich boxes) and its error messages are found: every ``SomeError: …`` wherever it stands in a
   line (Chinese glued before it, ``!!! Exception … !!!`` around it), with the lines that continue
   it; a text without one is read line by line.
2. Both sides are reduced to their core words (:func:`core_words`): the exception type, numbers,
   shapes, addresses, paths, quoted names and CamelCase class names are masked, contractions
   spelled out, case folded.
3. An entry scores against each message by how much of the entry's core the message holds
   (each word weighted by how rare it is among the entries, so the words only one entry has
   decide between two candidates), the longest run of core words they share, and how much of
   the message's opening the entry explains.

A hit scoring ``SURE_SCORE`` or more is an answer; one between ``MIN_SCORE`` and that is a near
match, shown as "相近，不确定"; a text with neither gets no hit: the course does not cover it
(:func:`mentions` then looks for the message in the chapters' text and outputs).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path

from torchcourse.course.appendix import ErrorEntry, appendices, appendix_entries
from torchcourse.course.model import Course

# A line naming an exception or warning: "RuntimeError: …", "torch.OutOfMemoryError: …",
# "/path/x.py:3: UserWarning: …" (the warnings module's format).
ERROR_LINE_RE = re.compile(
    r"^(?:\S.*?:\d+: )?(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Interrupt)"
    r"|(?:torch|onnxruntime)(?:\.[A-Za-z_]\w*)+\.[A-Z]\w*)(?::\s*(?P<msg>.*))?$"  # torch._dynamo.exc.Unsupported
)
TRACEBACK_HEAD = "Traceback (most recent call last):"
_TRACEBACK_LINE = re.compile(r"^Traceback \(most recent call last\):[ \t]*$", re.M)
MAX_TEXT = 400
MIN_SCORE = 0.45  # below this a hit is noise: the answer is "not in this course"
SURE_SCORE = 0.62  # from here on a hit is the answer; between the two it is "相近，不确定"
MAX_PASTE = 20_000  # characters of a paste that are read (its end: that is where the error is)
VARIANTS_FILE = "A-variants.toml"


@dataclass(frozen=True)
class Hit:
    entry: ErrorEntry
    score: float
    sure: bool = True  # False: a near match, "相近，不确定"
    wording: str = ""  # the matching-only wording (A-variants.toml) that matched, if any


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
                    or (not msg and text == kind and lines[j].strip() and not lines[j].startswith("Traceback"))
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


@dataclass(frozen=True)
class Variant:
    row: str  # the 报错原文 of the row it belongs to
    text: str  # the wording, for matching only
    source: str  # where it comes from: a torch source path, a library's strings, or a report's link


def read_variants(path: Path) -> list[Variant]:
    """The variants file's good ``[[variant]]`` tables (``row``, ``text`` and ``source``, each a
    non-empty string); a missing or unreadable file, or a bad table, gives none. What is wrong
    with the file is ``torchcourse check``'s to say (``check.variant_problems``, which keeps the
    lookup out of the checker and names each problem's line)."""
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        return []
    items = data.get("variant", [])
    if not isinstance(items, list):
        return []
    fields = ("row", "text", "source")
    return [Variant(*(item[f].strip() for f in fields)) for item in items
            if isinstance(item, dict) and all(isinstance(item.get(f), str) and item[f].strip() for f in fields)]


def variants_path(course: Course) -> Path | None:
    apps = appendices(course)
    if not apps or not getattr(course, "root", None):
        return None
    return Path(course.root) / VARIANTS_FILE


def course_variants(course: Course) -> list[Variant]:
    p = variants_path(course)
    return read_variants(p) if p is not None else []


# ---------------------------------------------------------------------------------------
# Normalization

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_FULLWIDTH = str.maketrans({
    "：": ": ", "，": ", ", "。": ". ", "（": " (", "）": ") ", "【": " ", "】": " ", "“": '"', "”": '"',
    "‘": "'", "’": "'", "；": "; ", "！": "! ", "？": "? ", "、": ", ", "　": " ",
})
_LOG_PREFIX_RE = re.compile(
    r"^[ \t]*(?:\[rank\d+\]:?(?:\[[^\]]*\])?[ \t]*)+"  # torchrun: [rank0]:  [rank1]:[E626 …]
    r"|^[ \t]*[EWIF]\d{4} \d\d:\d\d:\d\d\.\d+[ \t]+\d+[ \t]+\S+:\d+\][ \t]*(?:\[[\d/]+\][ \t]*)?",  # glog
    re.M,
)
_EDGE_RE = re.compile(r"^[ \t]*(?:[│┃╭╮╰╯─━❱|]+[ \t]*|>[ \t]?)+|[ \t│┃╭╮╰╯─━]+$", re.M)  # Rich boxes, quotes
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_FRAME_RE = re.compile(r"^\s*(?:File \"[^\"]*\", line \d+|File [^\s,]+:\d+|\S+\.py:\d+ in \w+|\d+ frames$|frame #\d+:)")
_TYPE_ANYWHERE_RE = re.compile(
    r"(?<![A-Za-z0-9_.])(?P<type>(?:[A-Za-z_][A-Za-z0-9_]*\.)*(?:[A-Z][A-Za-z0-9_]*(?:Error|Exception|Warning|Interrupt)"
    r"|(?<=\.)[A-Z][A-Za-z0-9_]*))[ \t]*:(?!:)[ \t]*(?P<msg>.*)$"
)


def clean_paste(text: str) -> str:
    """A pasted text as plain lines: no ANSI colours, no redrawn progress bars, no full-width
    punctuation, no Markdown emphasis and quote marks, no log / rank prefixes or Rich box edges."""
    text = _ANSI_RE.sub("", text.replace("\r\n", "\n"))
    text = "\n".join(ln.rsplit("\r", 1)[-1] for ln in text.split("\n"))
    text = text.translate(_FULLWIDTH).replace("\x00", "")
    text = text.replace("**", "").replace("&gt;", ">").replace("&lt;", "<")
    text = _LOG_PREFIX_RE.sub("", text)
    text = _GLUED_TYPE_RE.sub("\n", text)  # typed, not pasted: "…in backwardRuntimeError: …" lost its line break
    return _EDGE_RE.sub("", text)


# an exception's name glued to the word before it (the line break a typed traceback lost)
_GLUED_TYPE_RE = re.compile(r"(?<=[a-z0-9)\]>])(?=(?:[A-Z][a-z0-9]+)+(?:Error|Exception|Warning):)")


_QUOTED_RE = re.compile(r"""(?P<q>['"`«「])(?P<body>[^'"`«»「」\s]{1,100})(?:['"`»」])""")
_DOTTED_RE = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
_CAMEL_RE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b")
_KEEP_CAMEL = {"DataLoader", "TorchScript", "Torchscript", "DataParallel", "DistributedDataParallel", "PyTorch",
               "ModuleList", "ModuleDict", "NumPy", "TracerWarning", "GradcheckError", "PytorchStreamReader",
               "UnsupportedOperatorError", "TorchExportError", "ConversionError", "ONNXRuntimeError",
               "GuardOnDataDependentSymNode", "FailOnRecompileLimitHit", "InvalidCxxCompiler", "WeightsUnpickler",
               "AsStrided"}  # the view node behind "which is output 0 of AsStrided": the op is the point
# torch's exceptions whose names do not end in Error (torch._dynamo.exc.Unsupported, …)
_TORCH_TYPES = {"Unsupported", "InvalidCxxCompiler", "FailOnRecompileLimitHit", "GuardOnDataDependentSymNode",
                "UserError", "InvalidArgument", "TorchRuntimeError"}
_OP_BACKWARD_RE = re.compile(r"\b[A-Z][A-Za-z0-9]*?Backward\d*\b")  # ExpBackward0, SigmoidBackward0
_PATH_RE = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][^\s\\/:'\"()<>,]+){2,}[\\/]?|\b\S+\.(?:py|pyx|cpp|cu|so|h|pt|pth|ckpt|onnx)\b")
_HEX_RE = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")
_WORD_RE = re.compile(rf"<[qnk]>|[a-z_][a-z0-9_]*|[{_CJK}]")
_STOP = frozenset(
    "the a an of to is in for and or be it at on with this that by as are was has have been were its"
    " you your please if so which will would may might can could should from into than then there these those"
    " when while also any some such very just here error".split()
)


# the packages whose dotted names say something about an error (a NumPy scalar in a checkpoint);
# any other dotted name (mynet.TinyNet, ultralytics.nn.tasks.DetectionModel) is the user's own
_KNOWN_PACKAGES = {"torch", "numpy", "collections", "builtins", "argparse", "pathlib", "typing", "functools", "copyreg"}


def _dotted(m: re.Match) -> str:
    parts = m.group(0).split(".")
    if parts[0] in _KNOWN_PACKAGES:  # torch among them
        return " " + " ".join(p if not _CAMEL_RE.fullmatch(p) or p in _KEEP_CAMEL else "<n>" for p in parts) + " "
    return " <n> "


def _mask(text: str) -> str:
    """Names, numbers and paths out; the words that are the error itself stay (cased)."""
    s = text.replace("can't", "can not").replace("Can't", "Can not").replace("cannot", "can not").replace("Cannot", "Can not")
    s = re.sub(r"n't\b", " not", s)
    s = _PATH_RE.sub(" ", s)

    def quoted(m: re.Match) -> str:
        body = m.group("body")
        if body == "__main__":
            return " __main__ "  # Python's name for the script that was run: no user's name, and it says where the class was
        # a state-dict key keeps its first part: "module.fc.weight" and "_orig_mod.0.weight" differ there
        head = body.split(".", 1)[0] if "." in body else ""
        return " <q> " + (f"k_{head.lower()} " if head and re.fullmatch(r"[A-Za-z_]\w*", head) else "")

    s = _QUOTED_RE.sub(quoted, s)
    s = _OP_BACKWARD_RE.sub(lambda m: " " + (m.group(0).split("Backward")[0] if m.group(0).split("Backward")[0] in _KEEP_CAMEL else "<n>") + " ", s)
    s = _HEX_RE.sub(" ", s)
    s = _DOTTED_RE.sub(_dotted, s)
    s = _CAMEL_RE.sub(lambda m: m.group(0) if m.group(0) in _KEEP_CAMEL else " <n> ", s)
    s = _NUMBER_RE.sub(" ", s)
    return s


def core_words(text: str) -> list[str]:
    """The words of an error message that two reports of it share, in order (see module doc)."""
    s = _mask(text).casefold()
    return [w for w in _WORD_RE.findall(s.replace("<Q>", "<q>")) if w not in _STOP and (len(w) > 1 or not w.isascii())]


def normalize(text: str) -> str:
    """What two reports of the same error share, as one string (see :func:`core_words`)."""
    return " ".join(core_words(text))


def _type_name(t: str | None) -> str | None:
    return t.rsplit(".", 1)[-1].casefold() if t else None


_SAME_TYPES = [{"attributeerror", "moduleattributeerror"}, {"importerror", "modulenotfounderror"},
               {"runtimeerror", "torchruntimeerror"}, {"unpicklingerror", "weightsunpicklererror"}]


import builtins as _builtins

# Python's own exception and warning names say little about which error it is (every message is a
# RuntimeError); a rarer type (torch._dynamo.exc.Unsupported, FailOnRecompileLimitHit, GradcheckError)
# is itself the distinctive part
_GENERIC_TYPES = {n.casefold() for n in dir(_builtins) if n.endswith(("Error", "Exception", "Warning"))} | {
    "unpicklingerror", "picklingerror", "moduleattributeerror"}


def _types_compatible(a: str, b: str) -> bool:
    return a == b or any(a in g and b in g for g in _SAME_TYPES)


# ---------------------------------------------------------------------------------------
# The messages of a paste


@dataclass(frozen=True)
class Message:
    type: str | None  # the exception / warning type, lower case, unqualified
    text: str
    last: bool = False  # the exception that ended the paste
    plain: bool = False  # a line that names no type (scored a little lower)


def messages_of(text: str, extra_types: frozenset = frozenset()) -> list[Message]:
    """The error messages of a pasted text, in order: every ``SomeError: …`` wherever it stands in
    a line, with the lines that continue it. Without one, the non-frame lines, each on its own."""
    text = clean_paste(text[-MAX_PASTE:])
    lines = text.split("\n")
    found: list[Message] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        m = _TYPE_ANYWHERE_RE.search(ln)
        if m is None:
            # "发生异常: RuntimeError" (a debugger's header) names the type on a line of its own
            bare = re.search(r"(?:^|[\s:：])(?P<type>[A-Z]\w*(?:Error|Exception))\s*$", ln)
            if bare and i + 1 < len(lines) and lines[i + 1].strip() and not _FRAME_RE.match(lines[i + 1]):
                found.append(Message(_type_name(bare.group("type")), lines[i + 1].strip()))
                i += 2
                continue
            i += 1
            continue
        typ = m.group("type")
        tname = _type_name(typ)
        if "." in typ and not re.search(r"(?:Error|Exception|Warning|Interrupt)$", typ) and tname not in extra_types:
            # a qualified name before a colon is a type only if it is one we know of
            known = typ.rsplit(".", 1)[-1]
            if not (known[:1].isupper() and len(known) > 3 and "." in typ and typ.split(".", 1)[0] in ("torch", "onnxruntime", "onnxscript")):
                i += 1
                continue
        msg = m.group("msg").strip()
        j = i + 1
        extra: list[str] = []
        # the lines that continue it: a multi-line message, tab-listed keys, an empty first line
        while j < len(lines) and len(extra) < 8 and sum(map(len, extra)) < 800:
            nxt = lines[j]
            if not nxt.strip():
                if (msg or extra) and not (extra[-1] if extra else msg).rstrip().endswith(":"):
                    break
                j += 1
                continue
            if _FRAME_RE.match(nxt) or nxt.startswith(("Traceback", "During handling", "The above exception")) or _TYPE_ANYWHERE_RE.search(nxt):
                break
            extra.append(nxt.strip())
            j += 1
        body = " ".join([msg, *extra]).strip()
        if body or tname:
            found.append(Message(tname, body))
        i = j if extra else i + 1
    plain = [ln.strip() for ln in lines if ln.strip() and not _FRAME_RE.match(ln) and not ln.startswith("Traceback")
             and not _TYPE_ANYWHERE_RE.search(ln)]
    # a message that quotes the raise line ("raise RuntimeError("grad can be …")"): its string
    raised = [r.group(1) for ln in plain for r in [re.search(r"raise \w+\(\s*[\"'](.+?)[\"']", ln)] if r]
    if found:
        # the last exception (not a warning) is the one that ended the run; in a chain ("The above
        # exception was the direct cause …", "During handling of the above exception …") the first
        # one is the cause, and says most
        chained = re.search(r"^(?:The above exception was the direct cause|During handling of the above exception)", text, re.M)
        order = range(len(found)) if chained else range(len(found) - 1, -1, -1)
        for k in order:
            if not (found[k].type or "").endswith("warning"):
                found[k] = Message(found[k].type, found[k].text, last=True)
                break
        found = found[-12:]
        # the lines around it may hold the error without its type (a message pasted apart)
        return found + [Message(None, t, plain=True) for t in (plain[-12:] + raised) if len(t) > 20]
    out = [Message(None, t) for t in (plain[-20:] + raised)]
    if out:  # the last line that says something is the likelier error (untyped lines: printed errors)
        out[-1] = Message(None, out[-1].text, last=True)
    if len(plain) > 1:
        out.append(Message(None, " ".join(plain[-20:])))
    return out


# ---------------------------------------------------------------------------------------
# The index


@dataclass(frozen=True)
class _Face:
    """One wording of an entry: its excerpt, or a matching-only variant."""

    entry: ErrorEntry
    wording: str  # "" for the row's own excerpt
    words: tuple  # core words, in order
    tokens: frozenset  # content words (no placeholders)
    type: str | None
    weight: float = 0.0  # summed idf of the tokens
    unique: frozenset = frozenset()  # its words that no other entry has
    key_lists: frozenset = frozenset()  # the load_state_dict key lists it quotes: "missing", "unexpected"


@dataclass(frozen=True)
class ErrorIndex:
    entries: tuple  # of ErrorEntry, in order
    faces: tuple  # of _Face
    idf: dict = field(default_factory=dict)
    max_idf: float = 1.0
    types: frozenset = frozenset()
    cause_grams: tuple = ()  # per entry: the Chinese bigrams of its cause (for a query in Chinese)
    seen_in: tuple = ()  # per entry: the snippet outputs its excerpt occurs in (see :func:`prepare`)
    face_entry: tuple = ()  # per face: the index of its entry in ``entries`` (a row's variants are faces too)


def _content(words) -> frozenset:
    return frozenset(w for w in words if not w.startswith("<"))


def _cjk_grams(text: str) -> frozenset:
    out = set()
    for run in re.findall(f"[{_CJK}]+", text):
        out.update(run[k : k + 2] for k in range(len(run) - 1))
        if len(run) == 1:
            out.add(run)
    return frozenset(out)


def _split_type(text: str) -> tuple[str | None, str]:
    m = ERROR_LINE_RE.match(text.strip().splitlines()[0]) if text.strip() else None
    if m and m.group("msg") is not None:
        return _type_name(m.group("type")), m.group("msg")
    m2 = re.match(r"^(?:[A-Za-z_]\w*\.)*(?P<t>[A-Z]\w*):\s*(?P<m>.*)$", text.strip())
    if m2 and (m2.group("t").endswith(("Error", "Exception", "Warning")) or m2.group("t") in _KEEP_CAMEL
               or m2.group("t") in _TORCH_TYPES):
        return m2.group("t").casefold(), m2.group("m")
    return None, text


def prepare(entries: list[ErrorEntry], variants: list[Variant] | None = None, outputs: list[tuple[str, str]] | None = None) -> ErrorIndex:
    """The entries normalized once. ``outputs`` (snippet key, expected output) say which runs each
    excerpt occurs in: an excerpt that every run of another entry's error prints too (the common
    opening "Weights only load failed.") is the more general of the two, and gives way to it."""
    by_text: dict[str, list[Variant]] = {}
    for v in variants or []:
        by_text.setdefault(v.row, []).append(v)
    raw = []
    face_entry = []
    for i, e in enumerate(entries):
        for wording, text in [("", e.text)] + [(v.text, v.text) for v in by_text.get(e.text, [])]:
            typ, msg = _split_type(text)
            words = tuple(core_words(msg))
            raw.append((e, wording, words, _content(words), typ))
            face_entry.append(i)
    n = max(1, len(entries))
    holders: dict[str, set] = {}
    for e, _w, _words, toks, _t in raw:
        for t in toks:
            holders.setdefault(t, set()).add(id(e))  # an entry's variants count once
    # a state-dict key's first part ("module.", "_orig_mod.") is the common prefix that tells two
    # key errors apart: it weighs double
    idf = {t: math.log(1 + n / len(h)) * (2.0 if t.startswith("k_") else 1.0) for t, h in holders.items()}
    owners = holders
    faces = tuple(
        _Face(e, w, words, toks, typ, sum(idf[t] for t in toks), frozenset(t for t in toks if owners[t] == {id(e)}),
              _key_lists(w or e.text))
        for e, w, words, toks, typ in raw
    )
    types = frozenset(t for *_, t in raw if t)
    grams = tuple(_cjk_grams(e.cause) for e in entries)
    flat_outputs = [(k, " ".join(o.split())) for k, o in (outputs or [])]
    needles = [" ".join(e.text.split()) for e in entries]
    seen = tuple(frozenset(k for k, o in flat_outputs if needle in o) for needle in needles)
    return ErrorIndex(tuple(entries), faces, idf, math.log(1 + n), types, grams, seen, tuple(face_entry))


def error_index(course: Course) -> ErrorIndex:
    """The course's entries, normalized once and remembered on the course."""
    index = course.memo.get("error_index")
    if index is None:
        entries = error_entries(course)
        variants = course_variants(course) if entries and entries[0].source == "appendix" else []
        outputs = [(s.key, s.expected) for ch in course.chapters if ch.available for s in ch.snippets if s.expected]
        index = course.memo["error_index"] = prepare(entries, variants, outputs)
    return index


# ---------------------------------------------------------------------------------------
# Scoring

HEAD = 12  # the opening words of a message the entry must explain


def _score(face: _Face, words: list[str], toks: frozenset, head: list[str], index: ErrorIndex, keywords: bool = False) -> float:
    if not face.tokens or not face.weight:
        return 0.0
    shared = face.tokens & toks
    if not shared:
        return 0.0
    idf, top = index.idf, index.max_idf
    mass = sum(idf[t] for t in shared)
    if keywords:
        # a few keywords, not an error message: at best a near match, when the entry has them all
        return MIN_SCORE + 0.1 * (mass / face.weight) if shared == toks else 0.0
    recall = mass / face.weight  # how much of the entry the message holds
    qmass = sum(idf.get(t, top) for t in toks)
    # how much of the message the entry holds (the learner pasted half of it): only for a real message
    covered = mass / qmass if qmass and len(toks) >= 5 else 0.0
    m = SequenceMatcher(None, face.words, words, autojunk=False).find_longest_match(0, len(face.words), 0, len(words))
    run = m.size / min(len(face.words), len(words)) if m.size >= min(2, len(face.words)) else 0.0
    htoks = [t for t in head if not t.startswith("<")]
    hw = sum(idf.get(t, top) for t in htoks)
    explained = sum(idf.get(t, top) for t in htoks if t in face.tokens) / hw if hw else 0.0
    specific = min(1.0, mass / 25.0)
    # a message the entry holds whole but that lacks some of the entry's words (a half-pasted
    # message, or the shorter error whose words a longer entry repeats) is explained a little less
    # than by an entry the message holds whole as well: the two never tie
    fit = max(recall, covered * (1.0 - 0.1 * (1.0 - recall)))
    score = 0.5 * fit + 0.3 * min(run, 1.0) + 0.2 * explained + 0.1 * specific
    if face.unique and not (face.unique & toks):
        # the words only this entry has are all missing: whatever matched, other entries explain it too
        score = min(score, SURE_SCORE - 0.01)
    return score


_UNEXPECTED_RE = re.compile(r"unexpected key", re.I)
_KEY_LIST_RE = re.compile(r"\b(missing|unexpected) key", re.I)


def _key_lists(text: str) -> frozenset:
    """The key lists a load_state_dict message (or an entry's excerpt) has: "missing", "unexpected"."""
    return frozenset(m.group(1).lower() for m in _KEY_LIST_RE.finditer(text))


def _key_lists_cap(entry: frozenset, message: frozenset) -> float | None:
    """The most an entry quoting the key lists ``entry`` may score for a message listing
    ``message`` (None: no limit; 0: it is not that error).

    An entry that quotes a Missing list is about which lists a load has: with an Unexpected list
    too (a whole checkpoint dict passed in: its run always lists both), or without one (a
    parameter the file lacks). It is never the error of a message whose Unexpected list it does
    not share; for unexpected keys alone, the entry quoting both lists is at best near. An entry quoting only Unexpected keys is about their prefix (``module.``, ``_orig_mod.``),
    which may stand on either side: its words decide."""
    if "missing" not in entry:
        return None
    if ("unexpected" in entry) != ("unexpected" in message):
        return 0.0
    return None if "missing" in message else SURE_SCORE - 0.01


def _shared_key_prefixes(text: str) -> set[str]:
    """A load_state_dict message lists missing and unexpected keys. A first part both lists share
    ("module." on both sides: the model is wrapped too) is no prefix problem: it stays a feature
    only when one side has it and the other does not."""
    m = _UNEXPECTED_RE.search(text)
    if m is None:
        return set()
    starts = [x.start() for x in re.finditer(r"missing key", text[: m.start()], re.I)]
    if not starts:
        return set()
    missing = {w for w in core_words(text[starts[-1] : m.start()][-20_000:]) if w.startswith("k_")}
    end = text.find("\n\n", m.start())
    unexpected = {w for w in core_words(text[m.start() : end if end > 0 else None][:20_000]) if w.startswith("k_")}
    return missing & unexpected


def _prefix_decides(best: dict, best_face: dict, pasted: set[str]) -> None:
    """A key prefix the paste has that only one load error's entry names (``module.``,
    ``_orig_mod.``: on either side) decides for it: the other load errors (missing keys alone, a
    whole checkpoint dict) come after it (``best``, entry index -> (score, wording), changed in place)."""
    def names_prefix(face) -> bool:
        return any(t.startswith("k_") and t in pasted for t in face.unique)

    prefixed = [best[e][0] for e, f in best_face.items() if f.key_lists and names_prefix(f)]
    if not prefixed:
        return
    top = max(prefixed)
    for e, f in best_face.items():
        if f.key_lists and not names_prefix(f) and best[e][0] >= top:
            best[e] = (top - 0.001, best[e][1])


def _holds_more(specific: _Face | None, general: _Face | None, pasted: set[str], idf: dict) -> bool:
    """Whether the paste holds most of what the specific entry's wording adds to the general one's."""
    if specific is None or general is None:
        return True
    extra = specific.tokens - general.tokens
    if not extra:
        return True
    mass = sum(idf.get(t, 0.0) for t in extra)
    return not mass or sum(idf.get(t, 0.0) for t in extra & pasted) >= 0.5 * mass


def lookup_error(course: Course, text: str, limit: int = 10, entries: list[ErrorEntry] | ErrorIndex | None = None) -> list[Hit]:
    """Entries best matching a pasted error (a line, a whole traceback, or a few keywords).

    Answers (``sure``) first, then near matches; a text that matches nothing above ``MIN_SCORE``
    gets no hit at all, never the least bad entry.
    """
    if not text or not text.strip():
        return []
    text = text[-MAX_PASTE:]
    if entries is None:
        index = error_index(course)
    elif isinstance(entries, ErrorIndex):
        index = entries
    else:
        index = prepare(entries)
    if not index.faces:
        return []
    msgs = messages_of(text, index.types)
    # a few words typed in, not a pasted error: at best near matches
    keywords = not any(m.type for m in msgs) and len(_content(core_words(text[-2000:]))) < 4
    type_count: dict[str, int] = {}
    for f in index.faces:
        if f.type:
            type_count[f.type] = type_count.get(f.type, 0) + 1
    best: dict[int, tuple[float, str]] = {}
    best_face: dict[int, _Face] = {}
    pasted: set[str] = set()  # every content word of the paste's messages
    shared_prefixes = _shared_key_prefixes(text)
    paste_lists = _key_lists(text)
    for msg in msgs:
        words = [w for w in core_words(msg.text)[:400] if w not in shared_prefixes]
        if not words:
            continue
        toks = _content(words)
        pasted |= toks
        head = words[:HEAD]
        # a paste's lists may stand on lines read as messages of their own: the paste's lists count
        key_lists = _key_lists(msg.text) and paste_lists
        raw = [_score(face, words, toks, head, index, keywords) for face in index.faces]
        others_match = max(raw, default=0.0) >= MIN_SCORE
        for k, face in enumerate(index.faces):
            sc = raw[k]
            same_rare_type = (msg.type is not None and msg.type == face.type and type_count.get(face.type, 0) <= 2
                              and face.type not in _GENERIC_TYPES)
            if sc <= 0 and not same_rare_type:
                continue
            if msg.type and face.type:
                if not _types_compatible(msg.type, face.type):
                    sc -= 0.12
                elif same_rare_type:
                    # a type only this entry has (FailOnRecompileLimitHit, dynamo's Unsupported) says a lot:
                    # when no entry's words match the message, the type alone is the answer
                    sc = sc + 0.15 if others_match else max(sc + 0.15, SURE_SCORE + 0.01)
            if msg.plain:
                sc -= 0.08  # a line without its type: less sure than the exception itself
            elif not msg.last and any(m.last for m in msgs):
                sc -= 0.02  # the exception that ended the run says most
            if key_lists and face.key_lists:
                cap = _key_lists_cap(face.key_lists, key_lists)
                if cap == 0.0:
                    continue  # another load error than the message's: missing keys alone, or with unexpected ones
                if cap is not None:
                    sc = min(sc, cap)
            e_idx = index.face_entry[k]
            if sc > best.get(e_idx, (0.0, ""))[0]:
                best[e_idx] = (sc, "" if keywords else face.wording)
                best_face[e_idx] = face
    _prefix_decides(best, best_face, pasted)
    if not best and re.search(f"[{_CJK}]", text) and not re.search(r"[A-Za-z]{3,}", text):
        # a query in Chinese only: the causes' words
        q = _cjk_grams(text)
        for k, grams in enumerate(index.cause_grams):
            if q and grams:
                sc = len(q & grams) / len(q)
                if sc >= 0.5:
                    best[k] = (MIN_SCORE + 0.1 * sc, "")
    if not best:
        return []
    top = max(sc for sc, _ in best.values())
    if top < MIN_SCORE:
        return []
    scores = {k: sc for k, (sc, _w) in best.items()}
    if index.seen_in:
        # of two answers, one whose excerpt every run of the other prints too is the more general: it
        # gives way (compared by what only one of them explains) - when the paste holds what the
        # other adds to it; a paste that is the shorter message alone is the more general error
        for a in list(scores):
            for b in list(scores):
                sa, sb = index.seen_in[a], index.seen_in[b]
                if a != b and sb and sb < sa and scores[a] >= SURE_SCORE and scores[b] >= SURE_SCORE and scores[a] - scores[b] < 0.15:
                    if _holds_more(best_face.get(b), best_face.get(a), pasted, index.idf):
                        scores[a] = min(scores[a], scores[b] - 0.001)
    ranked = sorted(((scores[k], k, w) for k, (sc, w) in best.items() if scores[k] >= MIN_SCORE and scores[k] >= top - 0.25),
                    key=lambda x: (-x[0], x[1]))
    sure_any = ranked[0][0] >= SURE_SCORE
    out = []
    for sc, k, w in ranked[:limit]:
        sure = sc >= SURE_SCORE
        if sure_any and not sure:
            continue  # an answer exists: near matches would only distract
        out.append(Hit(index.entries[k], round(min(sc, 1.0), 4), sure, w))
    return out


# ---------------------------------------------------------------------------------------
# Where the chapters mention it


def mentions(course: Course, text: str, limit: int = 3) -> list:
    """When no entry matches: chapter lines (prose or a snippet's output) that hold a run of
    the message's own words, as :class:`torchcourse.lookup.search.TextHit`. Code is not searched."""
    from torchcourse.lookup.search import search_text

    msgs = messages_of(text[-MAX_PASTE:])
    if not msgs:
        return []
    primary = next((m for m in reversed(msgs) if m.last), msgs[-1])
    raw = re.sub(r"\s+", " ", _NUMBER_RE.sub(" ", primary.text)).strip()
    words = [w for w in re.findall(r"[A-Za-z_][A-Za-z_]+", raw)]
    seen, out = set(), []
    for k in range(0, max(1, len(words) - 4) if len(words) >= 5 else 0):
        window = words[k : k + 5]
        if sum(w.lower() not in _STOP for w in window) < 3:
            continue
        phrase = " ".join(window)
        for h in search_text(course, phrase, limit=20):
            ch = course.chapter(h.chapter_id)
            if ch is None or ch.kind == "appendix" or _in_code(ch, h.line):
                continue
            if re.sub(r"\s+", " ", h.excerpt).lower().find(phrase.lower()) < 0:
                continue
            key = (h.chapter_id, h.anchor)
            if key not in seen:
                seen.add(key)
                out.append(h)
                if len(out) >= limit:
                    return out
        if k > 12:
            break
    return out


def _in_code(chapter, line: int) -> bool:
    """Whether a chapter line is inside a ```python fence (an ```output fence is a run's output)."""
    fence = None
    for n, ln in enumerate(chapter.source.splitlines(), start=1):
        s = ln.strip()
        if s.startswith("```"):
            fence = None if fence is not None else (s[3:].split() or [""])[0].split("{")[0]
            continue
        if n == line:
            return fence is not None and fence != "output"
    return False


# ---------------------------------------------------------------------------------------
# Full-text search


def where_label(course: Course, entry: ErrorEntry) -> str:
    """Where an entry is explained, as the learner finds it: chapter and section (and the link
    the app and ``torchcourse read`` understand), never a file line."""
    return f"→ {course.chapter_label(entry.chapter_id)} §{entry.section_title} ({entry.link})"


def excerpt_selection_problems(course: Course) -> list:
    """Appendix rows that no longer answer their own error: for each error a snippet prints whose
    text holds a row's 报错原文, the lookup (as a learner pasting that error gets it) must answer
    with that row. An excerpt cut down to ``ValueError:`` holds for every ValueError and answers
    none (walk M4). ``torchcourse check`` adds these to the checker's problems (the checker itself
    never imports the lookup)."""
    from torchcourse.course.appendix import flat
    from torchcourse.course.model import Problem

    entries = appendix_entries(course)
    if not entries:
        return []
    index = error_index(course)
    files = {ch.id: ch.file for ch in appendices(course)}
    reported: set[str] = set()
    problems = []
    for ch in course.chapters:
        if not ch.available:
            continue
        for snip in ch.snippets:
            if not snip.expected or TRACEBACK_HEAD not in snip.expected:
                continue
            for err in errors_in_output(snip.expected):
                said = flat(err)
                meant = [e for e in entries if flat(e.text) and flat(e.text) in said]
                if not meant:
                    continue  # no row quotes it: check's "ends in an error that no row quotes"
                hits = lookup_error(course, err, limit=3, entries=index)
                top = hits[0] if hits and hits[0].sure else None
                if top is not None and any(top.entry.origin == e.origin for e in meant):
                    continue
                answer = f"给出的是第 {top.entry.origin.split(':', 1)[1]} 行" if top is not None else "找不到有把握的答案"
                for e in meant:
                    if e.origin in reported:
                        continue
                    reported.add(e.origin)
                    app_id, _, line = e.origin.partition(":")
                    short = err if len(err) <= 70 else err[:67] + "..."
                    problems.append(Problem(files.get(app_id, app_id), int(line) if line.isdigit() else 1,
                                            f"报错原文 {e.text!r} 选不中它自己这一行：{snip.key} 打印 {short!r}，反查却"
                                            f"{answer}；除了异常类型，多引用一些报错信息"))
    return problems
