"""改一改再跑: edit a snippet in the reader, run it against the book's output, keep it, restore it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from torchcourse.tui.reader import ReaderScreen
from torchcourse.tui.widgets.snippet import SnippetView

from test_tui_pty import open_first_chapter, term_factory  # noqa: F401  (fixture)
from tui_support import FIXTURE, build_app, screen_text, sync, wait_for, widget_text

REPO = Path(__file__).resolve().parents[1]
HELLO = 'box = [1, 2, 3]\nprint("盒子:", box)\n'


async def open_reader(pilot, chapter_id: str) -> ReaderScreen:
    app = pilot.app
    app.open_chapter(chapter_id)
    await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen) and app.screen.chapter.id == chapter_id, what=f"reader {chapter_id}")
    await wait_for(pilot, lambda: app.screen.loaded, what="all parts mounted")
    await pilot.pause()
    return app.screen


def view_of(screen: ReaderScreen, snippet_id: str) -> SnippetView:
    return next(v for v in screen.query(SnippetView) if v.snippet.id == snippet_id)


def editor_of(view: SnippetView):
    from torchcourse.tui.widgets.editor import SnippetEditor

    found = view.query(SnippetEditor)
    return found.first() if found else None


async def open_editor_on(pilot, screen: ReaderScreen, snippet_id: str):
    view = view_of(screen, snippet_id)
    view.focus()
    await wait_for(pilot, lambda: screen.focused is view, what=f"#{snippet_id} focused")
    await pilot.press("e")
    await wait_for(pilot, lambda: editor_of(view) is not None and screen.focused is editor_of(view).area, what="the editor focused")
    return view, editor_of(view)


@sync
async def test_edit_run_compare_keep_across_restart_and_restore(tmp_path):
    db = tmp_path / "p.sqlite3"
    app, store = build_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_reader(pilot, "01")
        view, editor = await open_editor_on(pilot, screen, "hello")
        area = editor.area
        assert area.text == HELLO and area.language == "python" and area.show_line_numbers
        assert "Ctrl+R 运行" in screen_text(app) and "Esc 保存并退出" in screen_text(app)  # fits at 80×24
        # type a change: a new line after the first
        await pilot.press("end", "enter", *"box.append(4)")
        assert area.text == 'box = [1, 2, 3]\nbox.append(4)\nprint("盒子:", box)\n'
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: view.state == "done", what="the edited run")
        assert view.result.status == "mismatch" and view.result.edited
        verdict = widget_text(view.query_one(".verdict"))
        assert "代码已改动" in verdict and "不是书的错误" in verdict
        expected = widget_text(view.query_one(".outputs .expected"))
        actual = widget_text(view.query_one(".outputs .actual"))
        assert "- 盒子: [1, 2, 3]" in expected and "+ 盒子: [1, 2, 3, 4]" in actual
        assert store.edit("01", "hello") == area.text  # kept as soon as it runs
        assert "✏️ 已改动" in widget_text(view.query_one(".snip-head"))
        assert screen.focused is area  # still editing after the run
        # Esc leaves the editor, keeps the edit, and the reader shows the edited code, marked
        await pilot.press("escape")
        await wait_for(pilot, lambda: editor_of(view) is None, what="editor closed")
        assert isinstance(app.screen, ReaderScreen)  # Esc did not leave the reader
        assert "box.append(4)" in screen_text(app) and "✏️ 已改动" in screen_text(app)
        # x runs what is shown: the edited code
        await pilot.press("x")
        await wait_for(pilot, lambda: view.state == "done" and view.result is not None, what="x on the edited snippet")
        assert view.result.edited and view.result.status == "mismatch"
        await pilot.press("q")
    store.close()

    # restart: the edit is still there, marked
    app2, store2 = build_app(db)
    async with app2.run_test(size=(80, 24)) as pilot:
        screen = await open_reader(pilot, "01")
        view = view_of(screen, "hello")
        assert view.edited_code == 'box = [1, 2, 3]\nbox.append(4)\nprint("盒子:", box)\n'
        assert view.has_class("-edited")
        await wait_for(pilot, lambda: "✏️ 已改动" in screen_text(app2) and "box.append(4)" in screen_text(app2), what="edit on screen")
        # u restores the book's version after a confirmation; n keeps the edit
        view.focus()
        await wait_for(pilot, lambda: screen.focused is view, what="#hello focused")
        await pilot.press("u")
        await wait_for(pilot, lambda: type(app2.screen).__name__ == "ConfirmRestore", what="the confirmation")
        assert "恢复成书上的原文" in screen_text(app2)
        await pilot.press("n")
        await wait_for(pilot, lambda: app2.screen is screen, what="back in the reader")
        assert store2.edit("01", "hello") is not None
        await pilot.press("u")
        await wait_for(pilot, lambda: type(app2.screen).__name__ == "ConfirmRestore", what="the confirmation again")
        await pilot.press("y")
        await wait_for(pilot, lambda: view.edited_code is None, what="restored")
        assert store2.edit("01", "hello") is None
        assert not view.has_class("-edited") and "✏️" not in widget_text(view.query_one(".snip-head"))
        await wait_for(pilot, lambda: "box.append(4)" not in screen_text(app2), what="book's code on screen")
        # a run now is the book's again: plain verdict, no "changed"
        await pilot.press("x")
        await wait_for(pilot, lambda: view.state == "done" and view.result is not None, what="book run")
        assert view.result.status == "match" and not getattr(view.result, "edited", False)
        assert "代码已改动" not in widget_text(view.query_one(".verdict"))
        await pilot.press("q")
    store2.close()


@sync
async def test_gpu_snippet_is_editable_and_says_why_it_does_not_run_norun_is_read_only(tmp_path):
    import shutil

    course = tmp_path / "course"
    shutil.copytree(FIXTURE, course)
    ch = course / "02-graph.md"
    ch.write_text(ch.read_text(encoding="utf-8").replace("## 除零 {#divide}", "```python {#show-only norun}\nprint('只读')\n```\n\n## 除零 {#divide}"), encoding="utf-8")
    app, store = build_app(tmp_path / "p.sqlite3", course_root=course)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_reader(pilot, "02")
        view, editor = await open_editor_on(pilot, screen, "needs-gpu")
        assert "需要 GPU" in widget_text(editor.query_one(".editor-note"))
        await pilot.press("end", *"  # mine")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: view.state == "done", what="the gpu run")
        assert view.result.status == "skipped"
        verdict = widget_text(view.query_one(".verdict"))
        assert "代码已改动" in verdict and "GPU" in verdict
        assert store.edit("02", "needs-gpu") is not None
        await pilot.press("escape")
        await wait_for(pilot, lambda: editor_of(view) is None, what="editor closed")
        # an edit identical to the book's is no edit
        view2, editor2 = await open_editor_on(pilot, screen, "zero")
        await pilot.press("end", "space", "backspace", "escape")
        await wait_for(pilot, lambda: editor_of(view2) is None, what="editor closed")
        assert store.edit("02", "zero") is None and view2.edited_code is None
        # norun snippets stay read-only
        norun = [v for v in screen.query(SnippetView) if v.snippet.norun]
        assert [v.snippet.id for v in norun] == ["show-only"]
        for v in norun:
            v.focus()
            await wait_for(pilot, lambda: screen.focused is v, what="the norun snippet focused")
            await pilot.press("e")
            await wait_for(pilot, lambda: any("只供阅读" in n.message for n in app._notifications), what="the read-only notice")
            assert editor_of(v) is None and store.edit("02", "show-only") is None
        await pilot.press("q")
    store.close()


class TestASecondEWhileTheEditorOpens:
    """``e e`` in one read (a key held down, the browser's stdin message): the second ``e``
    found the editor mounted but not composed yet, with no text area, and the app crashed
    (``NoMatches: '.editor-area'``, as ``u``, ``y``, ``e`` did: ``test_snippet_restore.py``)."""

    @sync
    async def test_the_second_e_keeps_the_one_editor_with_the_cursor_in_it(self, tmp_path):
        from textual import events

        from torchcourse.tui.widgets.editor import SnippetEditor

        app, store = build_app(tmp_path / "p.sqlite3")
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_reader(pilot, "01")
            view = view_of(screen, "hello")
            view.focus()
            await wait_for(pilot, lambda: screen.focused is view, what="#hello focused")
            for key in "ee":
                app.post_message(events.Key(key, key))
            await wait_for(pilot, lambda: editor_of(view) is not None and editor_of(view).query(".editor-area")
                           and screen.focused is editor_of(view).area, what="the editor focused",
                           fail=lambda: not app.is_running)
            await pilot.pause()
            assert len(view.query(SnippetEditor)) == 1 and editor_of(view).area.text == HELLO
        store.close()


def test_the_editor_loads_lazily_rss_stays_under_120_mb_and_torch_stays_out(tmp_path):
    """TextArea and tree-sitter stay off the start-up path and the reader's first screen; with the
    longest shipped chapter, the editor open and an edited snippet run on the warm runner, the
    app process stays ≤ 120 MB and never imports torch."""
    script = r"""
import asyncio, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests")
from tui_support import wait_for
from torchcourse import paths
from torchcourse.course import load_course
from torchcourse.progress import open_store
from torchcourse.tui.app import make_app
from torchcourse.tui.reader import ReaderScreen

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

def editor_modules():
    return sorted(m for m in sys.modules if m.startswith(("tree_sitter", "textual.widgets._text_area", "torchcourse.tui.widgets.editor")))

async def main():
    course = load_course(paths.shipped_content_dir())
    longest = max((c for c in course.chapters if c.available), key=lambda c: len(c.source))
    store, _ = open_store(Path(sys.argv[1]))
    app = make_app(course, store)
    seen = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        seen["at_home"] = editor_modules()
        app.open_chapter(longest.id)
        await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen) and app.screen.loaded)
        seen["reader"] = editor_modules()
        await pilot.press("tab")
        await wait_for(pilot, lambda: type(app.screen.focused).__name__ == "SnippetView")
        await pilot.press("e")
        await wait_for(pilot, lambda: type(app.screen.focused).__name__ == "CodeArea")
        seen["editing"] = editor_modules()
        view = app.screen.focused.parent.view
        await pilot.press("end", "enter", *"print('mine')", "ctrl+r")
        await wait_for(pilot, lambda: view.state == "done", timeout=240)
        seen["edited"] = bool(getattr(view.result, "edited", False))
        seen["rss"] = rss_mb()
        await pilot.press("escape", "q")
    app.runner.close()
    store.close()
    seen["torch"] = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
    print(json.dumps(seen))

asyncio.run(main())
"""
    import os

    env = {**os.environ, "TORCHCOURSE_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "p.sqlite3")], capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["at_home"] == [] and seen["reader"] == []
    assert "textual.widgets._text_area" in seen["editing"] and "tree_sitter_python" in seen["editing"]
    assert seen["edited"]
    assert seen["rss"] <= 120, f"peak RSS {seen['rss']:.1f} MB"
    assert seen["torch"] == []


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "TORCHCOURSE_HOME": str(home), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "torchcourse", "--content", str(FIXTURE), *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)


def test_run_with_file_runs_the_learners_file_as_the_snippet_and_compares(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text('import os\nbox = [1, 2, 3, 4]\nprint("盒子:", box)\nprint("cwd empty:", os.listdir("."))\n', encoding="utf-8")
    r = _cli("run", "01:hello", "--file", str(mine), "--cold", home=tmp_path / "home")
    assert r.returncode == 1, r.stderr
    assert "盒子: [1, 2, 3]" in r.stdout and "盒子: [1, 2, 3, 4]" in r.stdout  # expected and actual
    assert "不是书的错误" in r.stdout and "+盒子: [1, 2, 3, 4]" in r.stdout
    assert "cwd empty: ['snippet.py']" in r.stdout  # the same isolation: an empty temporary directory
    mine.write_text('box = [1, 2, 3]\nprint("盒子:",  box)\n', encoding="utf-8")
    r = _cli("run", "01:hello", "--file", str(mine), "--cold", home=tmp_path / "home")
    assert r.returncode == 0 and "和书上的预期输出相同" in r.stdout
    r = _cli("run", "01:hello", "--file", str(tmp_path / "missing.py"), home=tmp_path / "home")
    assert r.returncode == 2 and "missing.py" in r.stderr


def test_quitting_while_an_edited_snippet_runs_leaves_no_process(tmp_path, term_factory):  # noqa: F811
    """The edited code runs through the same runner: q kills it and the warm runner's zygote."""
    from process_support import wait_until
    from test_app_quit_midrun import _alive, _course, _started_pids

    pidfile = tmp_path / "pids"
    course = _course(tmp_path / "course", pidfile, cold=False)
    term = term_factory(["--content", str(course)], tmp_path / "home")
    open_first_chapter(term, "退出测试课", "time.sleep(300)")
    at = term.mark()
    term.send("e")
    term.read_until("Ctrl+R 运行", since=at)  # the editor is open
    at = term.mark()
    term.send("# edited\r")  # a change on the first line
    term.read_until("# edited", since=at)  # the editor has it
    term.send("\x12")  # Ctrl+R
    pid, ppid = _started_pids(term, pidfile)
    # quit from inside the editor (Ctrl+R kept the edit): Ctrl+C is a priority key, whatever has
    # the focus; Esc then q would race the editor's closing (a q it still gets is typed, no quit)
    term.send("\x03")
    assert term.wait() == 0
    wait_until(lambda: not _alive(pid), "the edited snippet's process ended with the app", cap=60)
    wait_until(lambda: not _alive(ppid), "the warm runner's zygote ended with the app", cap=60)
    import sqlite3

    [db] = (tmp_path / "home").rglob("progress.sqlite3")
    rows = sqlite3.connect(db).execute("SELECT snippet_id, code FROM snippet_edits").fetchall()
    assert rows and rows[0][0] == "slow" and rows[0][1].startswith("# edited\n")
