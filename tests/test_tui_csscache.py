"""Parsed Textual CSS kept between runs (issue 24): served only for the same text, flags, theme
variables and Textual version; a broken stylesheet is never remembered; a bad file is ignored."""

from __future__ import annotations

import pytest
from textual.css.stylesheet import Stylesheet, StylesheetParseError

from torchcourse.tui import csscache

CSS = "Label { color: $accent; padding: 0 1; }\n.x > Static { height: auto; }"


def parsed(css: str, variables: dict[str, str]) -> list[str]:
    sheet = Stylesheet(variables=variables)
    sheet.add_source(css, read_from=("test.tcss", ""))
    sheet.parse()
    return [rule.css for rule in sheet.rules]


def test_a_second_run_is_served_from_the_file_and_equals_a_fresh_parse(tmp_path):
    variables = {"accent": "#ff0000"}
    fresh = parsed(CSS, variables)
    assert csscache.install(tmp_path)
    assert parsed(CSS, variables) == fresh
    csscache.save()
    assert list((tmp_path / "css").glob("*.pickle"))
    # a new process: the state is read back from the file
    csscache._state["entries"] = {}
    csscache.install(tmp_path)
    assert any(key[0] == CSS for key in csscache._state["entries"])
    assert parsed(CSS, variables) == fresh
    # another theme: other variables, parsed again (the colour differs)
    other = parsed(CSS, {"accent": "#00ff00"})
    assert other != fresh and "#00FF00" in " ".join(other).upper()


def test_a_broken_stylesheet_is_never_remembered(tmp_path):
    csscache.install(tmp_path)
    broken = "Label { colr: red; }"
    for _ in range(2):
        with pytest.raises(StylesheetParseError):
            parsed(broken, {})
    assert not any(key[0] == broken for key in csscache._state["entries"])


def test_an_unreadable_cache_file_is_ignored(tmp_path):
    path = csscache._file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x80\x05 not a pickle")
    assert csscache.install(tmp_path)
    assert parsed(CSS, {"accent": "#123456"})
    csscache.save()
    csscache.install(tmp_path)
    assert csscache._state["entries"], "the bad file was not replaced by a good one"
