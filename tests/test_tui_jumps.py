"""Jumps are not reading (issue 49, walk H1/M1): a search, a lookup, a link or the TOC moves the
view, never the saved place or a break reached; Esc goes back to where the jump was made from;
n / N step through the hits while a search is active. Pilot on the shipped course, route C."""

from __future__ import annotations

from torchcourse import paths

from tui_support import build_app, home, open_loaded_reader, run_app, screen_text, sync, wait_for

SIZE = (100, 30)


async def route_c_reading_01(tmp_path):
    app, store = build_app(tmp_path / "p.sqlite3", course_root=paths.shipped_content_dir())
    store.set_route("C")
    return app, store


def nothing_recorded_in_00(store) -> bool:
    return store.chapter_progress("00").furthest_break == 0 and "00" not in store.placed_chapters()


class TestSearchJump:
    @sync
    async def test_slash_enter_n_esc_leaves_00_unread_and_继续_on_01(self, tmp_path):
        """Walk H1: c, /contiguous, Enter, n, Esc → 00 has no break recorded, 继续 opens 01."""
        app, store = await route_c_reading_01(tmp_path)
        async with run_app(app, store, size=SIZE) as pilot:
            await pilot.press("c")
            await open_loaded_reader(pilot, app, "01")
            await pilot.press("slash")
            await pilot.press(*"contiguous")
            await wait_for(pilot, lambda: "找到" in screen_text(app), what="hits listed")
            await pilot.press("enter")
            first = await open_loaded_reader(pilot, app, app.search_hits[0].chapter_id)
            assert first.visiting
            await pilot.press("n")
            await wait_for(pilot, lambda: app.search_index == 1, what="the next hit")
            await pilot.pause()
            await pilot.press("escape")  # one Esc, however many hits were stepped through
            await open_loaded_reader(pilot, app, "01")
            await pilot.press("escape")
            await home(pilot, app)
            await wait_for(pilot, app.writer.idle, what="writes landed")
            assert nothing_recorded_in_00(store)
            assert store.last_position() is None or store.last_position()[0] == "01"
            assert "(c)：01" in screen_text(app)  # 开始: 01 opened and left at its top is not read in


    @sync
    async def test_one_esc_after_n_and_N_returns_to_before_the_search(self, tmp_path):
        """Walk B M1: /, Enter, n, N, then a single Esc is back in 01 where the search began."""
        app, store = await route_c_reading_01(tmp_path)
        async with run_app(app, store, size=SIZE) as pilot:
            await pilot.press("c")
            reader = await open_loaded_reader(pilot, app, "01")
            before = reader.current_place()
            await pilot.press("slash", *"register_buffer")
            await wait_for(pilot, lambda: "找到" in screen_text(app), what="hits listed")
            await pilot.press("enter")
            await open_loaded_reader(pilot, app, app.search_hits[0].chapter_id)
            for key, index in (("n", 1), ("n", 2), ("N", 1)):
                await pilot.press(key)
                await wait_for(pilot, lambda: app.search_index == index, what=f"hit {index + 1}")
                await pilot.pause()
            await pilot.press("escape")
            back = await open_loaded_reader(pilot, app, "01")
            await wait_for(pilot, lambda: back.current_place() == before, what="the place before the search")
            assert not app.back_stack


class TestEnterBeforeTheHitsArrive:
    @sync
    async def test_enter_typed_with_the_word_jumps_to_that_words_first_hit(self, tmp_path, monkeypatch):
        """A quick typist: / register_buffer Enter in one go, before the search has answered. The
        Enter is kept and jumps to the first hit of the whole word once it comes (it was lost:
        the dialog stayed open, and a stale list would have sent it to a prefix's hit)."""
        import threading

        from torchcourse.lookup import search_text
        from torchcourse.tui.screens.search import SearchScreen

        gate = threading.Event()
        real = SearchScreen.find_hits

        def held(self, text):  # the real search, answered only once the keys are all in
            gate.wait(60)
            return real(self, text)

        monkeypatch.setattr(SearchScreen, "find_hits", held)
        app, store = await route_c_reading_01(tmp_path)
        async with run_app(app, store, size=SIZE) as pilot:
            await pilot.press("c")
            await open_loaded_reader(pilot, app, "01")
            await pilot.press("slash", *"register_buffer", "enter")
            await pilot.pause()
            assert isinstance(app.screen, SearchScreen)  # nothing found yet: Enter waits
            gate.set()
            first = search_text(app.course, "register_buffer", limit=50)[0]
            await open_loaded_reader(pilot, app, first.chapter_id)
            assert app.search_term == "register_buffer" and app.search_hits[0] == first


class TestLookupJump:
    @sync
    async def test_a_lookup_jump_and_esc_keep_the_place(self, tmp_path):
        """Walk M1: an error lookup opens 03; Esc comes back to 01, 03 gets no place or break."""
        app, store = await route_c_reading_01(tmp_path)
        async with run_app(app, store, size=SIZE) as pilot:
            await pilot.press("c")
            await open_loaded_reader(pilot, app, "01")
            app.jump_to("03", anchor=None)
            await open_loaded_reader(pilot, app, "03")
            await pilot.press("n")  # a visit: n moves the view, records nothing
            await pilot.pause()
            await pilot.press("escape")
            await open_loaded_reader(pilot, app, "01")
            await pilot.press("escape")
            await home(pilot, app)
            await wait_for(pilot, app.writer.idle, what="writes landed")
            assert store.chapter_progress("03").furthest_break == 0
            assert "03" not in store.placed_chapters()
            assert "(c)：01" in screen_text(app)  # 开始: 01 opened and left at its top is not read in


class TestLinkJump:
    @sync
    async def test_a_same_chapter_link_and_esc_keep_the_line_read(self, tmp_path):
        """Walk M1: in 02 a link to its own section, Esc: back at the line, 继续 unchanged."""
        app, store = await route_c_reading_01(tmp_path)
        async with run_app(app, store, size=SIZE) as pilot:
            await pilot.press("c")
            screen = await open_loaded_reader(pilot, app, "01")
            for _ in range(3):
                await pilot.press("j")
            await wait_for(pilot, lambda: screen.body.scroll_y == 3, what="read 3 rows")
            anchor = screen.chapter.sections[-1].anchor
            screen.action_follow_link(f"01#{anchor}")
            await wait_for(pilot, lambda: screen.body.scroll_y > 30, what="jumped down")
            await pilot.press("escape")
            await wait_for(pilot, lambda: screen.body.scroll_y == 3, what="back at the line")
            assert not screen.visiting
            await pilot.press("escape")
            await home(pilot, app)
            await wait_for(pilot, app.writer.idle, what="writes landed")
            assert store.chapter_progress("01").furthest_break == 0
            assert "继续 (c)：01" in screen_text(app)


class TestQuizResultsSurvive回看:
    @sync
    async def test_esc_after_回看_returns_to_the_results_list(self, tmp_path):
        """Walk M1: 07 results, Enter on a missed question, Esc → home; the list was gone."""
        from tui_support import started

        async with started(tmp_path / "p.sqlite3", size=(100, 30)) as (app, store, pilot):
            app.open_quiz("02")
            await wait_for(pilot, lambda: "第 1/1 题" in screen_text(app), what="02's quiz")
            quiz = app.screen
            right = quiz.session.current[1].answer_indexes
            wrong = next(i for i in range(len(quiz.session.current[1].choices)) if i not in right)
            from torchcourse.quiz.order import shown_numbers

            [key] = shown_numbers(quiz.session.order(*quiz.session.current), [wrong])
            await pilot.press(str(key), "enter")
            await pilot.press("enter")
            await wait_for(pilot, lambda: quiz.query_one("#quiz-missed").display, what="the results list")
            await pilot.press("enter")  # 回看 the missed question's section
            reader = await open_loaded_reader(pilot, app, "02")
            assert reader.visiting
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is quiz, what="back on the results")
            assert quiz.query_one("#quiz-missed").option_count == 1
            await wait_for(pilot, app.writer.idle, what="writes landed")
            assert "02" not in store.placed_chapters() and store.chapter_progress("02").furthest_break == 0


class TestLookupAdviceFits:
    @sync
    async def test_the_not_covered_advice_wraps_at_100_columns(self, tmp_path):
        """Walk M6: the docs address and 「不在本教程范围里」 were cut at the dialog's edge."""
        app, store = await route_c_reading_01(tmp_path)
        async with run_app(app, store, size=SIZE) as pilot:
            app.action_lookup()
            await wait_for(pilot, lambda: bool(app.screen.query("#lookup-input")), what="the lookup")
            app.screen.query_one("#lookup-input").text = "RuntimeError: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)"
            await wait_for(pilot, lambda: "本教程没有讲到" in screen_text(app), what="not covered")

            def shown() -> str:  # the dialog's own text: what lies between its borders (the home screen shows around it)
                return "".join(ln.split("│")[1].strip() for ln in screen_text(app).splitlines() if ln.count("│") >= 2)

            # (the advice's lines may land a frame after its first sentence: wait for the whole of it)
            await wait_for(pilot, lambda: "docs.pytorch.org" in shown() and "不在本教程范围里" in shown(),
                           what="the whole advice within the dialog's borders")


class TestSearchHitsMarked:
    def test_a_match_is_cut_out_and_styled(self):
        from rich.segment import Segment
        from rich.style import Style

        from torchcourse.tui.reader.blocks import SearchMark

        out = list(SearchMark.mark([Segment("用 .Contiguous() 拷贝", Style(color="red"))], "contiguous"))
        assert [s.text for s in out] == ["用 .", "Contiguous", "() 拷贝"]
        assert out[1].style.bgcolor is not None and out[0].style.bgcolor is None

    @sync
    async def test_the_term_is_marked_while_the_search_is_active(self, tmp_path):
        from torchcourse.tui.reader.blocks import SearchMark

        app, store = await route_c_reading_01(tmp_path)
        async with run_app(app, store, size=SIZE) as pilot:
            await pilot.press("c")
            await open_loaded_reader(pilot, app, "01")
            await pilot.press("slash", *"contiguous")
            await wait_for(pilot, lambda: "找到" in screen_text(app), what="hits listed")
            await pilot.press("enter")
            await open_loaded_reader(pilot, app, app.search_hits[0].chapter_id)
            assert SearchMark.term == "contiguous"
            while app.back_stack:
                await pilot.press("escape")
                await pilot.pause()
            assert SearchMark.term == ""
