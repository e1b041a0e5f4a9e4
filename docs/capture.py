"""Capture the home screen of the shipped course as text and keep README.md's picture current.

    python docs/capture.py           # rewrite the block between <!-- screen:home --> markers
    python docs/capture.py --print   # just print the capture

The capture uses a fresh, empty progress store and a fixed date, so it only changes when the
app's look or the course's shape (chapters, routes, minutes) changes. tests/test_readme.py fails
when README.md is stale.
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SIZE = (100, 30)
TODAY = date(2026, 11, 29)
BLOCK_RE = re.compile(r"(<!-- screen:home -->\n)(.*?)(<!-- /screen:home -->)", re.S)


def capture_home() -> str:
    sys.path.insert(0, str(REPO))
    from torchcourse import paths
    from torchcourse.course import load_course
    from torchcourse.progress import open_store
    from torchcourse.tui.app import make_app

    async def run() -> str:
        with tempfile.TemporaryDirectory() as tmp:
            store, _ = open_store(Path(tmp) / "progress.sqlite3")
            try:
                app = make_app(load_course(paths.shipped_content_dir()), store, today=TODAY)
                async with app.run_test(size=SIZE) as pilot:
                    await pilot.pause()
                    update = app.screen._compositor.render_update(full=True)
                    lines = ["".join(seg.text for seg in strip).rstrip() for strip in update.strips]
            finally:
                store.close()
        return "\n".join(lines).rstrip("\n")

    return asyncio.run(run())


def readme_block(text: str) -> str | None:
    m = BLOCK_RE.search(text)
    if not m:
        return None
    body = m.group(2).strip("\n")
    return body.removeprefix("```text\n").removesuffix("\n```")


def main() -> int:
    screen = capture_home()
    if "--print" in sys.argv:
        print(screen)
        return 0
    text = README.read_text(encoding="utf-8")
    if not BLOCK_RE.search(text):
        print(f"{README}: no <!-- screen:home --> block", file=sys.stderr)
        return 1
    README.write_text(BLOCK_RE.sub(lambda m: f"{m.group(1)}```text\n{screen}\n```\n{m.group(3)}", text), encoding="utf-8")
    print(f"updated {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
