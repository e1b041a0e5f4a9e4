"""Author mode: `verify --accept` never writes a broken or unrepeatable run, declared exceptions,
misspelled attributes refused everywhere. Real `torchcourse` processes on small fixture courses."""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_runner_cli import make_course, tc


def chapter(*blocks: str) -> str:
    return "# T\n\n" + "\n\n".join(textwrap.dedent(b).strip("\n") for b in blocks) + "\n\n<!-- break -->\n"


def last_line(text: str) -> str:
    return text.strip().split("\n")[-1]


def test_an_undeclared_exception_fails_verify_even_when_the_output_matches(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#boom}
        raise RuntimeError("bad")
        ```

        ```output
        Traceback (most recent call last):
          ...
        RuntimeError: bad
        ```
        """))
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert out.returncode == 1
    assert last_line(out.stdout) == "0 passed, 1 failed, 0 skipped"
    assert "运行抛出了 RuntimeError，代码块却没有声明 raises=RuntimeError" in out.stdout
    # declaring it makes the same run pass
    text = (course / "01.md").read_text(encoding="utf-8").replace("{#boom}", "{#boom raises=RuntimeError}")
    (course / "01.md").write_text(text, encoding="utf-8")
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert out.returncode == 0 and last_line(out.stdout) == "1 passed, 0 failed, 0 skipped"


def test_a_declared_exception_that_is_not_raised_or_is_another_fails(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#quiet raises=RuntimeError}
        print("ok")
        ```

        ```output
        ok
        ```
        """,
        """
        ```python {#other raises=RuntimeError}
        raise ValueError("v")
        ```

        ```output
        Traceback (most recent call last):
          ...
        ValueError: v
        ```
        """,
        """
        ```python {#dotted raises=JSONDecodeError}
        import json
        json.loads("{")
        ```

        ```output
        Traceback (most recent call last):
          ...
        json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)
        ```
        """))
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert last_line(out.stdout) == "1 passed, 2 failed, 0 skipped"
    assert "声明了 raises=RuntimeError，运行却没有抛出异常" in out.stdout
    assert "声明了 raises=RuntimeError，运行抛出的却是 ValueError" in out.stdout
    assert "❌ 不一致  01:dotted" not in out.stdout  # the last dotted component is enough


def test_accept_refuses_a_traceback_nobody_declared_and_names_the_lone_file_rule(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#first}
        w = 3
        print(w)
        ```
        """,
        """
        ```python {#second}
        print(w * 2)
        ```
        """))
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    after = (course / "01.md").read_text(encoding="utf-8")
    assert "```output\n3\n```" in after  # the good one is written
    assert "NameError" not in after  # the broken one is not
    assert "拒绝写入 1 个代码块" in out.stderr and "01:second" in out.stderr
    assert "前面代码块定义的名字在这里并不存在" in out.stderr
    assert out.returncode == 1 and last_line(out.stdout) == "1 passed, 1 failed, 0 skipped"
    run = tc("--content", str(course), "run", "01:second", home=tmp_path / "h")
    assert "前面代码块定义的名字在这里并不存在" in run.stdout


def test_accept_refuses_a_nondeterministic_output(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#noisy}
        import os
        print(os.urandom(8).hex())
        ```
        """))
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    assert "```output" not in (course / "01.md").read_text(encoding="utf-8")
    assert "01:noisy" in out.stderr and "两次运行的输出不同" in out.stderr
    assert out.returncode == 1


def test_accept_shows_what_it_overwrote(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#sum}
        print(1 + 1)
        ```

        ```output
        3
        ```
        """))
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.split("\n")
    assert any("01:sum" in ln and "已改写" in ln for ln in lines)
    assert "    -3" in lines and "    +2" in lines
    assert "写入了 1 个 output 块" in out.stdout


def test_accept_refuses_while_check_has_problems_in_the_chapter(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ## A {#same}

        ## B {#same}

        ```python {#sum}
        print(1 + 1)
        ```
        """))
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    assert out.returncode == 1
    assert "duplicate section anchor 'same'" in out.stderr and "先修好" in out.stderr
    assert "```output" not in (course / "01.md").read_text(encoding="utf-8")


def test_a_misspelled_attribute_is_named_and_the_snippet_is_never_run(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#slow timout=5}
        print("ran")
        ```

        ```output
        ran
        ```
        """))
    check = tc("--content", str(course), "check", home=tmp_path / "h")
    assert "unknown fence attribute 'timout=5'; did you mean 'timeout=5'?" in check.stdout + check.stderr
    for cmd in (["verify"], ["run", "01:slow"]):
        out = tc("--content", str(course), *cmd, home=tmp_path / "h")
        assert out.returncode == 1, cmd
        assert "属性写错了" in out.stdout and "timeout=5" in out.stdout, cmd
        assert "✅" not in out.stdout


def test_timeouts_must_be_finite_and_bounded(tmp_path):
    course = make_course(tmp_path / "c", chapter(*(
        f"""
        ```python {{#t{i} timeout={v}}}
        print(1)
        ```

        ```output
        1
        ```
        """ for i, v in enumerate(["nan", "inf", "0", "-3", "601"]))))
    check = tc("--content", str(course), "check", home=tmp_path / "h")
    text = check.stdout + check.stderr
    for v in ["nan", "inf", "0", "-3", "601"]:
        assert f"needs a number of seconds above 0 and at most 600, got '{v}'" in text, v
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert last_line(out.stdout) == "0 passed, 5 failed, 0 skipped"
