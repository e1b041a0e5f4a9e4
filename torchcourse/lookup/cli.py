"""``torchcourse why TEXT``: the error lookup on the command line."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from torchcourse.commandline import course_or_exit
from torchcourse.lookup.errors import error_index, lookup_error, mentions, where_label

GENERIC_NOT_COVERED = (
    "本课程没有讲到这条报错：附录里没有和它相近的条目，硬凑一条只会把你带偏。\n"
    "下一步可以这样查：读 traceback 的最后一行（异常类型和消息），再往上找第一行属于你自己代码的 File \"…\"；\n"
    "把最后一行里你自己的数字和变量名去掉，拿剩下的原文去搜。"
)


def not_covered(course) -> str:
    """What to say for an error the course does not cover: the course's own ``not_covered`` of
    course.toml (the shipped course names PyTorch's forums and its chapter 00), else a wording
    that names no library and no chapter."""
    return course.not_covered or GENERIC_NOT_COVERED


NEAR_HEADER = "相近，不确定：附录 A 里没有和它完全对得上的条目，下面几条只是像，别当成答案。"
MENTIONS_HEADER = "附录 A 里没有这条报错的条目；正文里有几处出现了同样的话（不确定讲的是同一个问题）："
EMPTY_INPUT = "输入是空的：把报错原文（最后一行或整段 traceback）作为参数传进来，或者 torchcourse why - < 报错.txt"


def cmd_why(args) -> int:
    text = " ".join(args.text)
    if text.strip() == "-":
        try:
            at_terminal = sys.stdin is not None and sys.stdin.isatty()
        except (ValueError, OSError):
            at_terminal = False
        if at_terminal:  # a learner at a terminal sees what to do, not a silent wait (walk L9)
            print("粘贴报错原文，然后另起一行按 Ctrl+D 结束（Windows 上是 Ctrl+Z 回车）：", file=sys.stderr)
        text = sys.stdin.read()
    if not text.strip():
        if getattr(args, "json", False):
            print("[]")
        print(EMPTY_INPUT, file=sys.stderr)
        return 1
    course = course_or_exit(args, cached=True)
    index = error_index(course)
    hits = lookup_error(course, text, entries=index)
    if getattr(args, "json", False):
        print(json.dumps([{**asdict(h.entry), "link": h.entry.link, "score": h.score, "sure": h.sure, "wording": h.wording}
                          for h in hits], ensure_ascii=False, indent=2))
        return 0 if hits else 1
    if not hits:
        if not index.entries:
            print("课程里还没有可查的报错条目（附录 A 还没写，写好的章节里也还没有报错示例）。", file=sys.stderr)
            return 1
        found = mentions(course, text)
        if found:
            print(MENTIONS_HEADER)
            for n, t in enumerate(found, start=1):
                where = f"{course.chapter_label(t.chapter_id)}" + (f" §{_title(course, t)}" if t.anchor else "")
                link = f"{t.chapter_id}#{t.anchor}" if t.anchor else t.chapter_id
                print(f"{n}. {t.excerpt}\n   → {where} ({link})")
            print("（下一步怎么查，见 torchcourse why 对没讲到的报错给的建议。）", file=sys.stderr)
            return 1
        print(not_covered(course), file=sys.stderr)
        return 1
    if not hits[0].sure:
        print(NEAR_HEADER)
    for n, h in enumerate(hits[:5], start=1):
        excerpt = h.entry.text if len(h.entry.text) <= 160 else h.entry.text[:157] + "..."
        print(f"{n}. {excerpt}" + ("" if h.sure else "（相近，不确定）"))
        if h.wording:
            shown = h.wording if len(h.wording) <= 100 else h.wording[:97] + "..."
            print(f"   按另一种写法认出：{shown}（GPU 上或别的版本的措辞；上面的原文是本机跑出来的）")
        if h.entry.cause and h.entry.cause != h.entry.section_title:
            print(f"   原因：{h.entry.cause}")
        if h.entry.check:
            print(f"   先查：{h.entry.check}")
        print(f"   {where_label(course, h.entry)}")
    return 0


def _title(course, hit) -> str:
    ch = course.chapter(hit.chapter_id)
    sec = ch.section(hit.anchor) if ch is not None and hit.anchor else None
    return sec.title if sec else hit.anchor
