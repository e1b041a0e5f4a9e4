"""Chapter 00's minutes are the home screen's: rewrite its map and route tables from the course.

The home screen shows each chapter's computed minutes (``course.chapter_minutes``) and each
route's total without the appendix (``Route.minutes``); chapter 00 states the same numbers
(walk L14). Chapter 00's own minutes depend on its text, so the rewrite repeats until the
numbers stop changing.

    .venv/bin/python tools/chapter00_minutes.py          # exit 1 and name the numbers that differ
    .venv/bin/python tools/chapter00_minutes.py --write  # rewrite content/00-how-to-use.md

``tests/test_app_help_and_guide.py`` fails while they differ. Run ``torchcourse verify 00``
afterwards (the chapter's snippets do not change).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MAP_ROW = re.compile(r"^\| (\w+) \| ([^|]+) \| (\d+) \| ([^|]+) \|$", re.M)
TOTAL = re.compile(r"00–10 合计约 \d+ 分钟，约 \d+ 小时")
ROUTE_ROW = re.compile(r"^(\| (\w) \| [^|]+ \| [^|]*→[^|]* \| )([^|]+)( \|)$", re.M)  # its order: 05 → 06


def expected(text: str, course) -> str:
    """``text`` (chapter 00) with its tables' minutes taken from ``course``."""
    from torchcourse.course import chapter_minutes

    minutes = {ch.id: chapter_minutes(ch) for ch in course.chapters}

    def map_row(m: re.Match) -> str:
        cid = m.group(1)
        if cid not in minutes:
            return m.group(0)
        return f"| {cid} | {m.group(2)} | {minutes[cid]} | {m.group(4)} |"

    text = MAP_ROW.sub(map_row, text)
    book = sum(minutes[ch.id] for ch in course.chapters if ch.kind != "appendix")
    text = TOTAL.sub(f"00–10 合计约 {book} 分钟，约 {round(book / 60)} 小时", text)
    routes = {r.id: r for r in course.routes}

    def route_row(m: re.Match) -> str:
        r = routes.get(m.group(2))
        if r is None:
            return m.group(0)
        appendix = any(course.chapter(c) is not None and course.chapter(c).kind == "appendix" for c in r.chapters)
        words = f"{r.minutes} 分钟，附录另查" if appendix else f"{r.minutes} 分钟"
        return f"{m.group(1)}{words}{m.group(4)}"

    return ROUTE_ROW.sub(route_row, text)


def main(argv: list[str]) -> int:
    from torchcourse import paths
    from torchcourse.course import load_course

    root = paths.shipped_content_dir()
    course = load_course(root)
    path = Path(course.root) / course.chapter("00").file
    write = "--write" in argv
    for _ in range(5):  # 00's own minutes follow its text: repeat until nothing changes
        text = path.read_text(encoding="utf-8")
        new = expected(text, course)
        if new == text:
            print("第 00 章的分钟数和首页一致。")
            return 0
        if not write:
            print(f"第 00 章的分钟数和首页不一致：运行 {Path(__file__).name} --write 重写 {path}", file=sys.stderr)
            return 1
        path.write_text(new, encoding="utf-8")
        course = load_course(root)
    print("重写了 5 次仍不一致（00 章自己的分钟数随改动跳动）。", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
