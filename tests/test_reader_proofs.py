"""Proof snippets (```` ```python {#id proof} ````) in the reader: one folded line under the claim
they back, opened and folded with p (or a click), run like any snippet once open."""

from __future__ import annotations

import shutil

from torchcourse.tui.widgets.snippet import SnippetView

from tui_support import FIXTURE, build_app, open_reader, sync, wait_for

PROOF = ("盒子里一共有 6 个数。\n\n"
         "```python {#count proof}\n# 数一数盒子里的数\nprint(len([1, 2, 3] * 2))\n```\n\n```output\n6\n```\n\n")


def course_with_a_proof(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(FIXTURE, root)
    ch = root / "01-box.md"
    text = ch.read_text(encoding="utf-8")
    ch.write_text(text.replace("> ⭐ 切片得到的是", PROOF + "> ⭐ 切片得到的是", 1), encoding="utf-8")
    return root


def proof_view(screen) -> SnippetView:
    return next(v for v in screen.query(SnippetView) if v.snippet.id == "count")


def shown(view: SnippetView, cls: str) -> bool:
    found = view.query(f".{cls}")
    return bool(found) and found.first().display and found.first().styles.display != "none"


class TestAProofIsFoldedUnderItsClaim:
    @sync
    async def test_one_line_until_p_opens_it_and_p_folds_it_again(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3", course_root=course_with_a_proof(tmp_path))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = await open_reader(pilot, "01")
            view = proof_view(screen)
            line = view.query_one(".proof-line")
            assert str(line.render()).startswith("🔎 证明：数一数盒子里的数（按 p 展开）")
            assert not shown(view, "code") and not shown(view, "expected") and view.region.height == 1
            view.focus()
            await pilot.press("p")
            await wait_for(pilot, lambda: shown(view, "code") and shown(view, "expected"), what="p: the proof opens")
            assert "🔎 证明（按 p 收起）" in str(line.render())
            await pilot.press("p")
            await wait_for(pilot, lambda: not shown(view, "code"), what="p again: folded")
        store.close()

    @sync
    async def test_x_on_a_folded_proof_opens_it_and_shows_its_result(self, tmp_path):
        app, store = build_app(tmp_path / "p.sqlite3", course_root=course_with_a_proof(tmp_path))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = await open_reader(pilot, "01")
            view = proof_view(screen)
            view.focus()
            await pilot.press("x")
            await wait_for(pilot, lambda: view.state == "done", what="the proof's run", timeout=60)
            assert not view.folded and shown(view, "verdict")
            assert str(view.query_one(".verdict").render()).startswith("✅ 一致")
        store.close()


class TestProofsAreCountedByCheck:
    def test_check_json_counts_proofs_per_chapter(self, tmp_path):
        import json

        from cli_support import tc

        root = course_with_a_proof(tmp_path)
        data = json.loads(tc("--content", str(root), "check", "--json", home=tmp_path / "h").stdout)
        counts = {c["id"]: c["proofs"] for c in data["chapters"]}
        assert counts["01"] == 1 and all(n == 0 for cid, n in counts.items() if cid != "01"), counts

