"""``torchcourse why TEXT``: the error lookup on the command line."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from torchcourse.commandline import course_or_exit
from torchcourse.lookup.errors import error_index, lookup_error, where_label

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


EMPTY_INPUT = "输入是空的：把报错原文（最后一行或整段 traceback）作为参数传进来，或者 torchcourse why - < 报错.txt"


def cmd_why(args) -> int:
    text = " ".join(args.text)
    if text.strip() == "-":
        text = sys.stdin.read()
    if not text.strip():
        if getattr(args, "json", False):
            print("[]")
        print(EMPTY_INPUT, file=sys.stderr)
        return 1
    course = course_or_exit(args)
    index = error_index(course)
    hits = lookup_error(course, text, entries=index)
    if getattr(args, "json", False):
        print(json.dumps([{**asdict(h.entry), "link": h.entry.link, "score": h.score} for h in hits], ensure_ascii=False, indent=2))
        return 0 if hits else 1
    if not hits:
        if not index.entries:
            print("课程里还没有可查的报错条目（附录 A 还没写，写好的章节里也还没有报错示例）。", file=sys.stderr)
        else:
            print(not_covered(course), file=sys.stderr)
        return 1
    for n, h in enumerate(hits[:5], start=1):
        excerpt = h.entry.text if len(h.entry.text) <= 160 else h.entry.text[:157] + "..."
        print(f"{n}. {excerpt}")
        if h.entry.cause and h.entry.cause != h.entry.section_title:
            print(f"   原因：{h.entry.cause}")
        if h.entry.check:
            print(f"   先查：{h.entry.check}")
        print(f"   {where_label(course, h.entry)}")
    return 0
