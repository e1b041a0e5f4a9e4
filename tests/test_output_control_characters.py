"""A snippet's output never drives the terminal: every C0/C1/DEL control character except newline
and tab is shown in a visible form wherever output is displayed, in `torchcourse run`, verify's
diff and the reader; comparisons keep the text as it is. Real commands in a real
pseudo-terminal."""

from __future__ import annotations

from pathlib import Path

from test_tui_pty import open_first_chapter, term_factory  # noqa: F401  (fixture)

from torchcourse.runner.normalize import compare, normalize

EVIL = r'''print("A\x1bc" "\x1b#8" "\x1b(0" "\x0e" "\x9b2J" "\x9d0;t\x07" "abc\x08\x08\x08XYZ" "\x00" "\x7f" "\tB")'''
# what a terminal must never receive from the snippet (ESC c reset, DECALN, line drawing, SO, C1…)
RAW = [b"\x1bc", b"\x1b#8", b"\x1b(0", b"\x0e", b"\xc2\x9b", b"\xc2\x9d", b"\x08\x08\x08", b"\x00", b"\x7f"]

CHAPTER = """# 01 · 坏输出

🎯 一段输出控制字符的代码。

```python {{#evil{attrs}}}
{code}
```

```output
something else
```

<!-- break: 完 -->
"""


def _course(root: Path, cold: bool = True) -> Path:
    root.mkdir()
    (root / "course.toml").write_text(
        'title = "坏输出课"\nchars_per_minute = 170\n'
        '[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "坏输出"\npromise = "控制字符"\n'
        '[[routes]]\nid = "A"\nname = "唯一路线"\naudience = "测试"\nchapters = ["01"]\n',
        encoding="utf-8",
    )
    (root / "01.md").write_text(CHAPTER.format(code=EVIL, attrs=" cold" if cold else ""), encoding="utf-8")
    return root


def test_visible_forms_and_comparisons_unchanged():
    from torchcourse.runner.normalize import visible

    assert visible("a\x1bc\x0e\x9b\x9d\x08\x07\x00\x7f\tb\nc") == "a␛c^N\\x9b\\x9d^H^G^@^?\tb\nc"
    assert visible("") == "" and visible(None) == ""
    raw = "x\x1bc\x0ey"
    assert compare(normalize(raw, side="expected"), normalize(raw)) and "\x0e" in normalize(raw)


def _assert_clean(raw: bytes) -> None:
    for seq in RAW:
        assert seq not in raw, f"{seq!r} reached the terminal"


def test_run_shows_control_characters_visibly(tmp_path, term_factory):  # noqa: F811
    course = _course(tmp_path / "course")
    term = term_factory(["--content", str(course), "run", "01:evil", "--no-cache"], tmp_path / "home")
    term.read_until("不一致")
    assert term.wait(timeout=120) == 1
    _assert_clean(term.raw)
    assert "A␛c␛#8␛(0^N\\x9b2J\\x9d0;t^Gabc^H^H^HXYZ^@^?" in term.raw.decode("utf-8", "replace")


def test_verify_diff_shows_control_characters_visibly(tmp_path, term_factory):  # noqa: F811
    course = _course(tmp_path / "course")
    term = term_factory(["--content", str(course), "verify", "--no-cache"], tmp_path / "home")
    term.read_until("不一致 1 个")  # verify's summary line
    assert term.wait(timeout=120) == 1
    _assert_clean(term.raw)
    assert "+A␛c␛#8" in term.raw.decode("utf-8", "replace")


def test_reader_shows_control_characters_visibly(tmp_path, term_factory):  # noqa: F811
    course = _course(tmp_path / "course", cold=False)
    term = term_factory(["--content", str(course)], tmp_path / "home")
    open_first_chapter(term, "坏输出课", 'print("A')
    before = len(term.raw)
    term.send("x")
    term.read_until("␛#8")  # the output, in its visible form (the code on screen shows \x1b#8)
    term.read_until("不一致")
    _assert_clean(term.raw[before:])
    term.send("q")
    assert term.wait() == 0
