"""Normalization, wildcards and diffs: what an author's expected block must match."""

import sys

import pytest

from torchcourse.runner import compare, normalize, unified_diff
from torchcourse.runner.normalize import has_wildcards


def test_line_endings_carriage_returns_and_ansi():
    raw = "a\r\nprogress 10%\rprogress 100%\n\x1b[31mred\x1b[0m   \n"
    assert normalize(raw, side="actual") == "a\nprogress 100%\nred"


def test_blank_edges_and_trailing_spaces():
    assert normalize("\n\n  x  \n y\t\n\n", side="expected") == "  x\n y"


def test_addresses_become_one_token():
    a = normalize("<Foo object at 0x7f3a2b4c5d60>", side="actual")
    b = normalize("<Foo object at 0x7fffffff0010>", side="expected")
    assert a == b == "<Foo object at 0xADDR>"
    assert normalize("0x10", side="actual") == "0x10"  # short hex literals stay


def test_traceback_keeps_header_and_final_lines():
    raw = (
        "before\n"
        "Traceback (most recent call last):\n"
        '  File "/tmp/tc-run-abc/snippet.py", line 3, in <module>\n'
        "    x.view(6)\n"
        "    ^^^^^^^^^\n"
        "RuntimeError: view size is not compatible\n"
        "\tsecond message line\n"
    )
    assert normalize(raw, side="actual", run_dir="/tmp/tc-run-abc") == (
        "before\nTraceback (most recent call last):\n  ...\nRuntimeError: view size is not compatible\n\tsecond message line"
    )


def test_chained_tracebacks_each_collapse():
    raw = (
        "Traceback (most recent call last):\n  File \"a\", line 1\nKeyError: 1\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n  File \"b\", line 2\n    y\nValueError: 2\n"
    )
    assert normalize(raw, side="actual") == (
        "Traceback (most recent call last):\n  ...\nKeyError: 1\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n  ...\nValueError: 2"
    )


def test_run_dir_and_prefix_replaced_on_actual_side_only():
    site = next(p for p in sys.path if p.endswith("site-packages"))
    raw = f"/tmp/tc-run-x/snippet.py:3: UserWarning\n{site}/torch/nn/functional.py:1: DeprecationWarning: d\n/tmp/tc-run-x\n{sys.prefix}/bin/python"
    out = normalize(raw, side="actual", run_dir="/tmp/tc-run-x")
    assert out.split("\n") == [
        "snippet.py:3: UserWarning",
        "<site-packages>/torch/nn/functional.py:1: DeprecationWarning: d",
        ".",
        "<prefix>/bin/python",
    ]
    assert normalize(raw, side="expected") == raw  # the expected side is never rewritten that way


@pytest.mark.parametrize("raw, want", [
    ("/p/bin/python3", "<prefix>/bin/python3"),  # was <prefix>/bin<prefix>ython3
    ('  File "/p/lib/python3.11/os.py", line 1', '  File "<prefix>/lib/python3.11/os.py", line 1'),
    ("/p", "<prefix>"),
    ("装在 /p.", "装在 <prefix>."),
    ("PATH=/usr/bin:/p/bin", "PATH=/usr/bin:<prefix>/bin"),
    ("/px/lib/os.py", "/px/lib/os.py"),  # another directory whose name starts with p
    ("/p.old/x /p-2/x /p_x", "/p.old/x /p-2/x /p_x"),
    ("/x/p/lib", "/x/p/lib"),  # /p inside another path
    ("/home/me/python/p", "/home/me/python/p"),
    ("/p/lib/site-packages/p/m.py", "<site-packages>/p/m.py"),  # the longer path first, once
])
def test_environment_paths_are_replaced_only_as_whole_paths(raw, want, monkeypatch):
    """A short prefix (a venv at /p) is replaced where it is a path, never inside other words."""
    import importlib
    import site as site_module

    module = importlib.import_module("torchcourse.runner.normalize")  # the package exports the function under its name
    for name in ("prefix", "base_prefix", "exec_prefix"):
        monkeypatch.setattr(sys, name, "/p")
    monkeypatch.setattr(site_module, "getsitepackages", lambda: ["/p/lib/site-packages"])
    monkeypatch.setattr(site_module, "getusersitepackages", lambda: "/nonexistent-tc/site-packages")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.rstrip("/").endswith(("site-packages", "dist-packages"))])
    module._environment_paths.cache_clear()
    try:
        assert normalize(raw, side="actual") == want
    finally:
        module._environment_paths.cache_clear()


def test_normalize_is_idempotent():
    raw = "Traceback (most recent call last):\n  File \"x\", line 1\nE: m\r\n\x1b[1mz\x1b[0m 0xdeadbeef00\n"
    once = normalize(raw, side="actual")
    assert normalize(once, side="actual") == once
    assert normalize(once, side="expected") == once
    assert compare(once, once)


def test_bad_side_rejected():
    with pytest.raises(ValueError):
        normalize("x", side="both")


def test_line_wildcard_matches_any_lines_including_none():
    exp = "start\n...\nend"
    assert compare(exp, "start\nend")
    assert compare(exp, "start\na\nb\nc\nend")
    assert not compare(exp, "start\na\nEND")


def test_inline_wildcard_matches_within_one_line():
    exp = "took <<...>> ms\ndone"
    assert compare(exp, "took 12.5 ms\ndone")
    assert not compare(exp, "took 1\n2 ms\ndone")
    assert not compare(exp, "took 3 ms\nnot done")


def test_torch_ellipsis_is_never_a_wildcard():
    exp = "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    assert compare(exp, exp)
    assert not compare(exp, "tensor([   0,    1,    2,  ..., 2997, 2998, 2999])")
    rows = "tensor([[0., 0., 0.,  ..., 0., 0., 0.],\n        ...,\n        [0., 0., 0.,  ..., 0., 0., 0.]])"
    assert compare(rows, rows)
    assert not compare(rows, rows.replace("        ...,\n", "        [1., 1., 1.,  ..., 1., 1., 1.],\n"))
    # an indented ... (torch summarization, traceback frames) is literal, not the line wildcard
    assert not compare("a\n    ...\nb", "a\nx\nb")


def test_mismatch_diff_is_unified_and_names_both_sides():
    d = unified_diff("a\nb", "a\nc")
    assert d.splitlines()[:2] == ["--- 期望 expected", "+++ 实际 actual"]
    assert "-b" in d.splitlines() and "+c" in d.splitlines()


def test_none_expected_never_matches():
    assert not compare(None, "")
    assert compare("", "\n\n")


def test_the_snippets_own_home_and_tmp_beside_its_run_dir_become_relative():
    run_dir = "/tmp/tc-run-abc123/run"
    raw = "/tmp/tc-run-abc123/home/.cache/x\n/tmp/tc-run-abc123/tmp/f.txt\n/tmp/tc-run-abc123/run/out.txt\n/tmp/elsewhere/home"
    assert normalize(raw, side="actual", run_dir=run_dir).split("\n") == ["../home/.cache/x", "../tmp/f.txt", "out.txt", "/tmp/elsewhere/home"]
    # a run directory that is not inside a tc-run-* one: its parent is left alone
    assert normalize("/srv/other/home/x\n/srv/other/run/y", side="actual", run_dir="/srv/other/run").split("\n") == ["/srv/other/home/x", "y"]


TB = "start\nTraceback (most recent call last):\n  File \"snippet.py\", line 3, in <module>\n    f()\nValueError: 坏了"


@pytest.mark.parametrize("actual, returncode, name", [
    (TB, 1, "ValueError"),
    (TB, 0, None),  # exit code 0: nothing was raised, whatever was printed
    (TB, None, None),
    (TB.replace("ValueError", "torch._dynamo.exc.Unsupported"), 1, "torch._dynamo.exc.Unsupported"),
    ("Traceback (most recent call last):\n  ...\nKeyError: 'k'\n\nDuring handling of the above exception, another exception occurred:\n\n"
     "Traceback (most recent call last):\n  ...\nRuntimeError: wrapped", 1, "RuntimeError"),  # the last traceback's
    ('  File "snippet.py", line 2\n    def f(:\n          ^\nSyntaxError: invalid syntax', 1, "SyntaxError"),
    ("  File \"snippet.py\", line 2\n\tx\nTabError: inconsistent use of tabs", 1, "TabError"),
    ("bye", 3, None),  # sys.exit(3) after a print: no traceback, not a compile error
    ("ValueError: printed, not raised", 1, None),
    ("", 1, None),
])
def test_raised_exception_is_read_from_the_last_traceback(actual, returncode, name):
    from torchcourse.runner.normalize import raised_exception

    assert raised_exception(actual, returncode) == name


class TestTracebackHeaderMidLine:
    """A program that printed without a final newline (``input("几行？")``, a progress line) and
    then failed: the traceback header starts mid-line. It is found there, not crashed on."""

    RAW = '几行？Traceback (most recent call last):\n  File "snippet.py", line 1, in <module>\n    input("几行？")\nEOFError: EOF when reading a line\n'

    def test_the_header_moves_to_its_own_line_and_the_frames_collapse(self):
        from torchcourse.runner.normalize import normalize

        assert normalize(self.RAW) == "几行？\nTraceback (most recent call last):\n  ...\nEOFError: EOF when reading a line"
        assert normalize(normalize(self.RAW)) == normalize(self.RAW)

    def test_the_raised_exception_is_read_after_a_mid_line_header(self):
        from torchcourse.runner.normalize import raised_exception

        assert raised_exception(self.RAW, 1) == "EOFError"
        assert raised_exception("partialTraceback (most recent call last):\n  File \"x\"\nZeroDivisionError: division by zero", 1) == "ZeroDivisionError"

    def test_the_header_text_inside_a_printed_line_is_no_traceback(self):
        from torchcourse.runner.normalize import raised_exception

        assert raised_exception('print("Traceback (most recent call last): is a header")', 1) is None


class TestLibraryLineNumbersOnHostileOutput:
    """The class service judges every run's output in its one process: a library-path pattern
    that scanned from each ``<site-packages>/torch/`` to the end of the output cost O(n²) — one
    learner printing that path 10,000 times froze every other learner's runs for 27 s. Judged now
    in linear time; a path never runs into the next one."""

    def test_a_megabyte_of_repeated_library_paths_is_judged_at_once(self):
        import time

        hostile = "<site-packages>/torch/a.py" * 38_000  # ~1 MB: the output cap
        start = time.perf_counter()
        assert not compare("tensor([1., 2.])", hostile, libraries=("torch",))
        assert time.perf_counter() - start < 5.0  # (minutes before; ~0.02 s now)

    def test_each_path_keeps_its_own_line_number(self):
        from torchcourse.runner.normalize import library_lines

        text = "<site-packages>/torch/a.py<site-packages>/torch/nn/b.py:12\n"
        assert library_lines(text, ("torch",)) == "<site-packages>/torch/a.py<site-packages>/torch/nn/b.py:<n>\n"


class TestBlankEdgesOnHostileOutput:
    """Blank lines at an output's edges are cut: one at a time from the front cost O(n²) — a
    snippet printing 500,000 newlines (a 0.04 s run) kept the class service's worker busy for
    27 s, every other learner's verdict behind it."""

    def test_half_a_million_leading_newlines_are_cut_at_once(self):
        import time

        start = time.perf_counter()
        assert normalize("\n" * 500_000 + "x\n" + " \n" * 500_000) == "x"
        assert not compare("y", "\n" * 500_000 + "x")
        assert time.perf_counter() - start < 5.0  # (27 s before; ~0.5 s now)

    def test_blank_lines_inside_are_kept(self):
        assert normalize("\n\n a\n\n\nb \n\n") == " a\n\n\nb"
        assert normalize("\n \n\t\n") == ""


class TestWildcardsOnHostileOutput:
    """A snippet's output is judged against an author's wildcards in the class service's one
    process (and again in the learner's app): a regex of lazy gaps backtracked cubically over
    lines (three ``...`` lines against 2,000 lines: 27 s) and quadratically within one line, so
    one learner's printout could freeze every classmate's verdicts. Judged line by line now."""

    @staticmethod
    def by_regex(expected: str, actual: str) -> bool:
        """What the wildcards mean, as the documented regex (fine on small inputs only)."""
        import re

        pieces = [r"(?:[^\n]*\n)*?" if ln == "..." else r"[^\n]*?".join(re.escape(p) for p in ln.split("<<...>>")) + r"\n"
                  for ln in expected.split("\n")]
        return re.fullmatch("".join(pieces), actual + "\n" if actual else "") is not None

    def test_a_megabyte_of_lines_against_three_line_wildcards_is_judged_at_once(self):
        import time

        start = time.perf_counter()
        assert not compare("...\nx\n...\nx\n...\nz", "\n".join(["x"] * 500_000))
        assert not compare("...\nx<<...>>\nx<<...>>\ny\n...", "\n".join(f"x{i}" for i in range(100_000)))
        assert compare("...\nx\n...\nz", "\n".join(["x"] * 500_000 + ["z"]))
        assert time.perf_counter() - start < 5.0  # (hours before; ~0.1 s now)

    def test_a_megabyte_line_against_inline_wildcards_is_judged_at_once(self):
        import time

        start = time.perf_counter()
        assert not compare("a<<...>>b<<...>>c", "a" + "b" * 1_000_000)
        assert compare("a<<...>>b<<...>>c", "a" + "b" * 1_000_000 + "c")
        assert time.perf_counter() - start < 5.0  # (~70 min before)

    def test_the_line_matcher_means_what_the_regex_meant(self):
        import itertools

        lines = ["", "a", "b", "ab", "ba", "...", "a<<...>>", "<<...>>b", "a<<...>>b", "<<...>>"]
        outputs = ["", "a", "b", "ab", "aab", "a\nb", "b\na", "a\na\nb", "ab\n\nb", "a\nab\nb\nab", "\n"]
        checked = 0
        for n in (1, 2, 3):
            for expected in map("\n".join, itertools.product(lines, repeat=n)):
                for actual in outputs:
                    exp, act = normalize(expected, side="expected"), normalize(actual, side="expected")
                    if has_wildcards(exp):
                        assert compare(expected, actual) == (exp == act or self.by_regex(exp, act)), (expected, actual)
                        checked += 1
        assert checked > 5_000
