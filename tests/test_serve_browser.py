"""``torchcourse serve`` in a real browser: Debian's Chromium driven by Playwright.

What the page shows is read from the terminal stream its websocket receives (rebuilt into the
grid xterm.js draws, ANSI stripped); each test keeps one screenshot in tests/screenshots/ for a
person to look at. Without Chromium or the CJK/emoji fonts the tests skip with the reason, and in
CI (CI=true) they fail with it: a CI that cannot run them must say so.
"""

from __future__ import annotations

import os
import signal

import pytest

from serve_support import (FIXTURE, REPO, Page, Served, alive, cmdline, decode_png, descendants,
                           browser, ink_mask, looks_like_a_box, missing_for_browser, serve, wait_for)  # noqa: F401 (browser and serve are fixtures)
from torchcourse.course.loader import course_id_of
from torchcourse.progress import open_store

SHOTS = REPO / "tests" / "screenshots"  # gitignored
FIXTURE_TITLE = "测试课程：拆开一个小盒子"
SHORT = (1000, 520)  # about 110 × 25 cells

_missing = missing_for_browser()
if _missing and os.environ.get("CI") == "true":
    raise RuntimeError(f"the browser tests cannot run in CI: {_missing}")
pytestmark = pytest.mark.skipif(bool(_missing), reason=f"browser tests skipped: {_missing}")


@pytest.fixture
def shot(request):
    SHOTS.mkdir(exist_ok=True)

    def take(page: Page) -> bytes:
        return page.shot(SHOTS / f"{request.node.name}.png")

    return take


def cell_boxes(page: Page, row: int, col: int, text: str):
    """Pixel boxes (x0, y0, x1, y1) of each character of ``text`` drawn at (row, col)."""
    from rich.cells import get_character_cell_size

    box = page.page.locator(".xterm-screen").bounding_box()
    cols, rows = page.size
    cw, ch = box["width"] / cols, box["height"] / rows
    out, x = [], col
    for c in text:
        w = get_character_cell_size(c)
        out.append((c, (int(box["x"] + x * cw) + 1, int(box["y"] + row * ch) + 1,
                        int(box["x"] + (x + w) * cw) - 1, int(box["y"] + (row + 1) * ch) - 1)))
        x += w
    return out


def test_home_shows_the_course_title_in_legible_chinese(browser, serve, shot):
    from torchcourse import paths
    from torchcourse.course import load_course

    title = load_course(paths.shipped_content_dir()).title
    served = serve()
    page = Page(browser, served.url)
    assert page.page.title() == title  # the tab's title too: the course's, never the command line
    page.wait_text(title)
    page.wait_text("章节地图")
    page.wait_text("📝 复习")
    page.settle()
    _w, _h, rows = decode_png(shot(page))

    row, col = page.screen.find(title)
    wide = [(c, b) for c, b in cell_boxes(page, row, col, title) if "\u4e00" <= c <= "\u9fff"]
    masks = {c: ink_mask(rows, b) for c, b in wide}
    assert all(len(m) > 8 for m in masks.values()), "a Chinese character of the title drew nothing"
    boxes = [c for c, m in masks.items() if looks_like_a_box(m)]
    assert not boxes, f"drawn as boxes (tofu): {''.join(boxes)}"

    # the emoji are drawn by a colour font: the 📝 cell has saturated pixels (a box is one grey)
    row, col = page.screen.find("📝 复习")
    (_c, (x0, y0, x1, y1)), *_ = cell_boxes(page, row, col, "📝")
    colourful = [1 for y in range(y0, y1) for x in range(x0, x1)
                 if max(rows[y][3 * x:3 * x + 3]) - min(rows[y][3 * x:3 * x + 3]) > 80]
    assert len(colourful) > 10, "📝 is not drawn in colour: no emoji font reached the page"


def test_the_glyph_check_sees_boxes(browser, serve):
    # the check above can fail: characters no font has (unassigned code points) are drawn as
    # boxes, and it says so; real characters drawn the same way are not
    served = serve("--content", str(FIXTURE))
    page = Page(browser, served.url)
    page.wait_text(FIXTURE_TITLE)
    page.page.evaluate("""() => {
        const d = document.createElement('div');
        d.style = 'position:fixed;left:10px;top:10px;z-index:99;background:#000;color:#fff;font:32px monospace;padding:4px';
        for (const c of ['\\u0378', '\\u0379', '\\u0380', '\\u0381', '\\u0382', '\\u0383', '盒', '子', '内', '存']) {
            const s = document.createElement('span');
            s.className = 'probe';
            s.textContent = c;
            d.appendChild(s);
        }
        document.body.appendChild(d);
    }""")
    boxes = [page.page.locator(".probe").nth(i).bounding_box() for i in range(10)]
    _w, _h, rows = decode_png(page.page.screenshot())
    masks = [ink_mask(rows, (int(b["x"]) + 1, int(b["y"]) + 1, int(b["x"] + b["width"]) - 1, int(b["y"] + b["height"]) - 1))
             for b in boxes]
    assert [looks_like_a_box(m) for m in masks] == [True] * 6 + [False] * 4


def test_a_chapter_opens_a_snippet_runs_and_the_keys_work(browser, serve, shot):
    served = serve("--content", str(FIXTURE))
    page = Page(browser, served.url)
    page.wait_text(FIXTURE_TITLE)
    page.settle()
    # the app is told it has the focus (textual-serve starts it blurred), as a terminal's app has
    assert [m for m in page.sent if m in ('["focus"]', '["blur"]')][-1:] == ['["focus"]'], page.sent
    page.press("?")
    page.wait_text("按键一览（Esc 关闭）")
    page.press("Escape")  # a lone Esc is told apart from a sequence by a pause: wait for its effect
    page.wait_gone("按键一览（Esc 关闭）")
    page.press("Control+p")
    page.wait_text("输入章节名")
    page.press("Escape")
    page.wait_gone("输入章节名")
    page.press("c")
    page.wait_text("01 · 盒子：一块内存")
    page.wait_text("看完了一块内存")
    page.settle()
    page.press("x")
    page.wait_text("✅ 一致")
    page.settle()
    shot(page)


def test_closing_the_page_ends_its_app_and_snippets_and_keeps_the_place(browser, serve, shot):
    served = serve("--content", str(FIXTURE))
    # a short page, so break 2 is not on screen too when n stops at break 1 (a screen that shows
    # the next banner counts that break as reached, and 继续 then goes to the chapter's end)
    page = Page(browser, served.url, viewport=SHORT)
    page.wait_text(FIXTURE_TITLE)
    page.settle()
    page.press("c")
    page.wait_text("看完了一块内存")
    page.settle()
    page.press("n")
    page.wait_text("已记下")  # break point 1 reached: its write is queued
    page.press("x")
    page.wait_text("✅ 一致")  # a snippet of part 2 ran: the warm runner and its processes are up
    page.settle()
    shot(page)
    app_pid, = served.session_pids()
    started = descendants(served.proc.pid)
    assert app_pid in started and len(started) >= 2, started  # the app and the runner's processes

    page.close()  # the tab goes away
    wait_for(lambda: not any(alive(p) for p in started), "every process the tab started has ended")
    left = descendants(served.proc.pid)
    assert not left, {p: cmdline(p) for p in left}
    wait_for(lambda: "结束了一个会话" in served.log(), "serve logged the session's end")
    store, _ = open_store(served.home / "data" / "progress.sqlite3", course_id=course_id_of(FIXTURE))
    try:
        assert store.chapter_progress("01").furthest_break == 1
        assert store.last_position() == ("01", 1)
    finally:
        store.close()

    again = Page(browser, served.url, viewport=SHORT)  # reopening the URL: 继续 goes back to the same line
    again.wait_text(FIXTURE_TITLE)
    again.settle()
    again.press("c")
    again.wait_text("01 · 盒子：一块内存")
    again.settle()
    top = "\n".join(again.screen.lines()[:5])
    assert "断点 1/2 · 看完了一块内存" in top, again.screen.text()  # part 1 starts at its banner
    assert "一个盒子里装着一排数" not in again.screen.text()  # not the chapter's start
    again.close()


def test_a_request_without_the_token_is_refused(browser, serve, shot):
    served = serve("--content", str(FIXTURE))
    context = browser.new_context()
    try:
        page = context.new_page()
        for url in (served.base, served.base + "?token=wrong" + served.token[:4], served.base + "static/js/textual.js"):
            response = page.goto(url)
            assert response.status == 403, url
            assert "需要访问令牌" in page.content()
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "test_a_request_without_the_token_is_refused.png"))
        assert FIXTURE_TITLE not in page.content()
        assert served.session_pids() == []  # no app was started for it
    finally:
        context.close()


def test_closing_the_page_while_a_busy_snippet_runs_ends_it(browser, serve, shot, tmp_path):
    mark = tmp_path / "pid"
    code = (f'import os\nopen({str(mark)!r} + ".t", "w").write(str(os.getpid()))\n'
            f'os.rename({str(mark)!r} + ".t", {str(mark)!r})\nwhile True:\n    pass')
    course = tmp_path / "course"
    course.mkdir()
    (course / "course.toml").write_text(
        'title = "坏代码课"\nchars_per_minute = 170\n'
        '[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "坏代码"\npromise = "不守规矩"\n'
        '[[routes]]\nid = "A"\nname = "唯一路线"\naudience = "测试"\nchapters = ["01"]\n', encoding="utf-8")
    (course / "01.md").write_text(
        f"# 01 · 坏代码\n\n🎯 一段停不下来的代码。\n\n```python {{#busy cold}}\n{code}\n```\n\n```output\nnever\n```\n\n"
        "<!-- break: 完 -->\n", encoding="utf-8")
    runs = tmp_path / "runs"
    runs.mkdir()
    served = serve("--content", str(course), env={"TMPDIR": str(runs)})
    page = Page(browser, served.url)
    page.wait_text("坏代码课")
    page.settle()
    page.press("c")
    page.wait_text("01 · 坏代码")
    page.settle()
    page.press("x")
    wait_for(mark.exists, "the snippet started")
    snippet = int(mark.read_text())
    started = descendants(served.proc.pid)
    assert snippet in started, {p: cmdline(p) for p in started}  # the snippet runs under this tab's app
    shot(page)

    try:
        page.close()
        wait_for(lambda: not alive(snippet), "the busy snippet ended with its tab")
        wait_for(lambda: not descendants(served.proc.pid), "every process the tab started ended")
        wait_for(lambda: not list(runs.glob("tc-run-*")), "the run directory was removed")
        assert served.proc.poll() is None  # serve itself keeps serving
    finally:
        if alive(snippet):  # the one process this test knows by pid (the rest go with serve's session)
            os.kill(snippet, signal.SIGKILL)


def test_a_class_page_shows_who_is_signed_in_above_the_terminal(browser, serve, shot, tmp_path):
    users = tmp_path / "class.toml"
    users.write_text('alice = "alice-token-0123456789abcdef"\n', encoding="utf-8")
    users.chmod(0o600)
    served = serve("--content", str(FIXTURE), serve_args=("--users", str(users)))
    page = Page(browser, served.base + "?token=alice-token-0123456789abcdef", viewport=SHORT)
    page.wait_text("学员：alice")  # the app's home title names her too
    page.settle()
    assert page.page.title() == f"{FIXTURE_TITLE} · alice"
    who = page.page.locator("#who")
    assert who.is_visible() and who.inner_text() == "学员：alice · 这里的进度只属于你"
    bar, term = who.bounding_box(), page.page.locator(".xterm-screen").bounding_box()
    assert bar["height"] > 10 and bar["y"] + bar["height"] <= term["y"] + 1  # above the terminal, covering none of it
    shot(page)
    page.close()


# -- a class in the browser: the page fits, browser habits work, who is who is strict ---------------

CLASS_TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdefgh"}


def class_served(serve, tmp_path, users=CLASS_TOKENS):
    path = tmp_path / "class.toml"
    path.write_text("".join(f'{n} = "{t}"\n' for n, t in users.items()), encoding="utf-8")
    path.chmod(0o600)
    return serve("--content", str(FIXTURE), serve_args=("--users", str(path))), path


def last_row(page: Page) -> str:
    return page.screen.lines()[page.size[1] - 1]


def assert_key_bar_on_screen(page: Page, needle: str) -> None:
    """The app's last row (its key bar) holds ``needle`` and lies inside the window."""
    wait_for(lambda: (page.pump(), needle in last_row(page))[1], f"{needle!r} on the last row")
    box = page.page.locator(".xterm-screen").bounding_box()
    height = page.page.evaluate("innerHeight")
    assert box["y"] + box["height"] <= height + 0.5, (box, height)
    assert page.page.evaluate("document.documentElement.scrollHeight") <= height


class TestTheKeyBarIsOnScreenInAClass:
    def test_home_reader_and_quiz_show_their_last_row(self, browser, serve, shot, tmp_path):
        served, _ = class_served(serve, tmp_path)
        page = Page(browser, served.base + f"?token={CLASS_TOKENS['alice']}", viewport=SHORT)
        page.wait_text("学员：alice")
        page.settle()
        assert_key_bar_on_screen(page, "继续")  # home: c 继续 …
        assert not page.page.locator(".narrow-dialog").is_visible()  # a desktop window is not a phone
        page.press("c")
        page.wait_text("看完了一块内存")
        page.settle()
        assert_key_bar_on_screen(page, "下一段")  # reader: n 下一段 …
        page.press("m")
        page.wait_text("提交")
        page.settle()
        assert_key_bar_on_screen(page, "提交")  # quiz: 回车 提交 …
        shot(page)
        page.close()


class TestAMistypedLinkNeverOpensTheBrowsersPreviousLearner:
    def test_bobs_cookie_and_a_wrong_token_is_refused_not_bob(self, browser, serve, shot, tmp_path):
        served, _ = class_served(serve, tmp_path)
        context = browser.new_context()
        try:
            tab = context.new_page()
            assert tab.goto(served.base + f"?token={CLASS_TOKENS['bob']}").status == 200  # bob was here
            assert any(c["value"] == CLASS_TOKENS["bob"] for c in context.cookies())
            response = tab.goto(served.base + "?token=" + CLASS_TOKENS["bob"][:-1] + "x")  # the next learner mistypes
            assert response.status == 403
            assert "这个链接无效或已经停用，请向老师要你自己的链接" in tab.content()
            assert "bob" not in tab.content()
            assert not any(c["value"] == CLASS_TOKENS["bob"] for c in context.cookies())  # the stale cookie is gone
            assert tab.goto(served.base).status == 403  # and no later token-less request is bob either
            tab.screenshot(path=str(SHOTS / "test_bobs_cookie_and_a_wrong_token_is_refused_not_bob.png"))
        finally:
            context.close()


class TestAnotherLearnersLinkAsksFirst:
    def test_alices_browser_asks_before_it_becomes_bob(self, browser, serve, shot, tmp_path):
        served, _ = class_served(serve, tmp_path)
        context = browser.new_context()
        try:
            tab = context.new_page()
            assert tab.goto(served.base + f"?token={CLASS_TOKENS['alice']}").status == 200
            tab.goto(served.base + f"?token={CLASS_TOKENS['bob']}")  # a link bob sent her
            assert "这个浏览器正以学员 alice 的身份学习" in tab.content()
            assert any(c["value"] == CLASS_TOKENS["alice"] for c in context.cookies())  # still alice
            tab.screenshot(path=str(SHOTS / "test_alices_browser_asks_before_it_becomes_bob.png"))
            tab.click("#stay")  # 继续以 alice 的身份学习
            tab.wait_for_selector("text=学员：alice")
            tab.go_back()
            tab.click("#switch")  # 换成学员 bob: the browser's own form, sent with this site's Origin
            tab.wait_for_selector("text=学员：bob")
            assert "token=" not in tab.url
            assert any(c["value"] == CLASS_TOKENS["bob"] for c in context.cookies())
            assert not any(c["value"] == CLASS_TOKENS["alice"] for c in context.cookies())
        finally:
            context.close()


class TestAPageOfOneLearnerNeverRunsAsAnother:
    def test_a_tab_whose_browser_switched_meanwhile_says_so_and_reopens_as_the_new_learner(self, browser, serve, tmp_path):
        served, _ = class_served(serve, tmp_path)
        context = browser.new_context()
        held = []  # alice's page waits for its script while another tab switches the browser to bob
        context.route("**/static/js/textual.js", lambda route: held.append(route))
        try:
            tab = context.new_page()
            tab.goto(served.base + f"?token={CLASS_TOKENS['alice']}", wait_until="commit")
            wait_for(lambda: (tab.wait_for_timeout(20), held)[1], "alice's page asked for its script")
            other = context.new_page()
            other.goto(served.base + f"?token={CLASS_TOKENS['bob']}", wait_until="commit")
            other.click("#switch")  # 换成学员 bob
            wait_for(lambda: any(c["value"] == CLASS_TOKENS["bob"] for c in context.cookies()), "bob's cookie")
            for route in held:  # alice's page, and bob's that the switch loaded
                route.continue_()
            context.unroute("**/static/js/textual.js")
            card = tab.locator(".closed-dialog")
            wait_for(lambda: (tab.wait_for_timeout(20), card.is_visible())[1], "alice's page closed")
            assert "这个浏览器现在登录的是另一位学员" in card.inner_text()
            assert "学员：alice" in tab.content() and served.log().count("带着学员 bob 的凭据连接：拒绝") == 1
            tab.screenshot(path=str(SHOTS / "test_a_tab_whose_browser_switched_meanwhile_says_so.png"))
            tab.click("#reopen")  # 重新打开: as the browser's learner now
            tab.wait_for_selector("text=学员：bob")
            assert "学员：alice" not in tab.content()
        finally:
            context.close()


def selection_page(browser, url) -> Page:
    page = Page(browser, url)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    return page


class TestCtrlCCopiesAndNeverQuits:
    def test_shift_drag_then_ctrl_c_copies_and_the_session_runs_on(self, browser, serve, shot):
        served = serve("--content", str(FIXTURE))
        page = selection_page(browser, served.url)
        page.wait_text(FIXTURE_TITLE)
        page.settle()
        row, _col = page.screen.find(FIXTURE_TITLE)
        page.page.evaluate(f"torchcourseXterm.selectLines({row}, {row})")  # what Shift+drag selects
        assert page.page.evaluate("torchcourseXterm.hasSelection()")
        page.press("Control+c")
        copied = page.page.evaluate("navigator.clipboard.readText()")
        assert FIXTURE_TITLE in copied.replace(" ", ""), copied
        assert '["stdin","\\u0003"]' not in page.sent  # nothing reached the app
        page.press("Control+c")  # no selection now: still no quit
        page.press("c")
        page.wait_text("看完了一块内存")  # the session is alive
        assert not page.page.locator(".closed-dialog").is_visible()
        shot(page)
        page.close()

    def test_a_plain_drag_says_how_to_select(self, browser, serve):
        served = serve("--content", str(FIXTURE))
        page = Page(browser, served.url)
        page.wait_text(FIXTURE_TITLE)
        page.settle()
        page.page.mouse.move(300, 300)
        page.page.mouse.down()
        page.page.mouse.move(500, 320, steps=5)
        page.page.mouse.up()
        tip = page.page.locator("#tip")
        assert tip.is_visible() and "按住 Shift 再拖动" in tip.inner_text()
        page.close()


class TestCtrlVPastesIntoTheLookupBox:
    def test_ctrl_v_fills_the_lookup_box(self, browser, serve, shot):
        served = serve("--content", str(FIXTURE))
        page = selection_page(browser, served.url)
        page.wait_text(FIXTURE_TITLE)
        page.settle()
        page.press("e")
        page.wait_text("粘贴")
        page.settle()
        page.page.evaluate("navigator.clipboard.writeText('RuntimeError: element 0 of tensors does not require grad')")
        page.press("Control+v")
        page.wait_text("element 0 of tensors")
        assert any("\\u001b[200~RuntimeError" in m for m in page.sent), page.sent[-5:]
        shot(page)
        page.close()


class TestAPhoneIsToldToTurnOrUseAComputer:
    def test_upright_phone_gets_the_card_and_a_wide_window_does_not(self, browser, serve):
        served = serve("--content", str(FIXTURE))
        phone = Page(browser, served.url, viewport=(390, 844))
        wait_for(lambda: (phone.pump(), phone.page.locator(".narrow-dialog").is_visible())[1], "the phone card")
        assert "请把手机横过来，或用电脑打开" in phone.page.locator(".narrow-dialog").inner_text()
        phone.page.set_viewport_size({"width": 844, "height": 390})  # turned
        wait_for(lambda: (phone.pump(), not phone.page.locator(".narrow-dialog").is_visible())[1], "the card went away")
        phone.close()


class TestTheClosedCardsSayWhatHappened:
    def test_a_revoked_link_and_a_stopped_server_are_different_cards(self, browser, serve, tmp_path):
        served, path = class_served(serve, tmp_path)
        page = Page(browser, served.base + f"?token={CLASS_TOKENS['alice']}")
        page.wait_text("学员：alice")
        page.settle()
        path.write_text(f'bob = "{CLASS_TOKENS["bob"]}"\n', encoding="utf-8")  # alice is revoked
        card = page.page.locator(".closed-dialog")
        wait_for(lambda: (page.pump(), card.is_visible())[1], "a closed card")
        wait_for(lambda: (page.pump(), "这个链接无效或已经停用" in card.inner_text())[1], "the revoked card")
        assert not page.page.locator("#reopen").is_visible()
        other = Page(browser, served.base + f"?token={CLASS_TOKENS['bob']}")
        other.wait_text("学员：bob")
        other.settle()
        served.interrupt()  # the server stops under bob
        card = other.page.locator(".closed-dialog")
        wait_for(lambda: (other.pump(), "服务器已经停止" in card.inner_text())[1], "the stopped card")
        page.close()
        other.close()


class TestTheWheelScrollsAThirdOfAScreen:
    def test_one_notch_moves_the_text_about_a_third_of_the_rows(self, browser, serve):
        served = serve("--content", str(FIXTURE))
        page = Page(browser, served.url, viewport=SHORT)  # the chapter is longer than the window
        page.wait_text(FIXTURE_TITLE)
        page.settle()
        page.press("c")
        page.wait_text("01 · 盒子：一块内存")
        page.settle()
        rows = page.size[1]
        lines = page.screen.lines()
        marker = next(line.strip()[:12] for line in lines[rows - 4:rows // 2:-1]
                      if len(line.strip()) > 8 and page.screen.text().count(line.strip()[:12]) == 1)
        before = page.screen.find(marker)[0]
        box = page.page.locator(".xterm-screen").bounding_box()
        page.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.page.mouse.wheel(0, 100)  # one notch
        assert before > rows // 2, (before, rows)  # room to move it a third up and still see it
        wait_for(lambda: (page.pump(), before - rows // 2 <= (page.screen.find(marker) or (-99,))[0] <= before - rows // 4)[1],
                 f"{marker!r} moved up by about a third of {rows} rows (it was on row {before})")
        page.close()
