"""Walk L6: the actual output shows a traceback's frames as ``  ...`` (so it compares with the
book), and ``o`` shows the real frames - the ``File "snippet.py", line N`` the appendix teaches
to look for - and folds them again. Real runner (cold: the fixture needs no torch), real store."""

from __future__ import annotations

from torchcourse.runner import Runner
from torchcourse.tui.widgets.snippet import SnippetView

from tui_support import build_app, open_reader, screen_text, sync, wait_for


def test_the_runner_keeps_the_real_frames_beside_the_compared_output(tmp_path):
    course_app, store = build_app(tmp_path / "p.sqlite3")
    store.close()
    runner = Runner(cache_dir=tmp_path / "cache", warm=False)
    try:
        snippet = course_app.course.snippet("02:twice")
        first = runner.run(snippet)
        assert first.status == "match" and "  ...\n" in first.actual
        assert 'File "snippet.py", line 8, in <module>' in first.frames
        assert 'File "snippet.py", line 3, in use' in first.frames and "  ..." not in first.frames
        again = runner.run(snippet)  # from the cache: the frames too
        assert again.cached and again.frames == first.frames
        plain = runner.run(course_app.course.snippet("01:hello"))  # no traceback: nothing to expand
        assert plain.frames == ""
    finally:
        runner.close()


@sync
async def test_o_expands_and_folds_the_frames_of_the_run_on_screen(tmp_path):
    app, store = build_app(tmp_path / "p.sqlite3")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        screen = await open_reader(pilot, "02")
        await pilot.press("o")  # nothing ran yet: a note, nothing changes
        await wait_for(pilot, lambda: any("没有可以展开的调用栈" in n.message for n in app._notifications), what="the note")
        view = next(v for v in screen.query(SnippetView) if v.snippet.id == "twice")
        view.focus()
        await pilot.press("x")
        await wait_for(pilot, lambda: view.state == "done", what="the run")
        await wait_for(pilot, lambda: "实际输出（o 展开调用栈）" in screen_text(app), what="the hint")
        assert 'File "snippet.py", line 3' not in screen_text(app)
        await pilot.press("o")
        await wait_for(pilot, lambda: 'File "snippet.py", line 3, in use' in screen_text(app), what="the frames")
        assert "完整调用栈（o 收起）" in screen_text(app)
        await pilot.press("o")
        await wait_for(pilot, lambda: 'File "snippet.py", line 3' not in screen_text(app), what="folded again")
        assert "实际输出（o 展开调用栈）" in screen_text(app)
    store.close()


def test_run_prints_the_real_frames_after_the_comparison(tmp_path):
    import os
    import subprocess
    import sys

    from tui_support import FIXTURE

    env = {**os.environ, "TORCHCOURSE_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "torchcourse", "--content", str(FIXTURE), "run", "02:twice", "--cold"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    compared, _, full = out.stdout.partition("完整的调用栈")
    assert "  ...\n" in compared and 'File "snippet.py"' not in compared
    assert 'File "snippet.py", line 8, in <module>' in full and 'File "snippet.py", line 3, in use' in full
