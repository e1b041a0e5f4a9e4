"""Issue 47: outputs recorded per release. course.toml's [recorded], the ```output {MODULE SPEC}
alternatives after a snippet's reference block, the verdict that picks the installed release's
alternative or names the release the book was recorded on, library line numbers in the
comparison, the cache keyed on every preloaded module's version, verify --python --accept /
--drift, and doctor.

The mechanism is tested with a small course whose preload is a module of the test's own,
``mylib``, installed in three versions: each "interpreter" is this Python behind a two-line shell
script that puts one version's site-packages directory on PYTHONPATH (the runner drops
PYTHONPATH from a snippet's environment; the script sets it again, as a venv's site would be)."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from cli_support import tc
from torchcourse.course import load_course
from torchcourse.course.chapter import reading_chars
from torchcourse.course.releases import regroup, spec_matches
from torchcourse.runner.normalize import compare

SNIPPETS = textwrap.dedent(
    """\
    ```python {#lib}
    import mylib
    print(mylib.greet())
    ```

    ```output
    placeholder
    ```

    ```python {#warn}
    import mylib
    mylib.careful()
    ```

    ```output
    placeholder
    ```

    ```python {#literal}
    print("graph.py:979")
    ```

    ```output
    graph.py:979
    ```

    """
)

# the warning sits on another line of mylib's own file in each version (rule 9's noise)
MYLIB = '''\
import warnings
__version__ = "{version}"
{padding}

def greet():
    return "{greeting}"


def careful():
    warnings.warn("careful", stacklevel=1)
'''


def _install(root: Path, version: str, greeting: str, padding: int, metadata: bool = True) -> Path:
    site = root / f"v{version}" / "site-packages"
    pkg = site / "mylib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(MYLIB.format(version=version, greeting=greeting, padding="\n" * padding), encoding="utf-8")
    if metadata:
        info = site / f"mylib-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: mylib\nVersion: {version}\n", encoding="utf-8")
    return site


def _python(path: Path, site: Path) -> Path:
    path.write_text(f'#!/bin/sh\nPYTHONPATH="{site}" exec "{sys.executable}" "$@"\n', encoding="utf-8")
    path.chmod(0o755)
    return path


SITES: dict[str, Path] = {}  # version -> its site-packages (set by the libs fixture)


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    """Three interpreters: mylib 1.0 (the reference), 2.0 and 3.0 (both print 'hello 2')."""
    root = tmp_path_factory.mktemp("libs")
    sites = {"1.0": _install(root, "1.0", "hello 1", 0), "2.0": _install(root, "2.0", "hello 2", 3),
             "3.0": _install(root, "3.0", "hello 2", 5, metadata=False)}
    SITES.update(sites)
    return {v: _python(root / f"python-{v}", site) for v, site in sites.items()}


def _course(tmp_path: Path, recorded: str = 'mylib = ["1.0", "2.0", "3.0"]') -> Path:
    root = tmp_path / "course"
    out = tc("new", str(root), home=tmp_path / "h")
    assert out.returncode == 0, out.stderr
    toml = root / "course.toml"
    text = toml.read_text(encoding="utf-8").replace("preload = []", 'preload = ["mylib"]')
    toml.write_text(text + f"\n[recorded]\n{recorded}\n", encoding="utf-8")
    chapter = root / "01-first.md"
    text = chapter.read_text(encoding="utf-8")
    chapter.write_text(text.replace("> ⭐ 预期输出不要手写", SNIPPETS + "> ⭐ 预期输出不要手写", 1), encoding="utf-8")
    return root


@pytest.fixture
def course(tmp_path, libs):
    """The small course, its reference outputs accepted under mylib 1.0."""
    root = _course(tmp_path)
    out = tc("--content", str(root), "verify", "--python", str(libs["1.0"]), "--accept", "--no-cache", home=tmp_path / "h")
    assert out.returncode == 0, out.stdout + out.stderr
    text = (root / "01-first.md").read_text(encoding="utf-8")
    assert "hello 1" in text and "placeholder" not in text and "{mylib" not in text
    return root


def _chapter(root: Path) -> str:
    return (root / "01-first.md").read_text(encoding="utf-8")


def _add_alternative(root: Path, after: str, spec: str, body: str) -> None:
    path = root / "01-first.md"
    text = path.read_text(encoding="utf-8")
    block = f"```output\n{after}\n```\n"
    assert block in text
    path.write_text(text.replace(block, block + f"\n```output {{{spec}}}\n{body}\n```\n", 1), encoding="utf-8")


def _check(root: Path, tmp_path: Path):
    # as an author runs it: where the course's library (the reference release) is installed,
    # since check refuses a preload module it cannot import
    path = os.pathsep.join(p for p in (str(SITES["1.0"]), os.environ.get("PYTHONPATH", "")) if p)
    return tc("--content", str(root), "check", home=tmp_path / "h", env={"PYTHONPATH": path})


class TestRecordedReleasesInCourseToml:
    def test_the_shipped_course_records_three_torch_releases_reference_first(self):
        course = load_course(Path(__file__).resolve().parent.parent / "content")
        assert course.recorded == {"torch": ("2.13.0", "2.14.1", "2.15.0")}

    def test_a_module_the_course_does_not_preload_is_refused_at_its_line(self, tmp_path):
        root = _course(tmp_path, recorded='numpy = ["2.0.0"]')
        course = load_course(root)
        lines = (root / "course.toml").read_text(encoding="utf-8").splitlines()
        line = next(i for i, ln in enumerate(lines, 1) if ln.startswith("numpy ="))
        assert any(p.line == line and p.file == root / "course.toml" and "可课程没有预先导入它" in p.message for p in course.problems), course.problems
        assert course.recorded == {}

    def test_a_release_that_is_no_version_number_is_refused(self, tmp_path):
        course = load_course(_course(tmp_path, recorded='mylib = ["1.0", "latest"]'))
        assert any("'latest' 不是 2.13.0 这样的版本号" in p.message for p in course.problems)


class TestAlternativeBlocks:
    def test_an_alternative_after_the_reference_block_belongs_to_its_snippet(self, course, tmp_path):
        _add_alternative(course, "hello 1", "mylib==2.0", "hello 2")
        snip = load_course(course).snippet("01:lib")
        (alt,) = snip.alternatives
        line = _chapter(course).splitlines().index("```output {mylib==2.0}") + 1
        assert (alt.module, alt.spec, alt.text, alt.line) == ("mylib", "==2.0", "hello 2\n", line)
        assert snip.expected == "hello 1\n"
        out = _check(course, tmp_path)
        assert "0 处问题" in out.stdout, out.stdout + out.stderr

    def test_an_alternative_without_a_reference_block_is_refused_at_its_line(self, course, tmp_path):
        path = course / "01-first.md"
        text = _chapter(course).replace("```output\nhello 1\n```\n", "```output {mylib==2.0}\nhello 2\n```\n", 1)
        path.write_text(text, encoding="utf-8")
        line = text.splitlines().index("```output {mylib==2.0}") + 1
        out = _check(course, tmp_path)
        assert f"01-first.md:{line}: #lib 的 ```output {{mylib==2.0}} 前面没有参考 ```output 块" in out.stdout, out.stdout

    def test_an_alternative_for_an_undeclared_module_or_release_is_refused(self, course, tmp_path):
        _add_alternative(course, "hello 1", "numpy==2.0", "hello 2")
        _add_alternative(course, "graph.py:979", "mylib==9.0", "x")
        lines = _chapter(course).splitlines()
        out = _check(course, tmp_path)
        assert f"01-first.md:{lines.index('```output {numpy==2.0}') + 1}: #lib 的输出替代块 {{numpy==2.0}}：course.toml 没有记录 'numpy' 的任何版本" in out.stdout, out.stdout
        assert f"01-first.md:{lines.index('```output {mylib==9.0}') + 1}: #literal 的输出替代块 {{mylib==9.0}} 没有选中任何一个记录过的 mylib 版本" in out.stdout

    def test_an_alternative_selecting_the_reference_release_is_refused(self, course, tmp_path):
        _add_alternative(course, "hello 1", "mylib>=1.0", "hello 2")
        assert "选中了参考版本 mylib 1.0" in _check(course, tmp_path).stdout

    def test_a_malformed_specifier_is_refused(self, course, tmp_path):
        _add_alternative(course, "hello 1", "mylib=2.0", "hello 2")
        assert "输出替代块要写成 ```output {模块 版本条件}，如 ```output {torch==2.15.0}，这里是 {mylib=2.0}" in _check(course, tmp_path).stdout


class TestReadingTimeCountsOneOutput:
    def test_alternatives_add_no_reading_time(self):
        base = "# t\n\n```python {#a}\nprint('x')\n```\n\n```output\nhello hello\n```\n"
        alt = base + "\n```output {torch==2.15.0}\nsomething much longer than the reference\n```\n"
        assert reading_chars(alt) == reading_chars(base)


class TestSpecifierMatching:
    @pytest.mark.parametrize("spec,version,want", [
        ("==2.15.0", "2.15.0", True), ("==2.15.0", "2.15.0+cu132", True), ("==2.15.0", "2.15.1", False),
        (">=2.14.1,<=2.15.0", "2.14.1", True), (">=2.14.1,<=2.15.0", "2.15.0+cpu", True),
        (">=2.14.1,<=2.15.0", "2.13.0", False), ("<2.16", "2.15.9", True), ("!=2.14.1", "2.14.1", False),
        ("==2.14.*", "2.14.7", True), ("~=2.14.0", "2.14.9", True), ("~=2.14.0", "2.15.0", False),
    ])
    def test_pep440_clauses(self, spec, version, want):
        assert spec_matches(spec, version) is want

    def test_consecutive_releases_printing_the_same_share_one_block(self):
        releases = ("1.0", "2.0", "3.0")
        first = regroup([], "mylib", releases, "2.0", "hello 2\n")
        assert first == [("==2.0", "hello 2\n")]

        class Alt:
            module, spec, text = "mylib", "==2.0", "hello 2\n"

        assert regroup([Alt()], "mylib", releases, "3.0", "hello 2\n") == [(">=2.0,<=3.0", "hello 2\n")]
        assert regroup([Alt()], "mylib", releases, "3.0", "other\n") == [("==2.0", "hello 2\n"), ("==3.0", "other\n")]
        assert regroup([Alt()], "mylib", releases, "2.0", None) == []


class TestVerdictNamesTheRelease:
    def test_off_reference_without_an_alternative_the_mismatch_names_both_releases(self, course, libs, tmp_path):
        note = "书里这段是在 mylib 1.0 上记录的，你装的是 2.0；不一致可能来自版本差异，不一定是你的改动"
        out = tc("--content", str(course), "verify", "01:lib", "--python", str(libs["2.0"]), home=tmp_path / "h")
        assert out.returncode == 1 and note in out.stdout, out.stdout + out.stderr
        out = tc("--content", str(course), "run", "01:lib", "--python", str(libs["2.0"]), home=tmp_path / "h")
        assert out.returncode == 1 and note in out.stdout, out.stdout + out.stderr

    def test_verify_json_names_the_alternative_or_the_note(self, course, libs, tmp_path):
        import json

        out = tc("--content", str(course), "verify", "01:lib", "--json", "--python", str(libs["2.0"]), home=tmp_path / "h")
        (row,) = json.loads(out.stdout)["results"]
        assert row["release_note"].startswith("书里这段是在 mylib 1.0 上记录的") and "recorded_as" not in row
        _add_alternative(course, "hello 1", "mylib==2.0", "hello 2")
        out = tc("--content", str(course), "verify", "01:lib", "--json", "--python", str(libs["2.0"]), home=tmp_path / "h")
        (row,) = json.loads(out.stdout)["results"]
        assert row["status"] == "match" and row["recorded_as"] == "mylib==2.0" and "release_note" not in row

    def test_on_the_reference_release_a_mismatch_has_no_release_note(self, course, libs, tmp_path):
        path = course / "01-first.md"
        path.write_text(_chapter(course).replace("print(mylib.greet())", "print(mylib.greet(), '!')"), encoding="utf-8")
        out = tc("--content", str(course), "verify", "01:lib", "--python", str(libs["1.0"]), home=tmp_path / "h")
        assert out.returncode == 1 and "书里这段是在" not in out.stdout, out.stdout

    def test_the_installed_release_is_compared_with_its_alternative(self, course, libs, tmp_path):
        _add_alternative(course, "hello 1", "mylib>=2.0,<=3.0", "hello 2")
        for version in ("2.0", "3.0"):
            out = tc("--content", str(course), "run", "01:lib", "--python", str(libs[version]), home=tmp_path / "h")
            assert out.returncode == 0, out.stdout + out.stderr
            assert "期望输出 expected（书里 mylib>=2.0,<=3.0 的记录）" in out.stdout and "hello 2" in out.stdout

    def test_an_alternative_never_hides_a_real_difference(self, course, libs, tmp_path):
        _add_alternative(course, "hello 1", "mylib==2.0", "hello 2")
        path = course / "01-first.md"
        path.write_text(_chapter(course).replace("print(mylib.greet())", "print(mylib.greet())\nprint('extra')"), encoding="utf-8")
        out = tc("--content", str(course), "verify", "01:lib", "--python", str(libs["2.0"]), home=tmp_path / "h")
        assert out.returncode == 1 and "+extra" in out.stdout, out.stdout


class TestLibraryLineNumbers:
    def test_a_warning_from_the_library_on_another_line_still_matches(self, course, libs, tmp_path):
        assert re.search(r"<site-packages>/mylib/__init__\.py:\d+: UserWarning: careful", _chapter(course))
        out = tc("--content", str(course), "run", "01:warn", "--python", str(libs["2.0"]), "--no-cache", home=tmp_path / "h")
        assert out.returncode == 0, out.stdout + out.stderr
        # the actual panel shows the real line (line 10 in 2.0, 7 in 1.0)
        assert "<site-packages>/mylib/__init__.py:10: UserWarning: careful" in out.stdout

    def test_the_snippets_own_text_compares_literally(self, course, libs, tmp_path):
        path = course / "01-first.md"
        path.write_text(_chapter(course).replace('print("graph.py:979")', 'print("graph.py:1072")'), encoding="utf-8")
        out = tc("--content", str(course), "verify", "01:literal", "--python", str(libs["1.0"]), home=tmp_path / "h")
        assert out.returncode == 1 and "+graph.py:1072" in out.stdout, out.stdout

    def test_only_the_preloaded_libraries_files_are_normalised(self):
        exp = "<site-packages>/torch/autograd/graph.py:979: UserWarning: x"
        act = "<site-packages>/torch/autograd/graph.py:1072: UserWarning: x"
        assert compare(exp, act, ("torch",))
        assert not compare(exp, act, ("numpy",)) and not compare(exp, act)
        assert not compare("graph.py:979", "graph.py:1072", ("torch",))
        assert not compare("torch/autograd/graph.py:979", "torch/autograd/graph.py:1072", ("torch",))


class TestCacheKeyedOnPreloadVersions:
    def test_another_version_of_the_preloaded_module_is_never_answered_from_the_cache(self, course, libs, tmp_path):
        # one interpreter path; the module behind it changes between two runs, as after a pip install
        current = tmp_path / "current"
        python = _python(tmp_path / "python", current)
        current.symlink_to(libs["1.0"].parent / "v1.0" / "site-packages")
        out = tc("--content", str(course), "verify", "01:lib", "--python", str(python), home=tmp_path / "h")
        assert out.returncode == 0, out.stdout + out.stderr
        out = tc("--content", str(course), "verify", "01:lib", "--python", str(python), home=tmp_path / "h")
        assert "(缓存)" in out.stdout and out.returncode == 0
        current.unlink()
        current.symlink_to(libs["2.0"].parent / "v2.0" / "site-packages")
        out = tc("--content", str(course), "verify", "01:lib", "--python", str(python), home=tmp_path / "h")
        assert out.returncode == 1 and "(缓存)" not in out.stdout and "+hello 2" in out.stdout, out.stdout


class TestAcceptUnderAnotherRelease:
    def test_it_writes_that_releases_alternative_and_keeps_the_reference(self, course, libs, tmp_path):
        before = _chapter(course)
        out = tc("--content", str(course), "verify", "--python", str(libs["2.0"]), "--accept", "--no-cache", home=tmp_path / "h")
        assert out.returncode == 0, out.stdout + out.stderr
        after = _chapter(course)
        assert "```output\nhello 1\n```\n\n```output {mylib==2.0}\nhello 2\n```\n" in after
        assert after.count("{mylib") == 1  # the warning's line number and the literal text are no difference
        assert after.replace("\n```output {mylib==2.0}\nhello 2\n```\n", "", 1) == before
        assert "0 处问题" in _check(course, tmp_path).stdout

    def test_identical_outputs_of_consecutive_releases_share_one_block(self, course, libs, tmp_path):
        for version in ("2.0", "3.0"):
            out = tc("--content", str(course), "verify", "01:lib", "--python", str(libs[version]), "--accept", "--no-cache", home=tmp_path / "h")
            assert out.returncode == 0, out.stdout + out.stderr
        text = _chapter(course)
        assert "```output {mylib>=2.0,<=3.0}\nhello 2\n```" in text and text.count("{mylib") == 1
        out = tc("--content", str(course), "verify", "--python", str(libs["3.0"]), home=tmp_path / "h")
        assert out.returncode == 0, out.stdout

    def test_a_release_not_recorded_is_refused(self, tmp_path, libs):
        root = _course(tmp_path, recorded='mylib = ["1.0", "3.0"]')
        out = tc("--content", str(root), "verify", "--python", str(libs["1.0"]), "--accept", "--no-cache", home=tmp_path / "h")
        assert out.returncode == 0, out.stdout + out.stderr
        out = tc("--content", str(root), "verify", "01:lib", "--python", str(libs["2.0"]), "--accept", "--no-cache", home=tmp_path / "h")
        assert out.returncode == 1 and "不在 course.toml 的 [recorded] mylib = ['1.0', '3.0'] 里" in out.stderr, out.stderr
        assert "{mylib" not in _chapter(root)


class TestDriftReport:
    def test_each_snippet_is_same_recorded_or_new_with_its_diff(self, course, libs, tmp_path):
        out = tc("--content", str(course), "verify", "--python", str(libs["2.0"]), "--drift", home=tmp_path / "h")
        assert out.returncode == 1
        lines = out.stdout.splitlines()
        assert any(re.match(r"differs, new\s+01:lib\b", ln) for ln in lines), out.stdout
        assert "-hello 1" in out.stdout and "+hello 2" in out.stdout
        assert any(re.match(r"same\s+01:warn$", ln) for ln in lines) and any(re.match(r"same\s+01:literal$", ln) for ln in lines)
        _add_alternative(course, "hello 1", "mylib==2.0", "hello 2")
        out = tc("--content", str(course), "verify", "--python", str(libs["2.0"]), "--drift", home=tmp_path / "h")
        assert out.returncode == 0, out.stdout
        assert any(re.match(r"differs, recorded\s+01:lib\s+\(mylib==2.0\)", ln) for ln in out.stdout.splitlines()), out.stdout


class TestDoctorNamesInstalledAndRecorded:
    def test_the_shipped_course(self, tmp_path):
        out = tc("doctor", home=tmp_path / "h")
        assert re.search(r"torch       ✅ 2\.13\.0\S*（已安装）· 书里的输出记录于 2\.13\.0、2\.14\.1、2\.15\.0（参考版本 2\.13\.0）", out.stdout), out.stdout

    def test_a_preloaded_module_on_a_release_not_recorded(self, tmp_path, libs):
        root = _course(tmp_path, recorded='mylib = ["1.0", "3.0"]')
        site = libs["2.0"].parent / "v2.0" / "site-packages"
        out = tc("--content", str(root), "doctor", home=tmp_path / "h", env={"PYTHONPATH": str(site)})
        assert "mylib       ⚠️ 2.0（已安装）· 书里的输出记录于 1.0、3.0（参考版本 1.0）：你的版本没有记录" in out.stdout, out.stdout


class TestCudaBuildLogLineOnCpu:
    def test_torchs_no_cuda_runtime_line_is_no_difference_when_torch_is_preloaded(self):
        line = "W1204 20:34:46.780000 31161 torch/utils/cpp_extension.py:183] [0/0] No CUDA runtime is found, using CUDA_HOME='/usr/local'"
        assert compare("True True", f"{line}\nTrue True", ("torch",))
        assert not compare("True True", f"{line}\nTrue True", ("numpy",))
        assert not compare("True True", "No CUDA runtime is found\nTrue True", ("torch",))  # a snippet's own print stays


class TestReaderShowsTheInstalledReleasesOutput:
    """The app's snippet panel (this venv has torch 2.13.0): a course recorded on 2.12.0 (the
    reference) and 2.13.0 shows the 2.13.0 alternative where there is one, and the reference
    labelled with its release elsewhere; the alternative block itself is never shown as text."""

    def test_the_panel_shows_the_alternative_or_the_labelled_reference(self, tmp_path):
        import shutil

        from tui_support import FIXTURE, open_reader, started, sync, widget_text
        from torchcourse.tui.widgets.snippet import SnippetView

        root = tmp_path / "course"
        shutil.copytree(FIXTURE, root)
        toml = root / "course.toml"
        toml.write_text(toml.read_text(encoding="utf-8").replace('checkpoints = "checkpoints"', 'checkpoints = "checkpoints"\npreload = ["torch"]', 1)
                        + '\n[recorded]\ntorch = ["2.12.0", "2.13.0"]\n', encoding="utf-8")
        md = root / "01-box.md"
        md.write_text(md.read_text(encoding="utf-8").replace("```output\n盒子: [1, 2, 3]\n```\n", "```output\n盒子: [1, 2, 3]\n```\n\n```output {torch==2.13.0}\n盒子（新版）: [1, 2, 3]\n```\n", 1), encoding="utf-8")
        assert load_course(root).snippet("01:hello").alternatives

        @sync
        async def body():
            async with started(tmp_path / "db.sqlite3", course_root=root) as (app, store, pilot):
                screen = await open_reader(pilot, "01")
                views = {v.snippet.id: v for v in screen.query(SnippetView)}
                hello = widget_text(views["hello"].query_one(".expected"))
                assert "预期输出（书里 torch==2.13.0 的记录）" in hello and "盒子（新版）: [1, 2, 3]" in hello
                assert "盒子: [1, 2, 3]" not in hello
                other = widget_text(views["shape-print"].query_one(".expected"))
                assert "预期输出（在 torch 2.12.0 上记录；你装的是 2.13.0" in other
                assert "torch==2.13.0" not in widget_text(screen)

        body()

    def test_the_verdict_carries_the_release_note(self):
        from types import SimpleNamespace

        from torchcourse.tui.widgets.snippet import verdict_text

        note = "书里这段是在 torch 2.13.0 上记录的，你装的是 2.15.0；不一致可能来自版本差异，不一定是你的改动"
        res = SimpleNamespace(status="mismatch", message=note, actual="x", raise_problem="", release_note=note, seconds=0.1, cached=False, truncated=False)
        assert note in verdict_text(res)
