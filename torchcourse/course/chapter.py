"""Parse one chapter file (Markdown) into parts, sections, snippets and callouts.

The format is documented for authors in ``content/README.md``. In short:

- ````` ```python {#id attr ...} ````` is a snippet; the ````` ```output ````` block right after it
  (only blank lines between) is its expected output.
- ``<!-- break -->`` or ``<!-- break: 标签 -->`` alone on a line is a break point 🛑; it ends a part.
- ``## 标题 {#anchor}`` gives a section a stable anchor (otherwise one is made from the title).
- A block quote whose text starts with ⭐ or ⚠️ is a callout.

Reading time (the ⏱ badge) is computed here, see :func:`reading_chars`.
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path

from torchcourse.course.model import Callout, Chapter, Part, Problem, Section, Snippet
from torchcourse.course.releases import OutputAlternative, parse_alternative

SNIPPET_LANG = "python"
OUTPUT_LANG = "output"
# other tags other tools run as Python (Jupyter Book, MyST, Quarto): with attributes they are
# refused with the reason, so a snippet never silently becomes display-only code
PYTHON_ALIASES = {"py", "python3", "py3", "ipython", "ipython3"}
FLAG_ATTRS = {"gpu", "norun", "cold", "proof"}  # proof: the folded run behind the claim above it
VALUE_ATTRS = {"timeout"}  # numeric: seconds
INT_ATTRS = {"exit"}  # the exit status the snippet is meant to end with (sys.exit(N))
NAME_ATTRS = {"raises"}  # an exception class name, as on a traceback's final line
MAX_TIMEOUT = 600.0  # seconds; a larger timeout= is a problem
EXC_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")

BREAK_RE = re.compile(r"^\s*<!--\s*break(?:\s*:\s*(?P<label>.*?))?\s*-->\s*$")
HEADING_ATTR_RE = re.compile(r"\s*\{#(?P<anchor>[A-Za-z0-9_\-]+)\}\s*$")
FENCE_LINE_RE = re.compile(r"^\s*(```|~~~)")
COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
LINK_TARGET_RE = re.compile(r"\]\((?:[A-Za-z0-9]+)?(?:#[A-Za-z0-9_\-]+)?\)")  # a course link's target
_SPACE_RE = re.compile(r"\s+")
_LINE_END_ANCHOR_RE = re.compile(r"\{#[A-Za-z0-9_\-]+\}(?=[^\S\n]*$)", re.M)  # HEADING_ATTR_RE, line by line
_CJK_RE = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")

_md = None


def markdown_parser():
    """The one markdown-it parser of the project (the model and the reader's segments share it),
    imported on first use: a cached course never needs it (start-up time)."""
    global _md
    if _md is None:
        from markdown_it import MarkdownIt

        # Block structure only: the model reads blocks and the raw text of inline tokens, never
        # their children (links, emphasis), so the inline pass (half of the parse) is skipped.
        _md = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    return _md


def reading_chars(source: str) -> int:
    """The character count behind the ⏱ badge.

    Rule: every non-whitespace character of the chapter file counts (prose, code and its
    output alike), except HTML comments (break markers), fence delimiter lines (```python …),
    heading anchors ``{#…}`` and the targets of course links (``(03#anchor)`` in
    ``[文字](03#anchor)``: the reader shows only the link text). Minutes =
    round(count / chars_per_minute), at least 1.
    """
    text = COMMENT_RE.sub("", without_proofs(source))
    text = "\n".join(ln for ln in text.splitlines() if not FENCE_LINE_RE.match(ln))
    # whitespace never counts, so an anchor goes with or without the spaces around it
    text = LINK_TARGET_RE.sub("]", _LINE_END_ANCHOR_RE.sub("", text))
    return len(_SPACE_RE.sub("", text))  # \s on str is exactly str.isspace()


_PROOF_FENCE_RE = re.compile(r"^\s*```python\s*\{[^}]*(?<![\w=-])proof(?![\w=-])[^}]*\}\s*$")
_OUTPUT_FENCE_RE = re.compile(r"^\s*```output\b")


_ALT_FENCE_RE = re.compile(r"^\s*```output\s*\{[^}]*\S[^}]*\}\s*$")


def without_proofs(source: str) -> str:
    """The source without its proof snippets (``{#id proof}``) and their output blocks: a proof
    is folded under its claim and read only by a learner who opens it, so it is no reading time.
    Output alternatives for other releases (```output {torch==2.15.0}) go too: a learner reads
    one output per snippet, never the others."""
    lines = source.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _ALT_FENCE_RE.match(lines[i]):
            i = _skip_fence(lines, i)
            continue
        if not _PROOF_FENCE_RE.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        i = _skip_fence(lines, i)
        while True:  # the output block(s) right after it, blank lines between
            j = i
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and _OUTPUT_FENCE_RE.match(lines[j]):
                i = _skip_fence(lines, j)
            else:
                break
    return "\n".join(out)


def _skip_fence(lines: list[str], i: int) -> int:
    """The index after the fence that opens at ``lines[i]``."""
    i += 1
    while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
        i += 1
    return i + 1


def _misspelt_output(lang: str) -> bool:
    """A fence language an author meant as ``output`` (``ouput``, ``outptu``, ``Output``, ``out``)."""
    low = lang.lower()
    if low == OUTPUT_LANG:
        return lang != OUTPUT_LANG
    return low in ("out", "outputs", "result", "stdout") or difflib.SequenceMatcher(None, low, OUTPUT_LANG).ratio() >= 0.75


_BAD_HEADING_ATTR_RE = re.compile(r"\s*\{#(?P<anchor>[^}\s]*)\}\s*$")


def _ascii_guess(anchor: str) -> str:
    import unicodedata

    plain = unicodedata.normalize("NFKD", anchor).encode("ascii", "ignore").decode()
    plain = re.sub(r"[^A-Za-z0-9_-]+", "-", plain).strip("-")
    return plain or "some-anchor"


def minutes_for(chars: int, chars_per_minute: int) -> int:
    return max(1, math.floor(chars / chars_per_minute + 0.5))


def slugify(title: str) -> str:
    slug = re.sub(r"[^\w]+", "-", title.strip().lower(), flags=re.U).strip("-")
    return slug or "section"


def parse_fence_info(info: str) -> tuple[str, str | None]:
    """Split ``python {#id attrs}`` into (language, attribute text or None)."""
    info = info.strip()
    m = re.match(r"^(?P<lang>[^\s{]*)\s*(?:\{(?P<attrs>.*)\})?\s*$", info)
    if not m:
        return info.split()[0] if info else "", None
    return m.group("lang"), m.group("attrs")


def suggest_attr(token: str) -> str | None:
    """The known attribute a misspelled fence token was probably meant to be (``timout=5`` →
    ``timeout=5``), or None."""
    name, eq, value = token.partition("=")
    guess = difflib.get_close_matches(name, sorted({*FLAG_ATTRS, *VALUE_ATTRS, *NAME_ATTRS, *INT_ATTRS}), n=1, cutoff=0.6)
    if not guess or guess[0] == name:
        return None
    return guess[0] + (eq + value if guess[0] not in FLAG_ATTRS else "")


def parse_attrs(attrs: str | None, where: tuple[Path, int], problems: list[Problem]) -> dict:
    out: dict = {"id": None}
    if not attrs:
        return out
    for tok in attrs.split():
        if tok.startswith("#"):
            out["id"] = tok[1:]
        elif tok in FLAG_ATTRS:
            out[tok] = True
        elif "=" in tok and tok.split("=", 1)[0] in VALUE_ATTRS:
            key, value = tok.split("=", 1)
            try:
                number = float(value)
                if not (0 < number <= MAX_TIMEOUT):  # also refuses nan and inf
                    raise ValueError
                out[key] = number
            except ValueError:
                problems.append(Problem(where[0], where[1], f"属性 {key}= 要写秒数：大于 0、最多 {MAX_TIMEOUT:g}，这里是 {value!r}"))
                out.setdefault("bad_attrs", []).append(tok)
        elif "=" in tok and tok.split("=", 1)[0] in INT_ATTRS:
            key, value = tok.split("=", 1)
            if value.isdigit() and 1 <= int(value) <= 255:
                out["exit_code"] = int(value)
            else:
                problems.append(Problem(where[0], where[1], f"属性 {key}= 要写代码块结束时的退出码，1 到 255（sys.exit(3) 的退出码是 3），这里是 {value!r}"))
                out.setdefault("bad_attrs", []).append(tok)
        elif "=" in tok and tok.split("=", 1)[0] in NAME_ATTRS:
            key, value = tok.split("=", 1)
            if EXC_NAME_RE.match(value):
                out[key] = value
            else:
                problems.append(Problem(where[0], where[1], f"属性 {key}= 要写异常类名，如 RuntimeError，这里是 {value!r}"))
                out.setdefault("bad_attrs", []).append(tok)
        else:
            known = [*sorted(FLAG_ATTRS), *(f"{v}=N" for v in sorted(VALUE_ATTRS | INT_ATTRS)), *(f"{v}=ExceptionName" for v in sorted(NAME_ATTRS))]
            guess = suggest_attr(tok)
            hint = f"；是不是想写 {guess!r}？" if guess else ""
            problems.append(Problem(where[0], where[1], f"未知的围栏属性 {tok!r}{hint}（已知的：#id, {', '.join(known)}）"))
            out.setdefault("bad_attrs", []).append(tok)
    return out


_BREAKISH_RE = re.compile(r"<!--\s*(?P<word>[^\s:：>-]*)")


def looks_like_break(line: str) -> bool:
    """An HTML comment that an author meant as a break marker but misspelled (``<!-- brake -->``,
    ``<!-- BREAK: x -->``, ``<!-- break 中场 -->``, text beside a marker), never a correct one."""
    if "<!--" not in line or BREAK_RE.match(line):
        return False
    m = _BREAKISH_RE.search(line)
    word = (m.group("word") if m else "").lower()
    return word.startswith("break") or "断点" in line or difflib.SequenceMatcher(None, word[:6], "break").ratio() >= 0.6


_BADGE_RE = re.compile(r"⏱\s*约?\s*(?P<n>\d+)\s*分钟")


def _plain(text: str) -> str:
    """Text without Markdown emphasis, code marks and white space (to compare a promise)."""
    return re.sub(r"[`*_\s]", "", text)


def _anatomy(chapter: Chapter, lines: list[str], fence_lines: set[int], breaks: list[tuple[int, str]],
             chars_per_minute: int) -> list[Problem]:
    """The chapter anatomy of content/README.md: a ``# 标题``, a 🎯 line before the first section,
    a ✅ checkpoint heading, the final break after it, a ⚡ recap after the final break. The ⏱
    badge is the program's: a hand-written ⏱ figure that disagrees with it is a problem."""
    path = chapter.file
    out: list[Problem] = []
    prose = [(i, ln) for i, ln in enumerate(lines) if i not in fence_lines]
    headings = [(i, ln) for i, ln in prose if ln.startswith("#")]
    if not headings or not headings[0][1].startswith("# "):
        out.append(Problem(path, 1, "一章要以标题开头：'# 标题'"))
    first_section = next((i for i, ln in headings if ln.startswith("## ")), len(lines))
    goal = next(((i, ln) for i, ln in prose if i < first_section and "🎯" in ln), None)
    if goal is None:
        out.append(Problem(path, 1, "第一个 ## 小节之前没有 🎯 行（这一章的承诺）"))
    elif chapter.promise and not _plain(goal[1].split("🎯", 1)[1]).startswith(_plain(chapter.promise)):
        out.append(Problem(path, goal[0] + 1, f"🎯 行必须以 course.toml 里这一章的 promise 开头：{chapter.promise!r}"))
    for i, ln in prose:
        m = _BADGE_RE.search(ln)
        if m and int(m.group("n")) != chapter.minutes:
            out.append(Problem(path, i + 1, f"⏱ 行写的是 {m.group('n')} 分钟，但算出来这一章读 {chapter.minutes} 分钟（每分钟 {chars_per_minute} 字）：阅读器显示的是算出来的时长；改正或删掉这个数字"))
    check = next((i for i, ln in headings if ln.startswith("## ") and "✅" in ln), None)
    recap = next((i for i, ln in headings if ln.startswith("## ") and "⚡" in ln), None)
    if check is None:
        out.append(Problem(path, len(lines) or 1, "没有 '## ✅ 检查点' 标题（检查点）"))
    if recap is None:
        out.append(Problem(path, len(lines) or 1, "没有 '## ⚡ 走神救援' 标题（回顾）"))
    if breaks:
        final = breaks[-1][0]
        if check is not None and final < check:
            out.append(Problem(path, final + 1, f"最后一个断点必须在 ✅ 检查点标题（第 {check + 1} 行）之后"))
        if recap is not None and recap < final:
            out.append(Problem(path, recap + 1, f"⚡ 回顾必须在最后一个断点（第 {final + 1} 行）之后"))
    return out


def _anchor_snippet_clashes(chapter: Chapter) -> list[Problem]:
    """A section anchor that is also a snippet id elsewhere: ``#x`` leads to the section, so the
    snippet can never be linked. (A snippet inside the section of its own name is fine: the link
    lands on the heading right above it.)"""
    out = []
    for sec in chapter.sections:
        snip = chapter.snippet(sec.anchor)
        if snip is not None and snip.section != sec.anchor:
            out.append(Problem(chapter.file, sec.line, f"小节锚点 #{sec.anchor} 也是第 {snip.line} 行那个代码块的 id，而那个代码块不在这个小节里：链接 #{sec.anchor} 只会跳到这里，到不了那个代码块；把其中一个改名"))
    return out


def parse_chapter(chapter: Chapter, source: str, chars_per_minute: int) -> list[Problem]:
    """Fill ``chapter`` from its Markdown ``source``; return the problems found."""
    problems: list[Problem] = []
    path = chapter.file
    lines = source.splitlines()
    chapter.source = source

    # 1. Break points split the file into parts (by line, outside code fences).
    tokens = markdown_parser().parse(source)
    fence_lines: set[int] = set()
    unclosed: int | None = None  # 1-based line of a fence that is never closed
    for tok in tokens:
        if tok.type == "fence" and tok.map:
            fence_lines.update(range(tok.map[0], tok.map[1]))
            last = lines[tok.map[1] - 1].strip() if tok.map[1] - 1 < len(lines) else ""
            closed = tok.map[1] - tok.map[0] >= 2 and last.startswith(tok.markup[0] * len(tok.markup)) and not last.strip(tok.markup[0])
            if not closed and unclosed is None:
                unclosed = tok.map[0] + 1
                problems.append(Problem(path, unclosed, f"代码围栏 {lines[tok.map[0]].strip()!r} 在这里打开后一直没有关闭：后面的全部内容都成了代码（补上收尾的 {tok.markup}）"))
    breaks: list[tuple[int, str]] = []  # (0-based line, label)
    nested_html = {tok.map[0] for tok in tokens if tok.type == "html_block" and tok.map and tok.level > 0}
    table_lines: set[int] = set()
    for tok in tokens:
        if tok.type == "table_open" and tok.map:
            table_lines.update(range(tok.map[0], tok.map[1]))
    for i, ln in enumerate(lines):
        if i in fence_lines:
            continue
        m = BREAK_RE.match(ln)
        if m and i in nested_html:
            problems.append(Problem(path, i + 1, f"断点标记 {ln.strip()!r} 在列表项里面：会把列表切成两半；把它放到列表之后，不缩进，前面空一行"))
        elif m and i - 1 in table_lines and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("|"):
            problems.append(Problem(path, i + 1, f"断点标记 {ln.strip()!r} 夹在表格的两行之间：会把表格切断（它后面的行会显示成原始文字）；把它放到表格之后，前面空一行"))
        elif m:
            breaks.append((i, (m.group("label") or "").strip() or "断点"))
        elif looks_like_break(ln):
            problems.append(Problem(path, i + 1, f"{ln.strip()!r} 看起来像断点标记，但不是：单独一行写 <!-- break --> 或 <!-- break: 标签 -->（小写，标签前加冒号）"))
    parts: list[Part] = []
    start = 0
    for idx, (line_no, label) in enumerate(breaks):
        parts.append(Part(idx, "\n".join(lines[start:line_no]).strip("\n"), start + 1, line_no + 1, label))
        start = line_no + 1
    tail = "\n".join(lines[start:]).strip("\n")
    if tail or not parts:
        parts.append(Part(len(parts), tail, start + 1, max(len(lines), start + 1), None))
    chapter.parts = parts

    def part_of(line0: int) -> int:
        index = chapter.part_at(line0 + 1)
        return parts[-1].index if index is None else index

    # 2. Walk the tokens: headings, fences, callouts.
    anchors: dict[str, int] = {}
    derived: dict[str, int] = {}  # title -> line, of the sections whose anchor comes from the title
    current_section: str | None = None
    pending: Snippet | None = None  # snippet waiting for its output block
    last_output: Snippet | None = None  # the snippet whose reference output block came last
    seen_ids: dict[str, int] = {}
    misspelt: set[int] = set()  # lines of the snippets followed by a misspelt ```output fence

    def close_pending() -> None:
        nonlocal pending, last_output
        last_output = None
        if pending is not None and pending.expected is None and not pending.norun and not pending.gpu and pending.line not in misspelt:
            problems.append(Problem(path, pending.line, f"代码块 #{pending.id} 后面没有 ```output 块"))
        pending = None

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        line0 = tok.map[0] if tok.map else 0
        if tok.type == "heading_open":
            close_pending()
            inline = tokens[i + 1]
            title = inline.content
            m = HEADING_ATTR_RE.search(title)
            if m:
                anchor = m.group("anchor")
                title = title[: m.start()].rstrip()
            else:
                anchor = slugify(title)
                bad_attr = _BAD_HEADING_ATTR_RE.search(title)
                if bad_attr:
                    problems.append(Problem(path, line0 + 1, f"标题锚点 {{#{bad_attr.group('anchor')}}} 只能用 ASCII 字母、数字、'-' 和 '_'（链接要写出它，而链接目标只能是 ASCII）：阅读器会把它当成文字显示；写成例如 {{#{_ascii_guess(bad_attr.group('anchor'))}}}"))
                    title = title[: bad_attr.start()].rstrip()
            level = int(tok.tag[1])
            if not m and level >= 2:
                twin = derived.get(title.strip())
                if twin is not None:
                    problems.append(Problem(path, line0 + 1, f"小节标题 {title.strip()!r} 和第 {twin} 行的重复了，两个都没有锚点：链接、测验和报错反查都分不清它们；给其中一个加锚点：## {title.strip()} {{#some-anchor}}"))
                else:
                    derived[title.strip()] = line0 + 1
            if anchor in anchors:
                if m:
                    problems.append(Problem(path, line0 + 1, f"小节锚点 {anchor!r} 重复了（第一次出现在第 {anchors[anchor]} 行）"))
                else:
                    n = 2
                    while f"{anchor}-{n}" in anchors:
                        n += 1
                    anchor = f"{anchor}-{n}"
            anchors.setdefault(anchor, line0 + 1)
            chapter.sections.append(Section(anchor, title, level, line0 + 1, part_of(line0)))
            if level >= 2:
                current_section = anchor
            i += 3
            continue
        if tok.type == "fence":
            lang, attrs = parse_fence_info(tok.info)
            if lang == SNIPPET_LANG:
                close_pending()
                a = parse_attrs(attrs, (path, line0 + 1), problems)
                sid = a["id"]
                if not sid:
                    problems.append(Problem(path, line0 + 1, "python 代码块没有 id：写成 ```python {#some-id}"))
                    sid = f"line{line0 + 1}"
                elif not ID_RE.match(sid):
                    problems.append(Problem(path, line0 + 1, f"代码块 id {sid!r} 只能用字母、数字、'-' 和 '_'"))
                if sid in seen_ids:
                    problems.append(Problem(path, line0 + 1, f"代码块 id #{sid} 重复了（第一次出现在第 {seen_ids[sid]} 行）"))
                seen_ids.setdefault(sid, line0 + 1)
                snip = Snippet(
                    id=sid,
                    chapter_id=chapter.id,
                    code=tok.content,
                    expected=None,
                    line=line0 + 1,
                    part=part_of(line0),
                    section=current_section,
                    gpu=a.get("gpu", False),
                    norun=a.get("norun", False),
                    cold=a.get("cold", False),
                    proof=a.get("proof", False),
                    timeout=a.get("timeout"),
                    raises=a.get("raises"),
                    bad_attrs=tuple(a.get("bad_attrs", ())),
                    exit_code=a.get("exit_code"),
                )
                chapter.snippets.append(snip)
                pending = snip
            elif lang == OUTPUT_LANG and attrs is not None and attrs.strip():
                # ```output {torch==2.15.0}: another release's output, after the reference block
                prev = tokens[i - 1] if i > 0 else None
                prev_lang = parse_fence_info(prev.info)[0] if prev is not None and prev.type == "fence" else None
                parsed = parse_alternative(attrs)
                if isinstance(parsed, str):
                    problems.append(Problem(path, line0 + 1, parsed))
                elif pending is not None and prev_lang == SNIPPET_LANG:
                    problems.append(Problem(path, line0 + 1, f"#{pending.id} 的 ```output {{{attrs}}} 前面没有参考 ```output 块：参考输出（课程记录的第一个版本）在前，替代输出在后"))
                elif last_output is None or prev_lang != OUTPUT_LANG:
                    problems.append(Problem(path, line0 + 1, f"```output {{{attrs}}} 没有紧跟在某个代码块的 ```output 块后面"))
                else:
                    last_output.alternatives = (*last_output.alternatives, OutputAlternative(parsed[0], parsed[1], tok.content, line0 + 1))
                i += 1
                continue
            elif lang == OUTPUT_LANG:
                prev = tokens[i - 1] if i > 0 else None
                if pending is None or prev is None or prev.type != "fence" or parse_fence_info(prev.info)[0] != SNIPPET_LANG:
                    problems.append(Problem(path, line0 + 1, "```output 块没有紧跟在 ```python 代码块后面"))
                else:
                    if attrs:
                        problems.append(Problem(path, line0 + 1, f"```output 不带属性，这里写了 {{{attrs}}}"))
                    if pending.norun:
                        problems.append(Problem(path, line0 + 1, f"代码块 #{pending.id} 标了 norun：它从不运行，就不能有 ```output 块（阅读器会把它当成真实输出显示）；删掉这个块，或删掉 norun"))
                    if tok.content.strip() and all(ln.strip() == "..." for ln in tok.content.split("\n") if ln.strip()):
                        problems.append(Problem(path, line0 + 1, f"#{pending.id} 的 ```output 块只有通配符 '...'，它匹配任何输出：verify 永远不会失败；让 verify --accept 写出真实输出"))
                    pending.expected = tok.content
                    pending.expected_line = line0 + 1
                    last_output = pending
                    pending = None
            else:
                if lang.lower() in PYTHON_ALIASES and attrs is not None:
                    problems.append(Problem(path, line0 + 1, f"```{lang} {{{attrs}}}：只有 ```python 围栏才是代码块（会运行、验证、接受输出）；写成 ```python {{{attrs}}}；如果只是展示的代码，就去掉花括号"))
                elif pending is not None and lang and _misspelt_output(lang):
                    problems.append(Problem(path, line0 + 1, f"代码块 #{pending.id} 后面的 ```{lang} 像是拼错的 ```output 围栏：写成 ```output（verify 只比较 ```output 块；这个块会显示成普通文字）"))
                    misspelt.add(pending.line)
                close_pending()
            i += 1
            continue
        if tok.type == "blockquote_open":
            close_pending()
            # the first inline token inside the quote
            j = i + 1
            while j < len(tokens) and tokens[j].type != "inline":
                j += 1
            if j < len(tokens):
                text = tokens[j].content.lstrip("*_ ")
                if text.startswith("⭐"):
                    chapter.callouts.append(Callout("star", line0 + 1, part_of(line0)))
                elif text.startswith("⚠"):
                    chapter.callouts.append(Callout("warn", line0 + 1, part_of(line0)))
            # skip to the matching close
            depth = 0
            while i < len(tokens):
                if tokens[i].type == "blockquote_open":
                    depth += 1
                elif tokens[i].type == "blockquote_close":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            i += 1
            continue
        if tok.type.endswith("_open") and tok.level == 0 and tok.type not in ("paragraph_open",):
            close_pending()
        elif tok.type == "paragraph_open" and tok.level == 0:
            close_pending()
        i += 1
    close_pending()

    # A line break inside a Chinese paragraph renders as a space between two characters.
    for tok in tokens:
        if tok.type == "inline" and tok.map and "\n" in tok.content:
            for k, (left, right) in enumerate(zip(tok.content.split("\n"), tok.content.split("\n")[1:])):
                if left and right and _CJK_RE.match(left[-1]) and _CJK_RE.match(right[0]):
                    problems.append(Problem(path, tok.map[0] + k + 1, "中文段落被断成了多行（显示时两个字之间会多出一个空格）；把这几行接起来"))

    problems.extend(_anchor_snippet_clashes(chapter))

    chapter.reading_chars = reading_chars(source)
    chapter.minutes = minutes_for(chapter.reading_chars, chars_per_minute)
    if chapter.kind == "chapter":
        problems.extend(_anatomy(chapter, lines, fence_lines, breaks, chars_per_minute))
    if chapter.kind == "chapter" and not breaks and unclosed is None:  # an unclosed fence hid them
        problems.append(Problem(path, len(lines) or 1, "这一章没有断点；检查点之后必须以 <!-- break --> 结尾"))
    elif chapter.minutes >= 110 and len(breaks) < 3:  # one message, the stricter rule
        problems.append(Problem(path, 1, f"这一章要读 {chapter.minutes} 分钟（>= 110），却只有 {len(breaks)} 个断点；需要正文里两个、检查点之后一个"))
    elif chapter.minutes > 55 and len(breaks) < 2:
        # one in the middle, one after the checkpoint
        problems.append(Problem(path, 1, f"这一章要读 {chapter.minutes} 分钟（> 55），却只有 {len(breaks)} 个断点；需要中间一个、检查点之后一个"))
    return problems
