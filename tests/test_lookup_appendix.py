"""The error lookup over the course's real appendix A (content/A-error-lookup.md).

For every entry: its own excerpt, the whole output of the snippet it was copied from, and the same
error produced by code that is not the course's (tests/data/lookup_variants.json: real runs made
by tests/data/make_lookup_variants.py, each stored with the code that produced it) must bring that
entry's section first. Texts the course does not cover get no hit at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchcourse.course import load_course
from torchcourse.check import excerpt_problems, excerpt_sources, snippet_outputs
from torchcourse.course.appendix import appendix_entries, appendix_problems
from torchcourse.lookup import error_entries, error_index, errors_in_output, lookup_error

REPO = Path(__file__).resolve().parents[1]
CONTENT = REPO / "content"
VARIANTS = json.loads((REPO / "tests" / "data" / "lookup_variants.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def course():
    return load_course(CONTENT)


@pytest.fixture(scope="module")
def entries(course):
    return appendix_entries(course)


def test_the_appendix_has_at_least_40_entries_each_from_a_real_run(course, entries):
    assert len(entries) >= 40
    assert error_entries(course) == entries  # the lookup answers over the appendix, nothing else
    assert [p for p in appendix_problems(course)] == [] and excerpt_problems(course) == []
    outputs = snippet_outputs(course)
    for e in entries:
        assert excerpt_sources(course, e.text, outputs), e.text
        assert e.cause and e.check and e.section_title, e.origin


def test_each_entry_is_found_by_its_own_excerpt(course, entries):
    for e in entries:
        hits = lookup_error(course, e.text)
        assert hits and hits[0].entry == e, (e.origin, e.text, [(h.entry.origin, h.score) for h in hits[:3]])


def _source_outputs(course, entry):
    """The expected outputs of the snippets the entry's excerpt was copied from."""
    keys = set(excerpt_sources(course, entry.text))
    # a proof prints one line per variant, several errors' messages among them: nobody pastes
    # it as their error, so it is no source a lookup is measured against
    return [(s.key, s.expected) for ch in course.chapters if ch.available for s in ch.snippets
            if s.key in keys and not getattr(s, "proof", False)]


def test_each_entry_is_found_by_the_whole_output_of_its_snippet(course, entries):
    links = {e.text: e.link for e in entries}
    checked = 0
    for e in entries:
        for key, output in _source_outputs(course, e):
            # an output that shows errors explained in different sections can only put one first:
            # then the first hit must be one of the entries that output shows
            shown = {links[t] for t in links if excerpt_sources(course, t, [(key, _flat(output))])}
            hits = lookup_error(course, output)
            assert hits, key
            if shown == {e.link}:
                assert hits[0].entry.link == e.link, (key, e.text, [(h.entry.link, h.score) for h in hits[:3]])
                checked += 1
            else:
                assert hits[0].entry.link in shown, (key, shown, hits[0].entry.link)
    # most entries have a snippet of their own; the rest share outputs with another section's error
    # (appendix A's #extra-runs snippet prints twenty errors of as many sections in one output)
    assert checked >= 0.75 * len(entries)


def _flat(output):
    from torchcourse.course.appendix import flat
    from torchcourse.runner.normalize import normalize

    return flat(normalize(output, side="expected"))


# variants whose right entry does not come first today (kept, so the miss stays visible)
KNOWN_MISSES = {
}


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_MISSES[c["name"]], strict=True)) if c["name"] in KNOWN_MISSES else c
     for c in VARIANTS],
    ids=[c["name"] for c in VARIANTS],
)
def test_the_same_error_from_other_code_finds_the_entry(course, case):
    assert errors_in_output(case["output"]), "the stored run must show an error or a warning"
    # the whole pasted output, and the message that names the error alone: from the first error line
    # of the last traceback (a DataLoader's message quotes the worker's traceback after it; in a chain,
    # "… was the direct cause of the following exception", the first traceback's) to its end, else
    # the last error line
    out = case["output"]
    tbs = ("\n" + out).split("\nTraceback (most recent call last):")
    if len(tbs) > 1:
        tb = tbs[1] if "direct cause of the following exception" in out else tbs[-1]
        first = errors_in_output(tb)[0].split(":", 1)[0]
        tail = tb[tb.index(first):]
        line = tail.split("\nThe above exception was the direct cause")[0].strip()
    else:
        line = errors_in_output(out)[-1]
    for text in (out, line):
        hits = lookup_error(course, text)
        assert hits, (case["name"], text[-200:])
        assert hits[0].entry.link == case["link"], (case["name"], [(h.entry.link, h.score) for h in hits[:3]])


def test_every_entry_has_a_variant_from_other_code(course, entries):
    # every section of the appendix, every chapter, has a variant from other code
    links = {c["link"] for c in VARIANTS}
    assert not [e.origin for e in entries if e.link not in links], [(e.origin, e.link) for e in entries if e.link not in links]
    # and every entry is what comes first for some variant of its section: the whole pasted
    # output, or one of its lines pasted alone (two entries of a section quote different lines)
    first: dict[str, set[str]] = {}
    for c in VARIANTS:
        for text in [c["output"], *c["output"].splitlines()]:
            hits = lookup_error(course, text) if text.strip() else []
            if hits and hits[0].entry.link == c["link"]:
                first.setdefault(hits[0].entry.origin, set()).add(c["name"])
    lacking = [(e.origin, e.link, e.text[:60]) for e in entries if e.origin not in first]
    assert lacking == [], lacking


NOT_COVERED = [
    # typed from PyTorch's CUDA caching allocator message (this machine has no GPU to produce it)
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 7.79 GiB of "
    "which 1.02 GiB is free. Including non-PyTorch memory, this process has 6.75 GiB memory in use.",
    "asdf qwerty zxcv 12345 !!!",
    "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
    "",
    "   \n\n",
    "你好，请问这是什么？",
]


@pytest.mark.parametrize("text", NOT_COVERED)
def test_a_text_the_course_does_not_cover_gets_no_entry(course, text):
    assert lookup_error(course, text) == []


def test_entries_are_normalized_once_per_course(course):
    assert error_index(course) is error_index(course)
    lookup_error(course, "Trying to backward through the graph a second time")
    assert course.memo["error_index"] is error_index(course)


def test_check_does_not_import_the_lookup():
    code = (
        "import sys; from torchcourse.course import load_course; from torchcourse.check import all_problems; "
        f"all_problems(load_course({str(CONTENT)!r})); print('lookup' in ' '.join(sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_why_of_an_out_of_memory_message_says_where_to_look_next(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHCOURSE_HOME=str(tmp_path / "home"))
    env.pop("TORCHCOURSE_CONTENT", None)
    r = subprocess.run([sys.executable, "-m", "torchcourse", "--content", str(CONTENT), "why", "-"], cwd=REPO, env=env,
                       input=NOT_COVERED[0], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and r.stdout == ""
    assert "本教程没有讲到这条报错" in r.stderr and "第 00 章 §不讲的五件事" in r.stderr


def _variant(name):
    return next(c["output"] for c in VARIANTS if c["name"] == name)


class TestTheAnswerFitsTheCaseNotOnlyTheSection:
    """A row of the right section whose cause is another case's sends the learner the wrong way
    (10-A M6): each paste below is a real run (tests/data/lookup_variants.json)."""

    def _top(self, course, name):
        hits = lookup_error(course, _variant(name))
        assert hits and hits[0].sure, (name, [(h.entry.text, h.score) for h in hits[:3]])
        return hits[0].entry

    def test_a_guard_on_a_str_argument_is_answered_with_the_constant_argument_cause(self, course):
        entry = self._top(course, "export-str-guard")
        assert "非张量参数" in entry.cause and "各导一份" in entry.check

    def test_a_guard_on_a_dim_range_is_answered_with_the_dim_range_cause(self, course):
        entry = self._top(course, "export-dim-min-guard")
        assert "Dim 的范围" in entry.cause and "min" in entry.check

    def test_strict_export_data_branching_is_not_told_to_drop_fullgraph_only(self, course):
        entry = self._top(course, "export-strict-branch")
        assert "strict=True" in entry.cause and "export 没有这条退路" in entry.check

    def test_a_plain_file_loaded_into_a_compiled_model_is_told_to_load_through_orig_mod(self, course):
        entry = self._top(course, "plain-into-compiled")
        assert "compiled._orig_mod.load_state_dict" in entry.check


def test_the_break_reason_chapter_10_prints_is_not_called_uncovered(course):
    # printed by 10:compile-explain (and by any explain of an `if` on a tensor's value)
    hits = lookup_error(course, "generic_jump TensorVariable()")
    assert hits and hits[0].entry.text == "generic_jump TensorVariable()"
