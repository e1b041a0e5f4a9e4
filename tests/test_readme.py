"""README promises that can go stale: the screen picture, the command list, the set-up commands."""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")

sys.path.insert(0, str(REPO / "docs"))
import capture  # noqa: E402


def _setup_section() -> str:
    return README.split("## 安装和启动 / Set-up", 1)[1].split("\n## ", 1)[0]


def _setup_blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)\n```", _setup_section(), re.S)]


def test_the_readme_opens_with_the_set_up_a_newcomer_pastes():
    """The first code block of the README is the set-up, in the order to run: clone, a virtual
    environment, the CPU wheel of torch, and only then the install that would pull CUDA."""
    first = re.search(r"```(\w*)\n(.*?)\n```", README, re.S)
    assert first.group(1) == "bash" and first.group(2).strip() == _setup_blocks()[0]
    lines = first.group(2).strip().splitlines()
    assert lines[0].startswith("git clone ") and "cd torchcourse" in lines[0]
    assert "-m venv .venv" in lines[1] and ". .venv/bin/activate" in lines[1]
    assert lines[2] == "pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0"
    assert lines[3] == "pip install . && torchcourse" and len(lines) == 4
    assert README.index(first.group(0)) < README.index("*In English")  # Chinese first, the English summary after


def test_exactly_two_setup_commands_and_ci_runs_the_test_one():
    blocks = _setup_blocks()
    assert len(blocks) == 2, blocks
    install, test = blocks
    assert install.splitlines()[-1] == "pip install . && torchcourse"
    assert "\n" not in test and test == 'pip install ".[test]" && python -m pytest'
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci.splitlines(), f".ci/run does not run the README's test command {test!r}"


def test_the_readme_stays_short_and_links_the_developer_docs():
    assert len(README.splitlines()) < 150
    for doc in ("docs/development.md", "docs/performance.md", "content/README.md"):
        assert f"]({doc})" in README and (REPO / doc).is_file(), doc
    assert "Issue 24" not in README and not re.search(r"\b(first|second|third) round\b", README)  # the history of measurements is not here
    perf = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    assert perf.count("\n|---") == 1, "docs/performance.md keeps one table of current figures"


def test_every_cli_command_is_documented():
    from torchcourse.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in sub.choices:
        assert f"`torchcourse {name}" in README, f"README's command table lacks `torchcourse {name}`"


def test_readme_screen_capture_is_current():
    shown = capture.readme_block(README)
    assert shown is not None, "README.md lost its <!-- screen:home --> block"
    assert shown == capture.capture_home(), "README's home-screen picture is stale: run `python docs/capture.py`"


def test_setup_says_the_exact_pin_still_brings_cuda_and_gives_the_cpu_index():
    setup = _setup_section()
    assert "a looser pin pulls a multi-GB CUDA build" not in setup  # the pin alone does not avoid CUDA
    assert "CUDA" in setup and "nvidia" in setup and "第 3 行必须在第 4 行之前" in setup
    assert "pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0" in setup


def test_readme_says_the_runner_is_not_a_sandbox():
    section = README.split("### What the runner contains", 1)
    assert len(section) == 2, "README lost the section on what the runner does not contain"
    text = section[1].split("\n## ", 1)[0]
    assert "not a\nsandbox" in text or "not a sandbox" in text
    assert "HOME" in text and "TMPDIR" in text and "outside its run directory stay" in text
