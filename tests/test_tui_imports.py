"""Import boundaries, checked in fresh processes: the app never imports torch; the core never imports textual."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "tuicourse"

APP_SCRIPT = r"""
import asyncio, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, str(Path.cwd() / "tests"))
from waiting import wait_for_app  # a deadline on every wait (it imports no torch, no textual)
from torchcourse import paths
from torchcourse.course import load_course
from torchcourse.progress import open_store
from torchcourse.tui.app import make_app
from torchcourse.tui.widgets.snippet import SnippetView

async def main():
    seen = {}
    tmp = Path(tempfile.mkdtemp())
    for root in (paths.shipped_content_dir(), Path(sys.argv[1])):
        course = load_course(root)
        store, _ = open_store(tmp / (root.name + ".sqlite3"))
        app = make_app(course, store)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            for ch in course.chapters:
                if not ch.available:
                    continue
                app.open_chapter(ch.id)
                await wait_for_app(pilot, lambda: getattr(app.screen, "loaded", False), "the chapter loaded")
            if root.name == "tuicourse":
                # run a snippet for real through the (lazily started, warm) runner
                app.open_chapter("01")
                await wait_for_app(pilot, lambda: getattr(app.screen, "loaded", False), "the chapter loaded")
                view = next(v for v in app.screen.query(SnippetView) if v.snippet.id == "hello")
                view.focus()
                await pilot.press("x")
                await wait_for_app(pilot, lambda: view.state == "done", "the snippet's run ended")
                seen["verdict"] = view.result.status
        app.runner.close()
        store.close()
    seen["torch"] = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
    print(json.dumps(seen))

asyncio.run(main())
"""

CORE_SCRIPT = r"""
import json, sys
import torchcourse.cli, torchcourse.paths, torchcourse.course, torchcourse.progress, torchcourse.runner
import torchcourse.quiz, torchcourse.quiz.review, torchcourse.quiz.completion, torchcourse.quiz.session, torchcourse.lookup
import torchcourse.progress.cli, torchcourse.runner.cli, torchcourse.check, torchcourse.app_entry
torchcourse.cli.build_parser()
print(json.dumps(sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))))
"""


def _run(script: str, *args: str, home: Path | None = None) -> str:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    if home is not None:
        env["TORCHCOURSE_HOME"] = str(home)
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_the_app_process_never_imports_torch(tmp_path):
    seen = json.loads(_run(APP_SCRIPT, str(FIXTURE), home=tmp_path))
    assert seen["verdict"] == "match"  # a snippet really ran (in another process)
    assert seen["torch"] == []


def test_the_core_never_imports_textual():
    assert json.loads(_run(CORE_SCRIPT)) == []
