"""What chapter 00, the help screen (``?``) and the README tell a learner about the app, checked
against the real app. Each test drives the app through Textual's Pilot on the fixture course with
a real store and a real (cold) runner, or runs the CLI as a subprocess, and asserts on what the
learner sees."""

from __future__ import annotations

from torchcourse.tui.reader import ReaderScreen
from torchcourse.tui.widgets.snippet import SnippetView

from tui_support import build_app, open_reader, run_app, screen_text, sync, wait_for, widget_text


def view_of(screen: ReaderScreen, snippet_id: str) -> SnippetView:
    return next(v for v in screen.query(SnippetView) if v.snippet.id == snippet_id)


def actual_panel(view: SnippetView) -> str:
    return widget_text(view.query_one(".outputs .actual"))


async def edit_and_run(pilot, screen: ReaderScreen, view: SnippetView, code: str) -> None:
    """``e`` on ``view``, replace its code with ``code``, Ctrl+R, wait for the result, Esc."""
    from torchcourse.tui.widgets.editor import SnippetEditor

    view.focus()
    await wait_for(pilot, lambda: screen.focused is view, what=f"#{view.snippet.id} focused")
    await pilot.press("e")
    await wait_for(pilot, lambda: bool(view.query(SnippetEditor)) and screen.focused is view.query(SnippetEditor).first().area, what="the editor")
    view.query(SnippetEditor).first().area.load_text(code)
    await pilot.press("ctrl+r")
    await wait_for(pilot, lambda: view.state == "done" and getattr(view.result, "edited", False), what="the edited run")
    await pilot.press("escape")
    await wait_for(pilot, lambda: not view.query(SnippetEditor), what="the editor closed")
    view.focus()
    await wait_for(pilot, lambda: screen.focused is view, what=f"#{view.snippet.id} focused again")


RAISES_IN_F = "def inner():\n    return {}['missing']\n\ninner()\n"


# -- F1: o after an edited run -------------------------------------------------------------


@sync
async def test_o_after_an_edited_run_never_run_as_the_book_expands_its_own_frames(tmp_path):
    app, store = build_app(tmp_path / "p.sqlite3")
    async with run_app(app, store, (110, 40), notifications=True) as pilot:
        screen = await open_reader(pilot, "02")
        view = view_of(screen, "zero")
        await edit_and_run(pilot, screen, view, RAISES_IN_F)
        folded = actual_panel(view)
        assert "KeyError: 'missing'" in folded and "  ..." in folded and "line 2, in inner" not in folded
        assert "o 展开调用栈" in folded
        await pilot.press("o")
        await wait_for(pilot, lambda: "line 2, in inner" in actual_panel(view), what="the edited run's frames")
        shown = actual_panel(view)
        assert "完整调用栈（o 收起）" in shown and "KeyError: 'missing'" in shown
        assert "屏幕上没有可以展开的调用栈" not in " ".join(n.message for n in app._notifications)
        await pilot.press("o")  # folds again: the marked panel of the edited run
        await wait_for(pilot, lambda: "line 2, in inner" not in actual_panel(view), what="folded again")
        assert actual_panel(view) == folded


@sync
async def test_o_after_a_book_run_then_an_edited_run_never_shows_the_book_runs_traceback(tmp_path):
    app, store = build_app(tmp_path / "p.sqlite3")
    async with run_app(app, store, (110, 40), notifications=True) as pilot:
        screen = await open_reader(pilot, "02")
        view = view_of(screen, "twice")
        view.focus()
        await wait_for(pilot, lambda: screen.focused is view, what="#twice focused")
        await pilot.press("x")  # the book's code: a RuntimeError with frames
        await wait_for(pilot, lambda: view.state == "done" and view.result is not None, what="the book run")
        assert view.result.frames and "RuntimeError" in view.result.frames
        await edit_and_run(pilot, screen, view, RAISES_IN_F)
        await pilot.press("o")
        await wait_for(pilot, lambda: "完整调用栈" in actual_panel(view), what="frames expanded")
        shown = actual_panel(view)
        assert "KeyError: 'missing'" in shown and "line 2, in inner" in shown
        assert "RuntimeError" not in shown and "Trying to backward" not in shown


# -- F4: s names the place the way home's 继续 line does ------------------------------------

LONG_PART = "\n\n".join(f"第 {i} 段：盒子、说明书、内存，这三个词会反复出现，读到这里你已经知道盒子是什么了。" for i in range(1, 31))


@sync
async def test_s_mid_part_names_the_section_home_then_shows_not_the_chapters_start(tmp_path):
    from tui_support import edited_course, home

    root = edited_course(tmp_path, "<!-- break: 看完了一块内存 -->", f"## 再说盒子 {{#more}}\n\n{LONG_PART}\n\n<!-- break: 看完了一块内存 -->")
    app, store = build_app(tmp_path / "p.sqlite3", course_root=root)
    async with run_app(app, store, (100, 24), notifications=True) as pilot:
        screen = await open_reader(pilot, "01")
        def mid_part() -> bool:  # the section's heading scrolled off, its break not yet on screen
            text = screen_text(app)
            return "第 1 段" not in text and "第 20 段" in text and "看完了一块内存" not in text

        for _ in range(60):
            if mid_part():
                break
            await pilot.press("j")
        assert mid_part(), screen_text(app)
        await pilot.press("s")
        start = await home(pilot, app)
        notes = [n.message for n in app._notifications if n.message.startswith("已保存")]
        assert notes, [n.message for n in app._notifications]
        assert "本章开头" not in notes[-1] and "§再说盒子" in notes[-1], notes[-1]
        await wait_for(pilot, lambda: "继续 (c)：01 盒子：一块内存 · §再说盒子" in screen_text(app), what="home's 继续 line")
        assert start is app.screen


# -- F3: torchcourse progress states the rule the app counts by ---------------------------


def test_progress_cli_states_the_reading_credit_rule_the_app_uses(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from torchcourse.progress.reading import CODE_WEIGHT, SEEN_SHARE

    env = {**os.environ, "TORCHCOURSE_HOME": str(tmp_path / "home")}
    r = subprocess.run([sys.executable, "-m", "torchcourse", "progress"], cwd=Path(__file__).resolve().parents[1],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    # the rule of progress/reading.py and tui/readcredit.py: time held at 2.5 × the course's pace,
    # code and output at half weight, a part counts at nine tenths of its characters
    assert (SEEN_SHARE, CODE_WEIGHT) == (0.9, 0.5)
    assert "每分钟 425 字" in r.stdout and "代码和输出按一半算" in r.stdout and "九成读过" in r.stdout
    assert "三分之一" not in r.stdout and "行在屏幕上停留过" not in r.stdout
    assert "按 n 跳到断点只记下读到哪里，不算读过" in r.stdout


# -- the edited run's verdict speaks to the learner, like the book's runs -------------------


@sync
async def test_edited_run_that_raises_another_error_says_it_in_the_learners_words(tmp_path):
    app, store = build_app(tmp_path / "p.sqlite3")
    async with run_app(app, store, (110, 40)) as pilot:
        screen = await open_reader(pilot, "02")
        view = view_of(screen, "twice")  # raises=RuntimeError in the book
        await edit_and_run(pilot, screen, view, RAISES_IN_F)
        verdict = widget_text(view.query_one(".verdict"))
        assert "代码已改动" in verdict
        assert "书上这段代码应该以 RuntimeError 报错结束，这次抛出的却是 KeyError" in verdict, verdict
        assert "代码块声明了" not in verdict and "raises=" not in verdict


# -- [ at the route's first chapter: "路线 D 上没有上一章了" (a space after the route's id) ----


@sync
async def test_no_previous_chapter_notice_keeps_a_space_after_the_route_id(tmp_path):
    import re

    app, store = build_app(tmp_path / "p.sqlite3")
    async with run_app(app, store, (100, 30), notifications=True) as pilot:
        await open_reader(pilot, "01")  # the first chapter of route D, the default
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: any("没有上一章" in n.message for n in app._notifications), what="the notice")
        note = next(n.message for n in app._notifications if "没有上一章" in n.message)
        assert re.match(r"路线 [A-Z] 上没有上一章了", note), note


# -- F2: the break banner says what its keys do ---------------------------------------------


@sync
async def test_break_banner_says_n_jumps_to_the_next_break_and_it_does(tmp_path):
    app, store = build_app(tmp_path / "p.sqlite3")
    async with run_app(app, store, (100, 30)) as pilot:
        screen = await open_reader(pilot, "01")
        first, second = screen.banner(1), screen.banner(2)
        words = widget_text(first).split("\n")[1]
        assert "n 跳到下一个断点" in words and "空格/PgDn 继续下一段" in words, words
        assert "s 保存并回到首页" in words
        await pilot.press("n")
        await wait_for(pilot, lambda: first.reached, what="break 1 reached")
        await pilot.press("n")  # from break 1: the next break, not the next part's first line
        await wait_for(pilot, lambda: second.reached, what="break 2 reached")
        assert "🛑 断点 2/2" in screen_text(app)


# -- F6: ? lists every key a learner can press, read from the screens' own bindings -------


def _help_sections(text: str) -> dict[str, str]:
    import re

    parts = re.split(r"【(.+?)】", text)
    return {name: body for name, body in zip(parts[1::2], parts[2::2])}


@sync
async def test_help_lists_the_quiz_the_lookup_box_and_the_restore_confirmation_keys(tmp_path):
    from torchcourse.tui.keys import key_name
    from torchcourse.tui.screens.dialogs import HelpScreen
    from torchcourse.tui.screens.lookup import LookupScreen
    from torchcourse.tui.screens.quiz import QUIZ_BINDINGS
    from torchcourse.tui.widgets.editor import ConfirmRestore

    app, store = build_app(tmp_path / "p.sqlite3")
    async with run_app(app, store, (100, 60)) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        sections = _help_sections(widget_text(app.screen.query_one("#help-table")))
        for scope, bindings, typed in (("测验", QUIZ_BINDINGS, ()), ("报错反查", LookupScreen.BINDINGS, ("q",)),
                                       ("u 的确认框", ConfirmRestore.BINDINGS, ())):
            assert scope in sections, sorted(sections)
            body = sections[scope]
            for b in bindings:
                for key in (k.strip() for k in b.key.split(",")):
                    if key in typed:
                        continue
                    shown = "1-9" if key.isdigit() else key_name(key)
                    assert shown in body.split(), (scope, key, body)
        lookup = sections["报错反查"]
        for key in ("Enter", "Shift+Enter", "Tab", "Esc"):
            assert key in lookup, key
        quiz = sections["测验"]
        for key in ("1-9", "空格", "r", "y", "n", "Enter", "PgUp", "PgDn", "Esc"):
            assert key in quiz, key


# -- F8, F9: what Esc and q really do, in the help -----------------------------------------


@sync
async def test_q_in_a_dialog_closes_it_and_esc_after_a_link_goes_back_to_its_chapter_as_the_help_says(tmp_path):
    from torchcourse.tui.screens.dialogs import HelpScreen

    app, store = build_app(tmp_path / "p.sqlite3")
    async with run_app(app, store, (100, 40)) as pilot:
        screen = await open_reader(pilot, "01")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        global_keys = _help_sections(widget_text(app.screen.query_one("#help-table")))["全局"]
        assert "对话框" in global_keys.split("\n  q", 1)[1].split("\n  ", 1)[0]  # q's row says so
        assert "链接" in global_keys.split("\n  Esc", 1)[1].split("\n  ", 1)[0]  # Esc's row
        await pilot.press("q")  # closes the help, the app keeps running
        await wait_for(pilot, lambda: app.screen is screen, what="back in the reader")
        assert app.is_running
        screen.action_follow_link("02#divide")  # what a click on the link runs
        await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen) and app.screen.chapter.id == "02", what="the link's chapter")
        await wait_for(pilot, lambda: app.screen.loaded, what="02 loaded")
        from textual.widgets import Button

        end = app.screen.query_one("#end-home", Button)  # 02 is the last written chapter of route D
        assert "Esc" not in str(end.label), end.label  # Esc would not go home here
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen) and app.screen.chapter.id == "01", what="back to 01")


# -- walk L14: chapter 00's minutes are the home screen's --------------------------------------


def test_chapter_00_minutes_tables_state_the_home_screens_minutes():
    """00's map and route tables say what home's ⏱ says (tools/chapter00_minutes.py --write)."""
    import importlib.util
    import re
    from pathlib import Path

    from torchcourse import paths
    from torchcourse.course import chapter_minutes, load_course

    tool = Path(__file__).resolve().parents[1] / "tools" / "chapter00_minutes.py"
    spec = importlib.util.spec_from_file_location("chapter00_minutes", tool)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    course = load_course(paths.shipped_content_dir())
    text = (Path(course.root) / course.chapter("00").file).read_text(encoding="utf-8")
    assert mod.expected(text, course) == text, "run tools/chapter00_minutes.py --write"
    rows = dict(re.findall(r"^\| (\w+) \| [^|]+ \| (\d+) \| [^|]+ \|$", text, flags=re.M))
    assert {cid: int(m) for cid, m in rows.items()} == {ch.id: chapter_minutes(ch) for ch in course.chapters}
    for r in course.routes:
        assert re.search(rf"^\| {r.id} \|.*\| {r.minutes} 分钟(，附录另查)? \|$", text, flags=re.M), r.id


# -- a break reached in an earlier visit is shown as reached when the chapter opens again ----


@sync
async def test_a_break_reached_before_is_marked_when_the_chapter_is_opened_again(tmp_path):
    db = tmp_path / "p.sqlite3"
    app, store = build_app(db)
    async with run_app(app, store, (100, 30)) as pilot:
        screen = await open_reader(pilot, "01")
        await pilot.press("n")
        await wait_for(pilot, lambda: store.chapter_progress("01").furthest_break == 1, what="break 1 stored")
        await pilot.press("q")
    app, store = build_app(db)
    async with run_app(app, store, (100, 30)) as pilot:
        screen = await open_reader(pilot, "01")
        first, second = screen.banner(1), screen.banner(2)
        assert "✔ 已记下" in widget_text(first) and "✔ 已记下" not in widget_text(second)
        # it opens where it was left, at that break: the banner on screen says it was recorded
        await wait_for(pilot, lambda: first in screen.visible_banners() and screen.body.scroll_y > 0, what="break 1 on screen")
        await wait_for(pilot, lambda: "🛑 断点 1/2" in screen_text(app) and "✔ 已记下" in screen_text(app), what="the mark painted")
