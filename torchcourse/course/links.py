"""Links between chapters: ``[文字](02#anchor)``, ``[文字](#anchor)``, ``[文字](02)``.

``link_problems`` checks every course link of every written chapter: the chapter exists, and the
anchor is a section anchor or a snippet id of that chapter (a chapter not written yet can only be
linked as a whole). An unknown anchor is reported with the nearest existing ones.
"""

from __future__ import annotations

import difflib
import re

from torchcourse.course.model import Chapter, Course, Problem

COURSE_LINK_RE = re.compile(r"^(?P<chapter>[A-Za-z0-9]+)?(?:#(?P<anchor>[A-Za-z0-9_\-]+))?$")
_LINK_RE = re.compile(r"\]\((?P<href>[^()\s]*)\)")
_CODE_SPAN_RE = re.compile(r"(`+).*?\1")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
IMAGE_MARK = "!"  # _links marks an image's target with it
_REF_USE_RE = re.compile(r"(?<!\\)\[(?P<text>[^\[\]]+)\]\[(?P<label>[^\[\]]*)\]")  # [文字][label], [文字][]
_REF_DEF_RE = re.compile(r"^\s{0,3}\[(?P<label>[^\]]+)\]:\s*(?P<href>\S+)")  # [label]: target


def _image_start(line: str, close: int) -> bool:
    """The ``](`` at ``close`` ends an image ``![alt](…)``: its ``[`` follows a ``!``."""
    depth = 0
    for i in range(close - 1, -1, -1):
        if line[i] == "]":
            depth += 1
        elif line[i] == "[":
            if depth == 0:
                return i > 0 and line[i - 1] == "!"
            depth -= 1
    return False


def _links(chapter: Chapter):
    """(1-based line, href) of every link in the chapter's prose (not in code)."""
    in_fence = None
    for n, line in enumerate(chapter.source.splitlines(), 1):
        m = _FENCE_RE.match(line)
        if m:
            if in_fence is None:
                in_fence = m.group(1)
            elif m.group(1) == in_fence:
                in_fence = None
            continue
        if in_fence is not None:
            continue
        plain = _CODE_SPAN_RE.sub("", line)
        for lm in _LINK_RE.finditer(plain):
            image = lm.start() > 0 and _image_start(plain, lm.start())
            yield n, (IMAGE_MARK if image else "") + lm.group("href")
        for rm in _REF_USE_RE.finditer(plain):
            yield n, ("ref", rm.group("label") or rm.group("text"))
        dm = _REF_DEF_RE.match(plain)
        if dm:
            yield n, dm.group("href")


def anchors_of(chapter: Chapter) -> list[str]:
    """What ``#…`` may name in a chapter: its section anchors and its snippet ids."""
    return [s.anchor for s in chapter.sections] + [s.id for s in chapter.snippets]


def link_problems(course: Course) -> list[Problem]:
    problems: list[Problem] = []
    ids = [c.id for c in course.chapters]
    for chapter in course.chapters:
        if not chapter.available or not chapter.source:
            continue
        defs = {m.group("label").lower(): n for n, ln in enumerate(chapter.source.splitlines(), 1) if (m := _REF_DEF_RE.match(ln))}
        for line, href in _links(chapter):
            if isinstance(href, tuple):  # a reference-style link [文字][label]: its definition must exist
                if href[1].lower() not in defs:
                    problems.append(Problem(chapter.file, line, f"引用式链接 [{href[1]}] 没有定义（要单独一行写 [{href[1]}]: 02#anchor）；阅读器会把它原样显示成文字"))
                continue
            if "://" in href or href.startswith(("mailto:", IMAGE_MARK + "http")):
                if href.startswith(IMAGE_MARK):
                    problems.append(Problem(chapter.file, line, f"图片 ({href[len(IMAGE_MARK):]})：不支持图片（课程在终端里阅读）；用文字描述它，或在 ```text 块里用字符画出来"))
                continue
            m = COURSE_LINK_RE.match(href)
            if m is None and href.startswith(IMAGE_MARK):
                problems.append(Problem(chapter.file, line, f"图片 ({href[len(IMAGE_MARK):]})：不支持图片（课程在终端里阅读）；用文字描述它，或在 ```text 块里用字符画出来"))
                continue
            if m is None and "#" in href and COURSE_LINK_RE.match(href.split("#", 1)[0] or ""):
                target_id, anchor = href.split("#", 1)
                target = chapter if not target_id else course.chapter(target_id)
                section = next((s for s in target.sections if s.anchor == anchor), None) if target is not None and target.available else None
                fix = (f"给第 {section.line} 行的标题加一个显式锚点（## {section.title} {{#some-name}}），再链接到它"
                       if section is not None else "链接里的锚点只能用 ASCII 字母、数字、'-' 和 '_'")
                problems.append(Problem(chapter.file, line, f"链接 ({href})：链接的锚点必须是 ASCII（字母、数字、'-'、'_'）：{fix}"))
                continue
            if m is None or not href:
                problems.append(Problem(chapter.file, line, f"链接 ({href}) 既不是课程内链接（02、02#anchor、#anchor），也不是网址"))
                continue
            target_id, anchor = m.group("chapter"), m.group("anchor")
            target = chapter if target_id is None else course.chapter(target_id)
            if target is None:
                problems.append(Problem(chapter.file, line, f"链接 ({href})：没有 id 为 {target_id!r} 的章节（现有章节：{', '.join(ids)}）"))
                continue
            if anchor is None:
                continue
            if not target.available:
                problems.append(Problem(chapter.file, line, f"链接 ({href})：第 {target.id} 章还没写，无法检查它的锚点；只链接到这一章（{target.id}）"))
                continue
            known = anchors_of(target)
            if anchor not in known:
                near = difflib.get_close_matches(anchor, known, n=3, cutoff=0.6)  # 0.4 offered #slow-loop for #no-copy (34 L6)
                hint = f"；最接近的：{'、'.join('#' + a for a in near)}" if near else ""
                where = "本章" if target is chapter else f"第 {target.id} 章"
                problems.append(Problem(chapter.file, line, f"链接 ({href})：{where}没有小节或代码块 #{anchor}{hint}"))
    return problems
