"""The whole-course check behind ``torchcourse check`` (and the app's problem count).

It gathers the problems of every part — the content model's own (chapters, links, the appendix
table) and the quiz bank's (checkpoints) — so it lives above those parts, not inside the model.
"""

from __future__ import annotations

import re
from pathlib import Path

from torchcourse.course.appendix import appendices, appendix_problems, appendix_rows, flat, strip_code
from torchcourse.course.links import link_problems
from torchcourse.course.loader import chapter_minutes
from torchcourse.course.model import Course, Problem
from torchcourse.quiz.bank import validate_checkpoints
from torchcourse.runner.normalize import normalize


def all_problems(course: Course) -> list[Problem]:
    """Content problems (chapters, links, the appendix's error tables) plus checkpoint problems."""
    problems = list(course.problems)
    problems.extend(link_problems(course))
    problems.extend(appendix_problems(course))
    problems.extend(excerpt_problems(course))
    problems.extend(uncovered_error_problems(course))
    problems.extend(variant_problems(course))
    problems.extend(alternative_problems(course))
    problems.extend(validate_checkpoints(course))
    problems.extend(author_problems(course))
    problems.extend(preload_problems(course))
    return _with_suggestions(course, _without_cascades(course, _without_repeats(problems)))


_REFUSED_RE = re.compile(r"^第 (?P<id>[A-Za-z0-9]+) 章：file '.*' 在课程根目录 .* 之外，不予读取")


def _without_cascades(course: Course, problems: list[Problem]) -> list[Problem]:
    """One problem for a chapter whose file was refused (outside the course root, L11): links to
    it, its checkpoint file "not used", and appendix excerpts only its snippets printed are
    consequences, left out until the file is fixed (the refusal says so)."""
    refused = {m.group("id"): p for p in problems if (m := _REFUSED_RE.match(p.message))}
    if not refused:
        return problems
    text = _toml_text(course)
    out = []
    for p in problems:
        msg = p.message
        if p in refused.values():
            p = Problem(p.file, p.line, msg + "（指向它的链接、它的检查点和附录里它的报错所在的行，要等文件放进课程目录后才检查）")
        elif any(f"没有 id 为 '{cid}' 的章节" in msg for cid in refused):
            continue
        elif msg.startswith("检查点文件没有被 course.toml 里的任何一章使用") and re.search(r"checkpoint\s*=\s*[\"']" + re.escape(Path(p.file).name) + r"[\"']", text):
            continue
        elif "没有出现在任何代码块的期望输出里" in msg:
            continue
        out.append(p)
    return out


def minute_warnings(course: Course) -> list[str]:
    """Written chapters whose computed minutes fall outside ±20 % of ``target_minutes`` (the
    band the course brief allows). A warning, not a problem: the depth decides, never padding."""
    out = []
    for c in course.chapters:
        if not c.available or not c.target_minutes:
            continue
        low, high = round(c.target_minutes * 0.8), round(c.target_minutes * 1.2)
        if not low <= c.minutes <= high:
            where = "长于" if c.minutes > high else "短于"
            out.append(f"{c.file}: ⚠️ {c.label}算出来读 {c.minutes} 分钟，{where}目标 {c.target_minutes} 分钟的 ±20%（{low}–{high}）")
    return out


def all_warnings(course: Course) -> list[str]:
    """Every ⚠️ line of ``torchcourse check`` (judgement calls: printed, never counted): reading
    times out of their band, author mistakes that may be intended, and choice questions whose keys
    length or wording gives away (quiz/tells.py)."""
    from torchcourse.quiz.tells import quiz_warnings

    return (minute_warnings(course) + author_warnings(course) + checkpoint_warnings(course) + quiz_warnings(course)
            + preload_warnings(course) + route_warnings(course))


def shape(course: Course, problems: list[Problem]) -> dict:
    return {
        "id": course.id,
        "title": course.title,
        "chapters": [
            {
                "id": c.id,
                "title": c.title,
                "kind": c.kind,
                "minutes": chapter_minutes(c),
                "target_minutes": c.target_minutes,
                "snippets": len(c.snippets),
                "proofs": sum(1 for s in c.snippets if s.proof),  # folded under their claims (no reading time)
                "break_points": c.break_points,
                "available": c.available,
            }
            for c in course.chapters
        ],
        "routes": [{"id": r.id, "name": r.name, "chapters": r.chapters, "minutes": r.minutes} for r in course.routes],
        "problems": [str(p) for p in problems],
        "warnings": all_warnings(course),
    }


def alternative_problems(course: Course) -> list[Problem]:
    """An output alternative (```output {torch==2.15.0}) must name a module whose releases
    course.toml records, select at least one recorded release, and never the reference release
    (the reference output is the block above it)."""
    from torchcourse.course.releases import spec_matches

    out = []
    for ch in course.chapters:
        if not ch.available:
            continue
        for snip in ch.snippets:
            for alt in snip.alternatives:
                releases = course.recorded.get(alt.module)
                if not releases:
                    declared = ", ".join(f"{m} {list(r)}" for m, r in course.recorded.items()) or "无"
                    out.append(Problem(ch.file, alt.line, f"#{snip.id} 的输出替代块 {{{alt.label}}}：course.toml 没有记录 {alt.module!r} 的任何版本（[recorded] 里声明的：{declared}）；只有在记录过的版本下运行 verify --accept 才会写出替代输出"))
                    continue
                chosen = [r for r in releases if spec_matches(alt.spec, r)]
                if not chosen:
                    out.append(Problem(ch.file, alt.line, f"#{snip.id} 的输出替代块 {{{alt.label}}} 没有选中任何一个记录过的 {alt.module} 版本 {list(releases)}（course.toml [recorded]）"))
                elif releases[0] in chosen:
                    out.append(Problem(ch.file, alt.line, f"#{snip.id} 的输出替代块 {{{alt.label}}} 选中了参考版本 {alt.module} {releases[0]}，而参考版本的输出就是它上面那个块"))
    return out


# -- the appendix's excerpts are real runs' ------------------------------------------------

def snippet_outputs(course: Course) -> list[tuple[str, str]]:
    """(snippet key, expected output as the runner compares it, whitespace flattened) for every
    snippet with an expected output, in course order."""
    out = []
    for ch in course.chapters:
        if not ch.available:
            continue
        for snip in ch.snippets:
            if snip.expected:
                out.append((snip.key, flat(normalize(snip.expected, side="expected"))))
    return out


def excerpt_sources(course: Course, excerpt: str, outputs: list[tuple[str, str]] | None = None) -> list[str]:
    """Keys of the snippets whose expected output holds ``excerpt`` (normalized like them)."""
    outputs = snippet_outputs(course) if outputs is None else outputs
    needle = flat(normalize(excerpt, side="expected"))
    if not needle:
        return []
    return [key for key, text in outputs if needle in text]


def excerpt_problems(course: Course) -> list[Problem]:
    """Appendix rows whose 报错原文 occurs in no snippet's expected output (after the runner's
    normalization, whitespace flattened): every excerpt must be a real run's."""
    problems = []
    outputs = None
    for ch in appendices(course):
        for row in appendix_rows(ch):
            if len(row.cells) != row.columns:
                continue  # appendix_problems reports the row
            excerpt = strip_code(row.cells[0])
            if not excerpt:
                continue
            if outputs is None:
                outputs = snippet_outputs(course)
            if not excerpt_sources(course, excerpt, outputs):
                short = excerpt if len(excerpt) <= 80 else excerpt[:77] + "..."
                problems.append(Problem(
                    ch.file, row.line,
                    f"报错原文 {short!r} 没有出现在任何代码块的期望输出里：从 verify --accept 写出的输出块里复制它"
                    "（只有空白可以不同，其余都要一样）",
                ))
    return problems


# -- author mode: what a new author gets wrong (issue 34) ----------------------------------

def _without_repeats(problems: list[Problem]) -> list[Problem]:
    """One message per broken link: an appendix row's 讲解 link is checked as a link and as a row;
    the row's "link to unknown …" goes when the link check already reported that line."""
    links = {(p.file, p.line) for p in problems if p.message.startswith("链接 (")}
    seen: set[tuple] = set()
    out = []
    for p in problems:
        if p.message.startswith("链接指向未知") and (p.file, p.line) in links:
            continue
        if tuple(p) in seen:
            continue
        seen.add(tuple(p))
        out.append(p)
    return out


_UNKNOWN_SNIPPET_RE = None


def _with_suggestions(course: Course, problems: list[Problem]) -> list[Problem]:
    """A "did you mean" for a quiz's unknown snippet id or key (L8), as links already have."""
    import difflib
    import re

    global _UNKNOWN_SNIPPET_RE
    if _UNKNOWN_SNIPPET_RE is None:
        _UNKNOWN_SNIPPET_RE = (re.compile(r"snippet '([^']*)' 不是第 (\S+) 章"),
                               re.compile(r"未知的键 '([^']*)'（已知的：([^）]*)）"))
    snippet_re, key_re = _UNKNOWN_SNIPPET_RE
    out = []
    for p in problems:
        guess = None
        m = snippet_re.search(p.message)
        if m is not None and course.chapter(m.group(2)) is not None:
            ids = [s.id for s in course.chapter(m.group(2)).snippets]
            guess = difflib.get_close_matches(m.group(1), ids, n=1, cutoff=0.6)
        else:
            m = key_re.search(p.message)
            if m is not None:
                guess = difflib.get_close_matches(m.group(1), [k.strip() for k in m.group(2).split(",")], n=1, cutoff=0.6)
        if guess and "是不是想写" not in p.message:
            p = Problem(p.file, p.line, f"{p.message}；是不是想写 {guess[0]!r}？")
        elif m is not None and snippet_re.search(p.message):
            sid = m.group(1).split(":", 1)[-1]
            home = next((c for c in course.chapters if c.available and c.id != m.group(2) and c.snippet(sid) is not None), None)
            if home is not None:
                p = Problem(p.file, p.line, f"{p.message}；{sid!r} 是第 {home.id} 章的代码块：predict 题只问本章的代码块")
        out.append(p)
    return out


def author_problems(course: Course) -> list[Problem]:
    """Mistakes that would pass silently otherwise: a chapter nobody can complete, and the
    appendix tables the lookup would silently misread."""
    return completion_problems(course) + appendix_table_problems(course)


def completion_problems(course: Course) -> list[Problem]:
    """A written chapter a learner could never complete. Completion is recorded when the last
    break point is reached (and the quiz, if any, passed): an appendix without a break point is
    never marked done, and every route through it stays unfinished."""
    out = []
    for ch in course.chapters:
        if not ch.available:
            continue
        if ch.break_points == 0 and ch.kind != "chapter":  # a chapter's own rule already says it
            out.append(Problem(ch.file, max(1, len(ch.source.splitlines())), f"{ch.label}没有断点，读者永远读不完它（读到最后一个断点才记为完成），经过它的每条路线也都一直读不完：在末尾写 <!-- break -->"))
    return out


def checkpoint_warnings(course: Course) -> list[str]:
    """A chapter without a quiz completes at its last break point; its ``## ✅`` heading (the
    anatomy wants one) then points the learner at a quiz that does not exist: a ⚠️."""
    out = []
    for ch in course.chapters:
        if not ch.available or ch.checkpoint is not None:
            continue
        heading = next((s for s in ch.sections if s.level == 2 and "✅" in s.title), None)
        if heading is not None:
            out.append(f"{ch.file}:{heading.line}: ⚠️ 「## {heading.title}」指向检查点测验，但 course.toml 没给第 {ch.id} 章 checkpoint（写 checkpoint = \"{ch.id}.toml\" 和这个文件；没有测验时，这一章读到最后一个断点就算完成）")
    return out


def appendix_table_problems(course: Course) -> list[Problem]:
    """The appendix's tables as an author meant them: a header that is almost the lookup table's
    (the whole table would be ignored), an excerpt without backticks, the same excerpt twice."""
    import difflib

    from torchcourse.course.appendix import APPENDIX_HEADER, APPENDIX_HEADER_CHECK, split_row

    known = [" | ".join(h) for h in (APPENDIX_HEADER, APPENDIX_HEADER_CHECK)]
    out = []
    first: dict[str, tuple] = {}  # excerpt -> (file, line), across every appendix: the lookup reads them all
    for ch in appendices(course):
        lines = ch.source.splitlines()
        in_fence = False
        for i, ln in enumerate(lines):
            if ln.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            if in_fence or not ln.strip().startswith("|") or i + 1 >= len(lines):
                continue
            if i > 0 and lines[i - 1].strip().startswith("|"):
                continue  # not a header: a table's header is its first row
            rule = split_row(lines[i + 1])
            if not rule or not all(c and set(c) <= set(":-") for c in rule):
                continue
            cells = split_row(ln)
            if tuple(cells) in (APPENDIX_HEADER, APPENDIX_HEADER_CHECK):
                continue
            close = difflib.get_close_matches(" | ".join(cells), known, n=1, cutoff=0.6)
            if close or (cells and ("报错" in cells[0] or "原文" in cells[0])):
                want = "| " + (close[0] if close else known[1]) + " |"
                out.append(Problem(ch.file, i + 1, f"表头 {ln.strip()!r} 不是报错反查的表头，反查会忽略这整张表；照原样写成 {want}"))
        for row in appendix_rows(ch):
            if len(row.cells) != row.columns:
                continue
            cell = row.cells[0].strip()
            if cell and not cell.startswith("`"):
                out.append(Problem(ch.file, row.line, f"报错原文 {cell[:60]!r} 没有放在反引号里：写成 `…`（内容里有反引号时用双反引号），Markdown 才会按打印的原样显示"))
            key = flat(strip_code(cell))
            if key and key in first:
                where = f"第 {first[key][1]} 行" if first[key][0] == ch.file else f"{first[key][0].name}:{first[key][1]}"
                out.append(Problem(ch.file, row.line, f"报错原文 {key[:60]!r} 已经是 {where} 那一行的了：一个报错只写一行（把这两行合并）"))
            elif key:
                first[key] = (ch.file, row.line)
    return out


_ABS_PATH_RE = None


def _nfc(text: str) -> str:
    import unicodedata

    return unicodedata.normalize("NFC", text)
_CLOCK_RE = re.compile(r"""\b(?:date\.today|datetime\.(?:now|today|utcnow)|time\.(?:time|localtime|ctime|time_ns|perf_counter|perf_counter_ns|monotonic|monotonic_ns|process_time|process_time_ns|thread_time))\s*\(|\btime\.strftime\s*\(\s*(?:"[^"]*"|'[^']*')\s*\)""")
_TIME_FROM_RE = re.compile(r"^\s*from\s+time\s+import\s+.*\b(?:perf_counter|monotonic|process_time|time)\b", re.M)
_LISTING_RE = re.compile(r"(?P<call>\b(?:os\.listdir|os\.scandir|os\.walk|glob\.i?glob|listdir)\s*\(|\.(?:iterdir|r?glob)\s*\()")
_VERSION_RE = re.compile(r"\b__version__\b|\bsys\.version\b|\bplatform\.(?:platform|python_version|version|release|machine|node)\s*\(|\bmetadata\.version\s*\(")


# calls whose result does not depend on the order of what they are given
_ORDER_FREE = {"sorted", "set", "frozenset", "len", "any", "all", "sum", "max", "min", "Counter"}
_LISTING_METHODS = {"listdir", "scandir", "walk", "glob", "iglob", "iterdir", "rglob"}  # os.walk, p.glob…
_LISTING_NAMES = {"listdir", "scandir", "glob", "iglob"}  # from os import listdir; from glob import glob


def _unsorted_listing(code: str) -> bool:
    """A directory listing whose order is the file system's (ext4 and tmpfs differ): one whose
    result reaches no order-free call (``sorted(``, ``set(``, ``len(``…) in the same expression:
    ``sorted(os.listdir("."))`` and ``sorted(p.name for p in d.glob("*.py"))`` are fine."""
    if not _LISTING_RE.search(code):
        return False
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:  # (check reports the syntax error itself) the text alone decides
        for m in _LISTING_RE.finditer(code):
            if re.search(r"sorted\s*\(\s*[\w.\[\]\"'()]*$", code[: m.start()].rstrip()) is None:
                return True
        return False

    def name_of(func) -> str:
        return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""

    def lists(func) -> bool:
        return (func.attr in _LISTING_METHODS if isinstance(func, ast.Attribute)
                else isinstance(func, ast.Name) and func.id in _LISTING_NAMES)

    def walk(node, ordered_away: bool) -> bool:
        if isinstance(node, ast.stmt):
            ordered_away = False  # a new statement: the enclosing call is gone
        if isinstance(node, ast.Call):
            if lists(node.func) and not ordered_away:
                return True
            if name_of(node.func) in _ORDER_FREE:
                ordered_away = True
        return any(walk(child, ordered_away) for child in ast.iter_child_nodes(node))

    return walk(tree, False)


_INDENTED_RE = re.compile(r"^(?:\t| {4})\S", re.M)


def _indented_prose(ch) -> list[str]:
    """A paragraph indented by a tab or four spaces (the habit of 首行缩进) outside a list is an
    indented code block in Markdown: the reader would show it as code, backticks and all."""
    if not _INDENTED_RE.search(ch.source):
        return []
    from torchcourse.course.chapter import markdown_parser

    out = []
    for tok in markdown_parser().parse(ch.source):
        if tok.type == "code_block" and tok.map and tok.level == 0:
            out.append(f"{ch.file}:{tok.map[0] + 1}: ⚠️ 这一段以 Tab 或 4 个空格缩进开头，Markdown 会把它显示成代码块（连反引号都原样显示）：中文段落不要首行缩进；真要显示代码，用 ```text 围起来")
    return out


def machine_dependence(code: str) -> list[str]:
    """Why a snippet's printed output may differ on a learner's machine although verify --accept's
    two runs agree here (both run on the same machine, the same second): the clock, a directory
    listing in the file system's order, a library's version. Each reason is a sentence for a ⚠️."""
    reasons = []
    if _CLOCK_RE.search(code) or _TIME_FROM_RE.search(code):
        reasons.append("读了日期或时钟（日期、time.time()、time.perf_counter() 量的耗时）：verify --accept 的两次运行在同一天、同一台机器上，看不出输出会随日期和机器快慢变；别打印它，或在期望输出里用 <<...>> 通配")
    if _unsorted_listing(code):
        reasons.append("列了目录（os.listdir、glob、iterdir…）却没有排序：顺序由文件系统决定（ext4 和 tmpfs 不同），读者机器上会不一致；写成 sorted(os.listdir(...))")
    if _VERSION_RE.search(code):
        reasons.append("打印了版本号（__version__、sys.version、platform…）：读者装的版本不同，输出就不一致；别打印它，或在期望输出里用 <<...>> 通配")
    return reasons


def author_warnings(course: Course) -> list[str]:
    """⚠️ lines, judgement calls: a snippet that names an absolute path (it runs in a new empty
    directory; a file another snippet left at an absolute path exists on the author's machine,
    not the learner's), one whose output may depend on today's date or clock, and a chapter whose
    ``# 标题`` differs from its course.toml title."""
    import io
    import re
    import tokenize

    global _ABS_PATH_RE
    if _ABS_PATH_RE is None:
        _ABS_PATH_RE = re.compile(r"^(?:/(?:[^/\s]+/?)+|~/\S*|[A-Za-z]:[\\/]\S*)$")
    out = []
    for ch in course.chapters:
        if not ch.available:
            continue
        heading = next((ln[2:].strip() for ln in ch.source.splitlines() if ln.startswith("# ")), None)
        if heading is not None and ch.kind == "chapter" and _nfc(ch.title).replace(" ", "") not in _nfc(heading).replace(" ", ""):
            out.append(f"{ch.file}:1: ⚠️ 标题「{heading}」和 course.toml 里的 title「{ch.title}」不一样（首页和目录显示后者）")
        elif heading is not None and ch.kind == "chapter" and ch.title.replace(" ", "") not in heading.replace(" ", ""):
            out.append(f"{ch.file}:1: ⚠️ 标题和 course.toml 里的 title 看起来一样，字节却不同（一个是 NFC、一个是 NFD 的组合字符，如 é 写成 e + ´）：把两处都用同一种写法保存")
        if ch.kind == "chapter" and not any(sec.level == 2 and "🔗" in sec.title for sec in ch.sections):
            checkpoint = next((sec.line for sec in ch.sections if sec.level == 2 and "✅" in sec.title), 1)
            out.append(f"{ch.file}:{checkpoint}: ⚠️ 没有「## 🔗 …」一节（这一章和前后章节的关系，放在 ✅ 检查点之前）")
        out.extend(_indented_prose(ch))
        from torchcourse.course.chapter import slugify

        lines = ch.source.splitlines()
        for sec in ch.sections:
            explicit = sec.line - 1 < len(lines) and "{#" in lines[sec.line - 1]
            if sec.level >= 2 and not explicit and slugify(sec.title) == "section" and not re.search(r"\w", sec.title):
                out.append(f"{ch.file}:{sec.line}: ⚠️ 标题「{sec.title}」里没有文字，得不到锚点：链接、测验和报错反查都指不到它；写成 ## {sec.title} {{#some-name}}")
        for snip in ch.snippets:
            if snip.norun:
                continue
            try:
                tokens = list(tokenize.generate_tokens(io.StringIO(snip.code).readline))
            except (tokenize.TokenError, SyntaxError, IndentationError):
                tokens = []
            for tok in tokens:
                if tok.type != tokenize.STRING:
                    continue
                body = re.sub(r"^[rRbBuUfF]*", "", tok.string).strip("'\"")
                if _ABS_PATH_RE.match(body) and not body.startswith(("/dev/null", "/proc/self")):
                    out.append(f"{ch.file}:{snip.line + tok.start[0]}: ⚠️ 代码块 #{snip.id} 用了绝对路径 {body!r}：每段代码在一个新建的空目录里运行，别的代码块留在绝对路径上的文件只在作者机器上有，读者那里没有；用相对路径，在同一段代码里先写出要读的文件")
                    break
            if snip.expected and "<<...>>" not in snip.expected:
                for reason in machine_dependence(snip.code):
                    out.append(f"{ch.file}:{snip.line}: ⚠️ 代码块 #{snip.id} {reason}")
    return out
# -- every error a snippet ends in has a row ------------------------------------------------

_TB_HEAD = "Traceback (most recent call last):"
_CHAIN_RE = re.compile(r"^(?:The above exception was the direct cause|During handling of the above exception)", re.M)


def snippet_errors(expected: str) -> list[str]:
    """The exceptions a snippet's output shows, as normalized tracebacks: for each
    ``Traceback (most recent call last):`` block, its message from the first unindented line to the
    end of the block (the next traceback, a chain line, or the end of the output)."""
    text = normalize(expected, side="expected")
    out = []
    for block in text.split(_TB_HEAD)[1:]:
        block = _CHAIN_RE.split(block)[0]
        lines = block.split("\n")
        start = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith((" ", "\t"))), None)
        if start is None:
            continue
        message = flat("\n".join(lines[start:]))
        if message:
            out.append(message)
    return out


def uncovered_error_problems(course: Course) -> list[Problem]:
    """Snippets whose output ends in an exception that no row of the appendix quotes: the error
    lookup could not answer a learner who pastes it (only checked when the course has an appendix)."""
    apps = appendices(course)
    if not apps:
        return []
    excerpts = [flat(normalize(strip_code(r.cells[0]), side="expected")) for ch in apps for r in appendix_rows(ch)
                if len(r.cells) == r.columns and strip_code(r.cells[0])]
    excerpts = [x for x in excerpts if x]
    problems = []
    for ch in course.chapters:
        if not ch.available:
            continue
        for snip in ch.snippets:
            if not snip.expected or _TB_HEAD not in snip.expected:
                continue
            for message in snippet_errors(snip.expected):
                if not any(x in message for x in excerpts):
                    short = message if len(message) <= 90 else message[:87] + "..."
                    problems.append(Problem(
                        ch.file, snip.line,
                        f"代码块 {snip.key} 以一个报错结束，{apps[0].file.name} 里却没有哪一行引用它：{short!r}"
                        "（加一行，报错原文 写这个报错里稳定不变的一部分）",
                    ))
    return problems


# -- the matching-only wordings beside the appendix -----------------------------------------

_VARIANT_SOURCE_RE = re.compile(r"^(?:torch/[\w./-]+|https://\S+)$")


def variant_problems(course: Course) -> list[Problem]:
    """The variants file (``A-variants.toml`` beside the appendix): each ``[[variant]]`` names an
    existing row by its exact 报错原文, holds a wording that is not already the row's, and says where
    it comes from (``torch/…`` — a template in the installed torch — or a report's ``https://`` link)."""
    apps = appendices(course)
    if not apps:
        return []
    from pathlib import Path

    import tomllib

    path = Path(course.root) / "A-variants.toml"
    if not path.is_file():
        return []
    raw = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        return [Problem(path, int(m.group(1)) if m else 1, f"不是合法的 TOML：{exc}")]
    rows = {strip_code(r.cells[0]) for ch in apps for r in appendix_rows(ch) if len(r.cells) == r.columns}
    starts = [i for i, ln in enumerate(raw.splitlines(), start=1) if ln.strip() == "[[variant]]"]
    items = data.get("variant", [])
    extra = sorted(set(data) - {"variant"})
    problems = [Problem(path, 1, f"未知的顶层键：{', '.join(extra)}（只能有 [[variant]] 表）")] if extra else []
    if not isinstance(items, list):
        return problems + [Problem(path, 1, "这里应该是 [[variant]] 表")]
    for k, item in enumerate(items):
        line = starts[k] if k < len(starts) else 1
        if not isinstance(item, dict):
            problems.append(Problem(path, line, "[[variant]] 必须是一个表"))
            continue
        missing = [f for f in ("row", "text", "source") if not isinstance(item.get(f), str) or not item[f].strip()]
        if missing:
            problems.append(Problem(path, line, f"[[variant]] 需要 {', '.join(missing)}（非空字符串）"))
            continue
        unknown = sorted(set(item) - {"row", "text", "source"})
        if unknown:
            problems.append(Problem(path, line, f"[[variant]] 有未知的键：{', '.join(unknown)}"))
        if item["row"].strip() not in rows:
            problems.append(Problem(path, line, f"row {item['row'][:60]!r} 不是 {apps[0].file.name} 里任何一行的 报错原文（照原样复制）"))
        if not _VARIANT_SOURCE_RE.match(item["source"].strip()):
            problems.append(Problem(path, line, f"source {item['source']!r} 必须是 torch/<path>（已安装的 torch 里的一个模板），或引用这段报错的报告的 https:// 链接"))
        if " ".join(item["text"].split()) in " ".join(item["row"].split()):
            problems.append(Problem(path, line, "text 已经是这一行自己的 报错原文 的一部分：不需要 variant"))
    return problems


# -- preload: the modules the warm runner imports first ---------------------------------------

def _toml_text(course: Course) -> str:
    from pathlib import Path

    try:
        return (Path(course.root) / "course.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _preload_line(text: str) -> int:
    m = re.search(r"^\s*preload\s*=", text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else 1


def preload_problems(course: Course) -> list[Problem]:
    """Every ``preload`` name must be importable here (found without importing it): a typo would
    otherwise send every learner to install a misspelt package."""
    import difflib
    import importlib.util
    import pkgutil
    from pathlib import Path

    text = _toml_text(course)
    if not re.search(r"^\s*preload\s*=", text, re.M):
        return []
    out = []
    for name in course.preload:
        top = name.split(".")[0]
        try:
            found = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            continue
        import sys

        known = sorted({m.name for m in pkgutil.iter_modules()})
        # the closest name wins; on a tie an installed library beats the standard library (a course
        # preloads the library it is about), so 'jsonn' is 'json' even where 'json5' is installed
        scored = []
        for k in known:
            if k.startswith("_"):
                continue
            r = difflib.SequenceMatcher(None, top, k).ratio()
            if r >= 0.7:
                scored.append((r, k not in sys.stdlib_module_names, k))
        guess = [max(scored)[2]] if scored else []
        hint = f"（是不是想写 {guess[0]!r}？）" if guess else ""
        out.append(Problem(Path(course.root) / "course.toml", _preload_line(text),
                           f"preload 模块 {name!r} 在这里导入不了{hint}：改正 preload = [...] 里的名字，"
                           "或把课程讲的库装进这个环境"))
    return out


_IMPORTS_TORCH_RE = re.compile(r"^\s*(?:import\s+torch\b|from\s+torch\b)", re.M)


def preload_warnings(course: Course) -> list[str]:
    """A course without a ``preload`` line preloads torch; one whose snippets never import torch pays
    for it at every start of the warm runner (about 1.5 s) for nothing."""
    text = _toml_text(course)
    if not text or re.search(r"^\s*preload\s*=", text, re.M) or course.preload != ("torch",):
        return []
    snippets = [s for ch in course.chapters if ch.available for s in ch.snippets]
    if not snippets or any(_IMPORTS_TORCH_RE.search(s.code) for s in snippets):
        return []
    from pathlib import Path

    return [f"{Path(course.root) / 'course.toml'}:1: ⚠️ 没有写 preload，预热运行器就先 import torch（约 1.5 秒），可是没有一个代码块导入 torch："
            "写 preload = [\"你的库\"]（例如 [\"numpy\"]），或 preload = [] 什么都不预先导入"]


# -- routes ------------------------------------------------------------------------------------

def route_warnings(course: Course) -> list[str]:
    """A route that reads only the appendix, and a written chapter on no route (a learner who
    follows the routes never meets it): ⚠️, since an author may mean either."""
    from pathlib import Path

    if not course.routes:
        return []
    text = _toml_text(course)
    toml = Path(course.root) / "course.toml"

    def entry_line(table: str, eid: str) -> int:
        m = re.search(r"^\[\[" + table + r"\]\]\s*\n(?:(?!\[).*\n)*?\s*id\s*=\s*[\"']" + re.escape(eid) + r"[\"']", text, re.M)
        return text.count("\n", 0, m.start()) + 1 if m else 1

    out = []
    kinds = {c.id: c.kind for c in course.chapters}
    for r in course.routes:
        if r.chapters and all(kinds.get(cid) == "appendix" for cid in r.chapters):
            out.append(f"{toml}:{entry_line('routes', r.id)}: ⚠️ 路线 {r.id} 只有附录（{', '.join(r.chapters)}）：选它的读者没有一章正文可读")
    on_routes = {cid for r in course.routes for cid in r.chapters}
    for c in course.chapters:
        if c.available and c.kind == "chapter" and c.id not in on_routes:
            out.append(f"{toml}:{entry_line('chapters', c.id)}: ⚠️ 第 {c.id} 章已经写好，却不在任何一条路线上：按路线读的读者永远遇不到它（把它加进某条路线的 chapters）")
    return out
